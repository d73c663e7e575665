// Note [Norms across shards]: under the sharded update (Note [Sharded update]) a rank holds the
// averaged gradient of its own part of the arena only, and a weight may straddle two ranks' parts.
// So each norm is summed in pieces: the tensor cut where the collective's parts meet (set_cuts),
// each piece an agreed reduction of its own (Note [Agreed reductions]), the pieces added in arena
// order. The owner of each piece computes its square sum; one sum across ranks, in which every
// piece has one non-zero term and so comes out exact in any order, gives every rank all of them
// (Lars::update_part). The whole update sums the same pieces itself, so both paths take the same
// norms and end bit for bit alike. Without cuts (one rank, or a collective that does not shard) a piece is a whole tensor.
#pragma once

#include <cstdint>
#include <vector>

#include "nn/graph.h"

namespace rt {

// Arena floats [begin, end) of weight `param`: what one square sum covers.
struct NormPiece {
  size_t param = 0;
  int64_t begin = 0, end = 0;
};

class ShardNorms {
 public:
  explicit ShardNorms(const Graph& graph) : graph_(graph) {}
  // Arena offsets, ascending, where one rank's part meets the next's.
  void set_cuts(std::vector<int64_t> cuts) { cuts_ = std::move(cuts); }
  // The weights (ParamRole::kWeight) overlapping [begin, end), cut at the cuts, in arena order.
  std::vector<NormPiece> pieces(int64_t begin, int64_t end) const;
  // The sum of squares of arena[p.begin, p.end); of parameter `param`'s pieces, in order.
  double squares(const float* arena, const NormPiece& p) const;
  double squares_in_pieces(const float* arena, size_t param) const;

 private:
  const Graph& graph_;
  std::vector<int64_t> cuts_;
};

}  // namespace rt
