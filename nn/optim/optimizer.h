// Note [Optimizer seam]: what the trainer, the sharded update, checkpoints and the replica check
// need of an optimizer, and nothing of which one it is. An optimizer updates a range of the
// parameter arena from the gradient arena at a rate, keeps its state in arenas with the parameter
// arena's offsets (Note [Gradient arena]), and says whether it needs whole tensors (norms, as LARS):
// then a rank that owns only part of the arena updates through update_part, which sums the norms
// across ranks. SGD (sgd.h) and LARS (lars.h) are one file each; another optimizer is a file, an
// OptimizerKind value and a line of make_optimizer (optimizer.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/run_settings.h"
#include "nn/graph.h"

namespace rt {

// Adds a vector across the ranks of a sharded update, in place (a collective).
using SumOverRanks = std::function<void(std::vector<double>&)>;

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  // "SGD", "LARS": for messages (train.optimizer's value, in capitals).
  virtual std::string name() const = 0;
  // One update of the arena floats [begin, end) (parts of parameters included, unless
  // needs_whole_tensors) at rate lr, the gradients multiplied by grad_scale first (1 / the loss
  // scale, under fp16).
  virtual void update(double lr, int64_t begin, int64_t end, double grad_scale = 1) = 0;
  void step(double lr, double grad_scale = 1) { update(lr, 0, graph_.grad_floats(), grad_scale); }
  // Whether an update needs each tensor's whole gradient (its norm): update then takes whole
  // parameters only, and a rank owning part of the arena calls update_part.
  virtual bool needs_whole_tensors() const { return false; }
  // This rank's part [own_begin, own_end) of the averaged arena floats [begin, end), which hold
  // whole parameters; sum_over_ranks is called once, with every rank calling update_part for every
  // such range in the same order (an empty part included), where the update needs it.
  virtual void update_part(double lr, int64_t begin, int64_t end, int64_t own_begin, int64_t own_end,
                           const SumOverRanks& sum_over_ranks);
  // Arena offsets, ascending, where one rank's part of the arena meets the next's (Note [Norms
  // across shards]); an optimizer without norms ignores them.
  virtual void set_part_cuts(std::vector<int64_t> cuts) { (void)cuts; }

  // The state: arenas of grad_floats floats each (the trainable parameters'), at the parameter
  // arena's offsets; state(k, i) for the trainable parameters i only.
  size_t state_count() const { return states_.size(); }
  const std::string& state_name(size_t k) const { return states_[k].name; }
  float* state_arena(size_t k) { return states_[k].arena.data(); }
  // State k of parameter i (plain, its parameter's shape).
  Tensor& state(size_t k, size_t i) { return states_[k].views[i]; }

 protected:
  explicit Optimizer(Graph& graph) : graph_(graph) {}
  // Adds a state arena (zero) named `name` ("momentum"), with a view per parameter.
  void add_state(const std::string& name);

  Graph& graph_;

 private:
  struct State {
    std::string name;
    Tensor arena;
    std::vector<Tensor> views;
  };
  std::vector<State> states_;
};

// What the optimizers of make_optimizer read: train.* as the config gives them.
struct OptimizerOptions {
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0;
  bool decay_bias_and_bn = false;  // false: biases and norm scales/shifts get no weight decay
  double trust = 0.001;            // LARS's eta
  double lars_epsilon = 0;
};

std::unique_ptr<Optimizer> make_optimizer(OptimizerKind kind, Graph& graph, const OptimizerOptions& options);
// What make_optimizer's optimizer does with `options`, in words, after train.optimizer's own name:
// "lars (trust coefficient 0.001, epsilon 0), momentum 0.9, weight decay 5e-05 (biases and batch
// norm: neither trust ratio nor decay)".
std::string describe_optimizer(OptimizerKind kind, const OptimizerOptions& options);

}  // namespace rt
