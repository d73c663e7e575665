// SGD with momentum, optional Nesterov and weight decay, as torch.optim.SGD (dampening 0), or
// LARS (Note [LARS]). Momentum lives in a third arena with the parameter arena's offsets (Note
// [Gradient arena]).
#pragma once

#include <functional>
#include <vector>

#include "nn/graph.h"

namespace rt {

// Note [LARS]: You et al. 2017's layer-wise rate, as MLPerf's ResNet-50 reference applies it
// (its LARS optimizer, TensorFlow). Each weight tensor's step is scaled by its trust ratio
//   trust = eta ||w|| / (||g|| + wd ||w|| + epsilon)   (1 where ||w|| or ||g|| is 0),
// the norms over the whole tensor, g the true (unscaled, clipped) averaged gradient; then
//   v = m v + lr trust (g + wd w);  w -= v,
// the rate inside the momentum buffer. Biases and batch-norm parameters take no ratio and (unless
// decay_bias_and_bn) no decay: v = m v + lr g. The norms are sums of Note [Agreed reductions], so
// every rank computes the same ratios.
//
// Note [Norms across shards]: under the sharded update (Note [Sharded update]) a rank holds the
// averaged gradient of its own part of the arena only, and a weight may straddle two ranks' parts.
// So each norm is summed in pieces: the tensor cut where the collective's parts meet
// (set_norm_cuts), each piece an agreed reduction of its own, the pieces added in arena order.
// The owner of each piece computes its square sum; one sum across ranks, in which every piece
// has one non-zero term and so comes out exact in any order, gives every rank all of them
// (step_shard). The whole update sums the same pieces itself, so both paths take the same
// ratios and end bit for bit alike. Without cuts (one rank, the GPU) a piece is a whole tensor.
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

// Arena floats [begin, end) of LARS weight `param`: what one square sum covers.
struct NormPiece {
  size_t param = 0;
  int64_t begin = 0, end = 0;
};

class Sgd {
 public:
  Sgd(Graph& graph, SgdOptions options);
  // One update of every parameter from the gradient arena, its gradients multiplied by
  // grad_scale first (1 / the loss scale, under fp16).
  void step(double lr, double grad_scale = 1) { step_range(lr, 0, graph_.arena_floats(), grad_scale); }
  // The same update, of the arena floats [begin, end) only (parts of parameters included): what
  // one rank applies to its share under Note [Sharded update]. Under LARS, whole parameters only,
  // unless grad_squares (per parameter, as step_shard makes it) gives each one's gradient norm.
  void step_range(double lr, int64_t begin, int64_t end, double grad_scale = 1,
                  const std::vector<double>* grad_squares = nullptr);
  // Note [Norms across shards]: the update of this rank's part [own_begin, own_end) of the
  // averaged arena floats [begin, end), which hold whole parameters. Under LARS, sum_over_ranks
  // adds a vector across the ranks (a collective: every rank calls step_shard for every such
  // range, in the same order, even with an empty part of its own).
  void step_shard(double lr, int64_t begin, int64_t end, int64_t own_begin, int64_t own_end,
                  const std::function<void(std::vector<double>&)>& sum_over_ranks);
  // Arena offsets, ascending, where one rank's part of the sharded update meets the next's.
  void set_norm_cuts(std::vector<int64_t> cuts) { cuts_ = std::move(cuts); }
  // The LARS weights overlapping [begin, end), cut at the norm cuts, in arena order.
  std::vector<NormPiece> norm_pieces(int64_t begin, int64_t end) const;
  // All momentum, at the parameter arena's offsets.
  float* momentum_arena() { return momentum_.data(); }
  // The momentum buffer of parameter i (plain, its parameter's shape).
  Tensor& momentum(size_t i) { return momentum_views_[i]; }
  void zero_momentum() { momentum_.zero(); }
  const SgdOptions& options() const { return options_; }

 private:
  // Note [LARS]: the ratio of parameter p (number i) at this step, its gradient's squared norm
  // summed here, or taken from grad_squares.
  double trust_ratio(size_t i, double grad_scale, const std::vector<double>* grad_squares) const;
  // Note [Norms across shards]: the sum of squares of arena[p.begin, p.end), and of a parameter's
  // pieces in order.
  double squares(const float* arena, const NormPiece& p) const;
  double squares_in_pieces(const float* arena, size_t param) const;

  Graph& graph_;
  SgdOptions options_;
  Tensor momentum_;                     // arena_floats
  std::vector<Tensor> momentum_views_;  // per parameter
  std::vector<int64_t> cuts_;
};

}  // namespace rt
