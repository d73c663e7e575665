// The learning-rate schedule in this run's steps (schedule.* over its steps per epoch and global
// batch), and the rate of the step under way.
#pragma once

#include <cstdint>

#include "app/trainer_data.h"
#include "config/config.h"
#include "dist/world.h"
#include "nn/optim/lr_schedule.h"

namespace rt {

// The run's shape: images a step takes on one rank (its K = train.accumulate_steps micro-batches,
// Note [Gradient accumulation]) and on all `ranks`, the global batch every rate is scaled by.
inline int64_t rank_batch(const TrainConfig& t) { return t.batch_per_rank * t.accumulate_steps; }
inline int64_t global_batch(const TrainConfig& t, int64_t ranks) { return rank_batch(t) * ranks; }

struct TrainingSchedule {
  LrSchedule rates;
  int64_t steps_per_epoch = 0;  // synthetic data (bench): its steps, as one epoch
  double lr = 0;                // the step under way's (a sharded update reads it during the step)
};

TrainingSchedule plan_schedule(const Config& config, const World& world, const TrainerData& data);

}  // namespace rt
