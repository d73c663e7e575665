// The run's shape: images a step takes on one rank (its K = train.accumulate_steps micro-batches,
// Note [Gradient accumulation] in app/train_step.cpp) and on all `ranks`, the global batch every
// rate is scaled by.
//
// Note [Fixed global batch]: a recipe (its rate, warm-up, LARS, MLPerf's epochs) is a recipe for
// one global batch, and a job that loses a host and goes on with fewer ranks must not silently
// train another. With train.global_batch = G, every start divides G among its P ranks (each takes
// S = G / P images a step, refused where P does not divide G) and derives the micro-batches: the
// fewest K dividing S whose micro-batch S / K fits train.batch_per_rank, the most a rank holds at
// once. The step is then the same average of G images at any P, to summation-order rounding, and
// so is the schedule, counted in steps of G images.
#pragma once

#include <cstdint>
#include <string>

#include "config/config.h"

namespace rt {

inline int64_t rank_batch(const TrainConfig& t) { return t.batch_per_rank * t.accumulate_steps; }
inline int64_t global_batch(const TrainConfig& t, int64_t ranks) { return rank_batch(t) * ranks; }

// `config` with batch_per_rank and accumulate_steps derived for `ranks` where train.global_batch is
// set (as it is, otherwise); an rt::Error naming the key where it cannot be met exactly.
Config fit_global_batch(Config config, int64_t ranks);
// "train.global_batch 64 = 2 ranks x 2 micro-batches of 16", or "" where the key is not set.
std::string describe_global_batch(const TrainConfig& train, int64_t ranks);

}  // namespace rt
