// The static graph: a DAG of named layers over one batch input, planned once for a batch size and
// device, then run forward and backward many times without allocating.
//
// Note [Gradient arena]: all parameters live in one contiguous arena, all gradients in a second
// with the same offsets, laid out in backward order: the first parameter whose gradient becomes
// final during backward sits at offset 0. A gradient bucket is therefore a slice of the arena
// (no fusion copy), and the grad-ready callback fires in increasing offset order.
//
// Note [Frozen layers]: a fine-tune freezes layers by name before plan (Graph::freeze). Their
// parameters go after every trainable one, so the trainable parameters are a prefix of the arena and
// the gradient arena is only that prefix (grad_floats): what the ring averages, clips and updates.
// A frozen layer's weight gradients are never computed, and a layer runs backward only where it
// has trainable parameters or one of its inputs wants a gradient: nothing below the lowest
// trainable layer. Batch norm in a frozen layer normalises with its running statistics and leaves
// them as they are (torchvision's fine-tuning recipes), unless told to keep training them.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "nn/layer.h"

namespace rt {

struct ParamRef {
  std::string name;  // torchvision-style: "layer1.0.conv1.weight"
  ParamRole role = ParamRole::kWeight;
  Init init;
  Tensor value;        // plain view into the parameter arena
  Tensor grad;         // plain view into the gradient arena, same offset; empty where frozen
  int64_t offset = 0;  // in floats from the arena start
  bool trainable = true;
  double lr_scale = 1;  // the optimizer's rate for it is the step's times this (a fine-tune's new head)
};

struct BufferRef {
  std::string name;  // "bn1.running_mean"
  Tensor value;
  bool frozen = false;  // a frozen batch norm's running statistics: no step changes them
};

struct CounterRef {
  std::string name;  // "bn1.num_batches_tracked"
  int64_t* value = nullptr;
};

// One row of Graph::layer_table(): a layer node after plan().
struct LayerRow {
  std::string name, kind;
  Shape output;                    // logical output shape at the planned batch
  int64_t params = 0;              // parameters of this layer
  int64_t macs = 0;                // forward multiply-adds per image (Layer::multiply_adds)
  std::string algorithm;           // Layer::algorithm(): "direct" / "winograd" for convolutions,
                                   // "in batch norm" for a ReLU it applies
  int cudnn_graph_directions = 0;  // Layer::cudnn_graph_directions()
};

// Called with an index into params() as soon as that gradient is final. See Note [Gradient arena].
using GradReadyFn = std::function<void(size_t param_index)>;

// Whether `name` is `prefix` or lies below it, a whole name component at a time: "layer1" covers
// "layer1.0.conv1", not "layer10" (Graph::freeze, the fine-tune's head and finetune.partial).
inline bool name_under(const std::string& name, const std::string& prefix) {
  return name.compare(0, prefix.size(), prefix) == 0 && (name.size() == prefix.size() || name[prefix.size()] == '.');
}

class Graph {
 public:
  // sample_shape: one input sample, e.g. (1, 28, 28); the batch input is plain (N, ...).
  explicit Graph(Shape sample_shape);
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  int input() const { return 0; }
  // Adds a layer reading the outputs of `inputs`; returns its node id. The last node added is the
  // graph's main output (output 0). Names are torchvision's module paths ("layer1.0.conv1").
  int add(std::string name, std::unique_ptr<Layer> layer, std::vector<int> inputs);
  template <typename L>
  int add(std::string name, L layer, std::vector<int> inputs) {
    return add(std::move(name), std::unique_ptr<Layer>(new L(std::move(layer))), std::move(inputs));
  }

  // Before plan (Note [Frozen layers]), freezes every layer whose name is one of `prefixes` or lies
  // below one ("layer1" covers "layer1.0.conv1", not "layer10"); a prefix naming no layer is an
  // error listing the model's top-level names. Batch norm in them keeps its running statistics
  // unless `statistics_training`. May be called once.
  void freeze(const std::vector<std::string>& prefixes, bool statistics_training = false);
  // The first name components of the layers, in graph order ("conv1", "bn1", ..., "fc").
  std::vector<std::string> top_level_names() const;
  // The layers with parameters whose output is a graph output: the classifier (ResNet's fc,
  // Inception-v3's fc and AuxLogits.fc, VGG's classifier.6).
  std::vector<std::string> head_layers() const;

  // Declares `node` a further output (Inception-v3's auxiliary classifier): it must have no
  // consumers, and its loss enters a training step's total weighted by `loss_weight`.
  void add_output(int node, double loss_weight);

  // Infers shapes, plans every op, and allocates arenas, activations and gradients (see
  // Note [Activation memory]). A graph planned with training = false runs eval-mode forward
  // only: no gradients, and activations share memory as soon as their readers are done.
  // context carries run-wide choices to every layer (the convolution algorithm).
  void plan(int64_t batch, Device device, bool training = true, const PlanContext& context = {});
  // Where a training plan() takes its (zeroed) parameter and gradient arenas from: one block of
  // arena_floats() + grad_floats(), parameters first; by default, memory of its own. The distributed trainer
  // passes its collective's, which ring neighbours can read in place.
  using ArenaMemory = std::function<std::shared_ptr<float>(int64_t floats)>;
  void take_arenas_from(ArenaMemory memory) { arena_memory_ = std::move(memory); }
  // Deterministic initialisation: parameter p draws from (seed, hash of p's name), so adding a
  // layer does not change the others' initial values. Buffers get their fill values.
  void init_parameters(uint64_t seed);

