// The learning-rate schedule in this run's steps (schedule.* over its steps per epoch and global
// batch), and the rate of the step under way.
#pragma once

#include <cstdint>

#include "app/trainer_data.h"
#include "config/batch_shape.h"
#include "config/config.h"
#include "dist/world.h"
#include "nn/optim/lr_schedule.h"

namespace rt {

struct TrainingSchedule {
  LrSchedule rates;
  int64_t steps_per_epoch = 0;  // synthetic data (bench): its steps, as one epoch
  double lr = 0;                // the step under way's (a sharded update reads it during the step)
};

TrainingSchedule plan_schedule(const Config& config, const World& world, const TrainerData& data);

}  // namespace rt
