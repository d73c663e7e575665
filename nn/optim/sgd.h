// SGD with momentum, optional Nesterov and weight decay, as torch.optim.SGD (dampening 0), or
// LARS (Note [LARS]). Momentum lives in a third arena with the parameter arena's offsets (Note
// [Gradient arena]).
#pragma once

#include "nn/graph.h"

namespace rt {

// Note [LARS]: You et al. 2017's layer-wise rate, as MLPerf's ResNet-50 reference applies it
// (its LARS optimizer, TensorFlow). Each weight tensor's step is scaled by its trust ratio
//   trust = eta ||w|| / (||g|| + wd ||w|| + epsilon)   (1 where ||w|| or ||g|| is 0),
// the norms over the whole tensor, g the true (unscaled, clipped) averaged gradient; then
//   v = m v + lr trust (g + wd w);  w -= v,
// the rate inside the momentum buffer. Biases and batch-norm parameters take no ratio and (unless
// decay_bias_and_bn) no decay: v = m v + lr g. The norms are sums of Note [Agreed reductions], so
// every rank computes the same ratios. They need whole tensors: LARS updates whole parameters
// only (no sharded update).
struct LarsOptions {
  bool on = false;
  double trust = 0.001;  // eta
  double epsilon = 0;
};

struct SgdOptions {
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0;
  bool decay_bias_and_bn = false;  // false: biases and norm scales/shifts get no weight decay
  LarsOptions lars;
};

class Sgd {
 public:
  Sgd(Graph& graph, SgdOptions options);
  // One update of every parameter from the gradient arena, its gradients multiplied by
  // grad_scale first (1 / the loss scale, under fp16).
  void step(double lr, double grad_scale = 1) { step_range(lr, 0, graph_.arena_floats(), grad_scale); }
  // The same update, of the arena floats [begin, end) only (parts of parameters included): what
  // one rank applies to its share under Note [Sharded update]. Under LARS, whole parameters only.
  void step_range(double lr, int64_t begin, int64_t end, double grad_scale = 1);
  // All momentum, at the parameter arena's offsets.
  float* momentum_arena() { return momentum_.data(); }
  // The momentum buffer of parameter i (plain, its parameter's shape).
  Tensor& momentum(size_t i) { return momentum_views_[i]; }
  void zero_momentum() { momentum_.zero(); }
  const SgdOptions& options() const { return options_; }

 private:
  // Note [LARS]: the ratio of parameter p at this step.
  double trust_ratio(const ParamRef& p, double grad_scale) const;

  Graph& graph_;
  SgdOptions options_;
  Tensor momentum_;                     // arena_floats
  std::vector<Tensor> momentum_views_;  // per parameter
};

}  // namespace rt
