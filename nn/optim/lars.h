// Note [LARS]: You et al. 2017's layer-wise rate, as MLPerf's ResNet-50 reference applies it
// (its LARS optimizer, TensorFlow). Each weight tensor's step is scaled by its trust ratio
//   trust = eta ||w|| / (||g|| + wd ||w|| + epsilon)   (1 where ||w|| or ||g|| is 0),
// the norms over the whole tensor, g the true (unscaled, clipped) averaged gradient; then
//   v = m v + lr trust (g + wd w);  w -= v,
// the rate inside the momentum buffer. Biases and batch-norm parameters take no ratio and (unless
// decay_bias_and_bn) no decay: v = m v + lr g. The norms are sums of Note [Agreed reductions], so
// every rank computes the same ratios; under the sharded update they are summed in pieces across
// ranks (Note [Norms across shards] in shard_norms.h).
#pragma once

#include <vector>

#include "nn/optim/sgd.h"
#include "nn/optim/shard_norms.h"

namespace rt {

struct LarsOptions {
  double trust = 0.001;  // eta
  double epsilon = 0;
};

class Lars : public Sgd {
 public:
  Lars(Graph& graph, SgdOptions sgd, LarsOptions lars);
  std::string name() const override { return "LARS"; }
  // Whole parameters only: a range that cuts one is refused.
  void update(double lr, int64_t begin, int64_t end, double grad_scale = 1) override;
  bool needs_whole_tensors() const override { return true; }
  // Each piece's square sum by its owner, one sum_over_ranks of all of them, then this rank's part
  // at the ratios they give (Note [Norms across shards]).
  void update_part(double lr, int64_t begin, int64_t end, int64_t own_begin, int64_t own_end,
                   const SumOverRanks& sum_over_ranks) override;
  void set_part_cuts(std::vector<int64_t> cuts) override { norms_.set_cuts(std::move(cuts)); }
  std::vector<NormPiece> norm_pieces(int64_t begin, int64_t end) const { return norms_.pieces(begin, end); }

 private:
  // The ratio of parameter i at this step, its gradient's squared norm summed here, or taken from
  // grad_squares (per parameter).
  double trust_ratio(size_t i, double grad_scale, const std::vector<double>* grad_squares) const;
  double rate(size_t i, double lr, double grad_scale, const std::vector<double>* grad_squares) const;

  LarsOptions lars_;
  ShardNorms norms_;
};

}  // namespace rt
