// The run's shape: images a step takes on one rank (its K = train.accumulate_steps micro-batches,
// Note [Gradient accumulation] in app/train_step.cpp) and on all `ranks`, the global batch every
// rate is scaled by.
#pragma once

#include <cstdint>

#include "config/config.h"

namespace rt {

inline int64_t rank_batch(const TrainConfig& t) { return t.batch_per_rank * t.accumulate_steps; }
inline int64_t global_batch(const TrainConfig& t, int64_t ranks) { return rank_batch(t) * ranks; }

}  // namespace rt
