#include "nn/optim/shard_norms.h"

#include <algorithm>

#include "nn/ops/agreed_reductions.h"

namespace rt {

std::vector<NormPiece> ShardNorms::pieces(int64_t begin, int64_t end) const {
  std::vector<NormPiece> out;
  const std::vector<ParamRef>& params = graph_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamRef& p = params[i];
    int64_t lo = std::max(begin, p.offset);
    const int64_t hi = std::min(end, p.offset + p.value.numel());
    if (p.role != ParamRole::kWeight || lo >= hi) continue;
    for (auto cut = std::upper_bound(cuts_.begin(), cuts_.end(), lo); cut != cuts_.end() && *cut < hi; ++cut)
      out.push_back({i, lo, *cut}), lo = *cut;
    out.push_back({i, lo, hi});
  }
  return out;
}

double ShardNorms::squares(const float* arena, const NormPiece& p) const {
  return sum_of_squares(graph_.device(), arena + p.begin, p.end - p.begin);
}

double ShardNorms::squares_in_pieces(const float* arena, size_t param) const {
  const ParamRef& p = graph_.params()[param];
  double sum = 0;
  for (const NormPiece& piece : pieces(p.offset, p.offset + p.value.numel())) sum += squares(arena, piece);
  return sum;
}

}  // namespace rt
