// A layer of the static graph: declares its parameters and buffers, plans its ops once for its
// input specs, then runs forward and backward on tensors of exactly those specs.
// Parameters, gradients and buffers are views the graph binds into its arenas before plan().
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "nn/plan_context.h"
#include "nn/tensor.h"

namespace rt {

// What a parameter is for: the optimizer exempts biases and norm parameters from weight decay
// when asked to, and initialisation differs per role.
enum class ParamRole { kWeight, kBias, kNormScale, kNormShift };

struct Init {
  enum class Kind { kConstant, kUniform, kNormal } kind = Kind::kConstant;
  double a = 0;  // constant value, uniform bound (+-a) or normal standard deviation
};

struct ParamSpec {
  std::string name;  // suffix after the layer's name: "weight", "bias"
  Shape shape;       // plain, as PyTorch: conv (K, C/g, R, S), linear (O, I)
  ParamRole role = ParamRole::kWeight;
  Init init;
};

struct BufferSpec {
  std::string name;  // "running_mean", "running_var"
  Shape shape;
  float fill = 0;
};

struct RunContext {
  bool training = true;
  uint64_t seed = 0;  // randomness in the step (dropout) derives from (seed, step)
  uint64_t step = 0;
};

class Layer {
 public:
  virtual ~Layer() = default;
  virtual std::string_view kind() const = 0;
  virtual std::vector<ParamSpec> param_specs() const { return {}; }
  virtual std::vector<BufferSpec> buffer_specs() const { return {}; }
  // Counters saved with the buffers (batch norm's num_batches_tracked, int64 in PyTorch).
  virtual std::vector<std::pair<std::string, int64_t*>> counters() { return {}; }
  // Multiply-adds of one forward pass per image (one sample of the batch), known after plan().
  // Only convolutions and fully connected layers count, as in torchvision's published figures.
  virtual int64_t multiply_adds() const { return 0; }
  // How the layer computes where it has a choice (convolutions: "direct" or "winograd", known
  // after plan()); empty elsewhere.
  virtual std::string_view algorithm() const { return {}; }
  // Convolutions: how many directions run a plan of cuDNN's graph API (Conv2dOp's).
  virtual int cudnn_graph_directions() const { return 0; }

  // True when forward may write its output over its single input and backward reads only the
  // output and its gradient (ReLU); the graph then gives both one buffer where nothing else
  // reads that input. See Note [Activation memory] in nn/graph.cpp.
  virtual bool runs_in_place() const { return false; }
  // True when backward reads this layer's own output y; an in-place reader may then not overwrite it.
  virtual bool backward_reads_output() const { return false; }
  // True when every input's gradient is the output's gradient itself (add): the graph then lets
  // an input nothing else reads share the output gradient's buffer, and backward gets a null dx
  // for it (nothing to copy). See Note [Activation memory] in nn/graph.cpp.
  virtual bool passes_gradient_through() const { return false; }
  // Note [ReLU in batch norm] in nn/graph.cpp: before plan, the graph may hand a ReLU's work to
  // the layer whose output only that ReLU reads. can_take_relu says whether this layer would
  // apply it to its own output in a plan on `device` with `context`; take_relu makes it do so.
  virtual bool can_take_relu(Device, const PlanContext&) const { return false; }
  virtual void take_relu() {}
  // The ReLU's side: true for a ReLU, which from then on passes its input and gradient through.
  virtual bool give_relu_away() { return false; }
  // False when backward needs none of the inputs' values (add, concat, pooling with its own
  // workspace): the graph may then reuse an input's memory once its forward readers are done.
  virtual bool backward_reads_inputs() const { return true; }

  // Plans ops for these input specs; need_dx[i] says whether input i wants a gradient.
  // Returns the output spec. Called once, after bind().
  TensorSpec plan(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx, const PlanContext& context = {});

  // writes y: begin_forward(ctx), then forward_work(x, y, ctx).
  void forward(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx);
  // What a forward pass changes besides the device work on its tensors: host state (batch norm's
  // num_batches_tracked) and the per-step values that work reads (dropout's step), which a GPU
  // receives through work enqueued now. Split off so that a recorded forward, replayed without
  // calling the layer, still sees the current step (Note [CUDA graph steps] in nn/device.h).
  void begin_forward(const RunContext& ctx) { begin_forward_impl(ctx); }
  // writes y: the layer's device work, the same calls on the same memory at every step of one
  // plan (what host state it sets, such as dropout's training flag, is the same every step too).
  void forward_work(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx);
  // writes dx[i] where non-null, and this layer's parameter gradients.
  void backward(const std::vector<const Tensor*>& x, const Tensor& y, const Tensor& dy, const std::vector<Tensor*>& dx,
                const RunContext& ctx);

  void bind(std::vector<Tensor> params, std::vector<Tensor> grads, std::vector<Tensor> buffers);
  // Note [Frozen layers] in nn/graph.h: before bind, the graph says the parameters are frozen (they
  // come without gradients: none is computed) and, with statistics_too, that running statistics
  // normalise in training steps too and stay as they are.
  void freeze(bool statistics_too) {
    frozen_ = true;
    statistics_frozen_ = statistics_too;
  }

 protected:
  virtual TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx) = 0;
  virtual void begin_forward_impl(const RunContext&) {}
  virtual void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) = 0;
  virtual void backward_impl(const std::vector<const Tensor*>& x, const Tensor& y, const Tensor& dy,
                             const std::vector<Tensor*>& dx, const RunContext& ctx) = 0;
  virtual size_t arity() const { return 1; }                    // number of inputs; 0 = any number >= 1
  const PlanContext& plan_context() const { return context_; }  // valid inside plan_impl
  bool frozen() const { return frozen_; }
  bool statistics_frozen() const { return statistics_frozen_; }

  std::vector<Tensor> params_;   // in param_specs() order
  std::vector<Tensor> grads_;    // same order and shapes
  std::vector<Tensor> buffers_;  // in buffer_specs() order

 private:
  PlanContext context_;
  bool frozen_ = false, statistics_frozen_ = false;
  std::vector<TensorSpec> x_specs_;
  TensorSpec y_spec_;
};

}  // namespace rt
