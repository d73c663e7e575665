#include "app/training_schedule.h"

#include <cmath>

namespace rt {

TrainingSchedule plan_schedule(const Config& config, const World& world, const TrainerData& data) {
  const TrainConfig& t = config.train;
  TrainingSchedule plan;
  if (data.synthetic) {
    // The schedule spans the benchmark's steps as if they were one epoch.
    const BenchConfig& b = config.bench;
    plan.steps_per_epoch = b.warmup_steps + b.windows * b.steps_per_window;
  } else {
    plan.steps_per_epoch = training_sampler(config, world, data.train->count()).steps_per_epoch();
  }
  const ScheduleConfig& s = config.schedule;
  const auto in_steps = [&plan](double epochs) {
    return static_cast<int64_t>(std::llround(epochs * static_cast<double>(plan.steps_per_epoch)));
  };
  LrSchedule& r = plan.rates;
  r.kind = s.kind;
  r.base = base_lr(t.lr, t.lr_per_256, global_batch(t, world.size()));
  r.warmup_steps = in_steps(s.warmup_epochs);
  for (double m : s.milestones) r.milestones.push_back(in_steps(m));
  r.factor = s.factor;
  r.final_fraction = s.end_lr > 0 ? s.end_lr / r.base : s.final_fraction;
  r.power = s.power;
  // The decay's own length where given, else to the end of train.epochs (its cap).
  const int64_t decay = s.decay_steps > 0 ? s.decay_steps : in_steps(s.decay_epochs);
  r.total_steps = decay > 0 ? r.warmup_steps + decay : plan.steps_per_epoch * t.epochs;
  return plan;
}

}  // namespace rt
