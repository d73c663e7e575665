// Note [Sharded update] for the trainer's optimizer: each rank updates its own part of every bucket
// on the communication thread as the ring finishes it, and the all-gather shares parameters
// instead of gradients. Built from the optimizer and the collective alone (Note [Optimizer seam]).
#pragma once

#include <optional>
#include <vector>

#include "dist/bucket_plan.h"
#include "dist/collective.h"
#include "dist/world.h"
#include "nn/optim/optimizer.h"

namespace rt {

// Tells the optimizer where the collective's parts of each bucket meet, so that its norms are summed
// in the same pieces whether the update is sharded or not (Note [Norms across shards]).
void cut_at_collective_parts(Optimizer& optimizer, const std::vector<Bucket>& buckets, const Collective& collective);

// The update for GradReducer, or nothing where it cannot be sharded: where every gradient must be
// seen before any parameter moves (`whole_step_first`: clipping's global norm, fp16's overflow
// check) and over a collective that does not shard. On the GPU its kernels run on the
// collective's communication stream. `lr` is read at each update, `step` (the step under way, for
// messages) as it is used. An optimizer that needs whole
// tensors (LARS) notes its part of each bucket as it lands and updates it once the bucket is
// reduced, its norms summed across ranks through `world`, waiting as `stall` says.
std::optional<ShardUpdate> make_sharded_update(Optimizer& optimizer, Graph& graph, const Collective& collective,
                                               bool whole_step_first, const World& world, const StallPolicy& stall,
                                               const double* lr, const int64_t* step);

}  // namespace rt
