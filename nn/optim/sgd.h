// SGD with momentum, optional Nesterov and weight decay, as torch.optim.SGD (dampening 0).
// Momentum lives in a third arena with the parameter arena's offsets (Note [Gradient arena]).
#pragma once

#include "nn/graph.h"

namespace rt {

struct SgdOptions {
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0;
  bool decay_bias_and_bn = false;  // false: biases and norm scales/shifts get no weight decay
};

class Sgd {
 public:
  Sgd(Graph& graph, SgdOptions options);
  // One update of every parameter from the gradient arena, its gradients multiplied by
  // grad_scale first (1 / the loss scale, under fp16).
  void step(double lr, double grad_scale = 1) { step_range(lr, 0, graph_.arena_floats(), grad_scale); }
  // The same update, of the arena floats [begin, end) only (parts of parameters included): what
  // one rank applies to its share under Note [Sharded update].
  void step_range(double lr, int64_t begin, int64_t end, double grad_scale = 1);
  // All momentum, at the parameter arena's offsets.
  float* momentum_arena() { return momentum_.data(); }
  // The momentum buffer of parameter i (plain, its parameter's shape).
  Tensor& momentum(size_t i) { return momentum_views_[i]; }
  void zero_momentum() { momentum_.zero(); }

 private:
  Graph& graph_;
  SgdOptions options_;
  Tensor momentum_;                     // arena_floats
  std::vector<Tensor> momentum_views_;  // per parameter
};

}  // namespace rt