  // images: plain (N, ...) floats in `images_on`'s memory. Computes every output; returns the main
  // one. The same as set_input, begin_forward and forward_work in turn.
  const Tensor& forward(const float* images, const RunContext& ctx, Device images_on = Device::kCpu);
  // The parts of forward (Note [CUDA graph steps] in nn/device.h): copying the batch in, what every
  // layer's forward changes outside its device work (Layer::begin_forward), and that device work
  // alone, the same calls at every step, so it may be recorded once and replayed.
  void set_input(const float* images, Device images_on);
  void begin_forward(const RunContext& ctx);
  const Tensor& forward_work(const RunContext& ctx);
  // douts[k]: gradient of the loss with respect to output k, one per output. Writes every
  // parameter gradient. Device work only, but for the grad-ready callback and profiling.
  void backward(std::span<const Tensor* const> douts, const RunContext& ctx);
  // For a graph with one output.
  void backward(const Tensor& dout, const RunContext& ctx);
  void on_grad_ready(GradReadyFn fn) { grad_ready_ = std::move(fn); }
  // Profiling (`ringtrain bench --profile`): while `seconds` is set, backward waits for the
  // device around every layer and adds each layer's backward time to (*seconds)[row], row as in
  // layer_table(), and the host's time issuing that layer's work, up to the wait, to
  // (*host_seconds)[row] (the device's queue is empty when each layer starts, so that is the
  // host's own cost). Off (null) by default: the waits would cost a GPU its queue.
  void time_backward_layers(std::vector<double>* seconds, std::vector<double>* host_seconds) {
    layer_seconds_ = seconds;
    layer_host_seconds_ = host_seconds;
  }

  std::vector<ParamRef>& params() { return params_; }
  const std::vector<ParamRef>& params() const { return params_; }
  const std::vector<BufferRef>& buffers() const { return buffers_; }
  const std::vector<CounterRef>& counters() const { return counters_; }
  float* param_arena() { return param_arena_.data(); }
  float* grad_arena() { return grad_arena_.data(); }
  int64_t arena_floats() const { return arena_floats_; }
  // The trainable parameters' prefix of the arena, and the gradient arena's length (Note [Frozen
  // layers]); arena_floats() where nothing is frozen.
  int64_t grad_floats() const { return grad_floats_; }
  // params()[0, trainable_count()) are the trainable ones, in backward order.
  size_t trainable_count() const { return trainable_count_; }
  std::span<ParamRef> trainable_params() { return {params_.data(), trainable_count_}; }
  std::span<const ParamRef> trainable_params() const { return {params_.data(), trainable_count_}; }
  // What arena_floats() and grad_floats() will be once planned (before plan: to size a
  // collective's memory).
  int64_t arena_floats_to_plan() const;
  int64_t grad_floats_to_plan() const;
  int64_t parameter_count() const;  // real parameters, without alignment padding
  int64_t batch() const { return batch_; }
  size_t activation_bytes() const { return activation_arena_.bytes(); }  // outputs and their gradients
  Device device() const { return device_; }
  size_t output_count() const { return outputs_.size() + 1; }
  // Output k (0: the main one, the last node) after forward(), and its loss weight (1 for k = 0).
  const Tensor& output(size_t k = 0) const { return nodes_[output_node(k)].y; }
  const TensorSpec& output_spec(size_t k = 0) const { return output(k).spec(); }
  double output_loss_weight(size_t k) const { return k == 0 ? 1.0 : outputs_.at(k - 1).loss_weight; }
  // Every layer node in order (the input excluded); needs plan().
  std::vector<LayerRow> layer_table() const;
  // layer_table() as text, with each output's layout, and the totals.
  std::string summary() const;

 private:
  struct Node {
    std::string name;
    std::unique_ptr<Layer> layer;  // null for the input
    std::vector<int> inputs;
    int consumers = 0;
    bool frozen = false;         // Graph::freeze named it
    bool runs_backward = false;  // training, and it has trainable parameters or an input wanting a gradient
    std::vector<size_t> params;  // its parameters' indices in params_
    Tensor y, dy, dy_extra;      // output, its gradient, and a second buffer when consumers > 1
    bool dy_shared = false;      // dy is its only consumer's own dy, which passes it through (add)
    // What forward and backward hand the layer, fixed by the graph's shape (plan_calls).
    std::vector<const Tensor*> x;  // its inputs' outputs
    std::vector<Tensor*> dx;       // where its backward writes each input's gradient; null: none wanted
    std::vector<int> add_extra;    // inputs whose dy_extra its backward wrote, to add into their dy
    int output = -1;               // >= 0: backward starts from the gradient of graph output k
    bool zero_dy = false;          // consumed by nothing and no output: zero gradients flow back
  };

  struct ExtraOutput {
    int node;
    double loss_weight;
  };
  size_t output_node(size_t k) const {
    return k == 0 ? nodes_.size() - 1 : static_cast<size_t>(outputs_.at(k - 1).node);
  }

  void allocate_activations(const std::vector<TensorSpec>& y_specs);
  void mark_backward();
  void hand_relus_to_batch_norm(const PlanContext& context);
  void plan_calls();

  std::vector<Node> nodes_;
  std::vector<ExtraOutput> outputs_;  // beyond the main output
  std::vector<ParamRef> params_;
  std::vector<BufferRef> buffers_;
  std::vector<CounterRef> counters_;
  Tensor param_arena_, grad_arena_, activation_arena_;
  ArenaMemory arena_memory_;
  int64_t arena_floats_ = 0;
  int64_t grad_floats_ = 0;
  size_t trainable_count_ = 0;
  bool frozen_statistics_training_ = false;
  int64_t batch_ = 0;
  Device device_ = Device::kCpu;
  bool planned_ = false;
  bool training_ = true;
  GradReadyFn grad_ready_;
  std::vector<double>* layer_seconds_ = nullptr;
  std::vector<double>* layer_host_seconds_ = nullptr;
};

}  // namespace rt
