// train.bn_group > 1 (Note [Group batch norm] in nn/layers/group_batch_norm.h): this rank's
// statistics group (over MPI on the CPU, NCCL on the GPU) and the BatchNormGroup through which the
// training graph's batch-norm layers average.
#pragma once

#include <memory>

#include "config/config.h"
#include "dist/statistics_group.h"
#include "dist/world.h"
#include "nn/layers/group_batch_norm.h"

namespace rt {

struct RankBnGroup {
  std::unique_ptr<StatisticsGroup> statistics;
  BatchNormGroup group;
};

// Fills `out` for train.bn_group; refused on one rank. Collective; `stall` and `step` (the step
// under way, which a stalled average names) must outlive `out`.
void make_rank_bn_group(RankBnGroup& out, const Config& config, const World& world, const StallPolicy& stall,
                        const int64_t* step);

}  // namespace rt
