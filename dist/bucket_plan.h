// Gradient buckets: contiguous slices of the gradient arena (Note [Gradient arena] in
// nn/graph.h), so fusing tensors into one collective copies nothing.
//
// Note [Bucket order]
// Parameters are listed in arena order, which is the order their gradients become final. A
// bucket is a run of consecutive parameters; it is launched when all of its parameters are ready
// AND every earlier bucket has been launched. Every rank has the same arena, hence the same plan
// and the same launch order, so no negotiation between ranks is needed (Horovod negotiates only
// because its ranks may produce tensors in different orders).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rt {

struct ParamExtent {
  int64_t offset = 0;  // floats from the arena start
  int64_t count = 0;
};

struct Bucket {
  int64_t offset = 0;                     // first float of the first parameter
  int64_t count = 0;                      // up to the last float of the last parameter (alignment gaps included)
  size_t first_param = 0, end_param = 0;  // [first, end) in arena order
};

// The first and the last buckets hold up to `first_cap_floats`: the first so that communication
// starts early, the last (the gradients backward finishes with, which nothing can overlap) so that
// little is left to do after backward. The others close at `cap_floats`. A parameter larger than
// its cap gets a bucket of its own. cap_floats == 0: one bucket per parameter (no fusion).
std::vector<Bucket> plan_buckets(const std::vector<ParamExtent>& params, int64_t first_cap_floats, int64_t cap_floats);

}  // namespace rt
