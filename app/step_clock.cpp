#include "app/step_clock.h"

namespace rt {

double StepTimes::host_s() const {
  double s = forward_host_s + optimizer_host_s;
  for (double layer : backward_host_s) s += layer;
  return s;
}

StepClock::StepClock(StepTimes* times, Device device) : times_(times), device_(device) { start(); }

void StepClock::start() {
  if (!times_) return;
  synchronize(device_);
  start_ = Clock::now();
}

void StepClock::issued(double StepTimes::*host_s) {
  if (times_) times_->*host_s += std::chrono::duration<double>(Clock::now() - start_).count();
}

void StepClock::done(double StepTimes::*device_s) {
  if (!times_) return;
  synchronize(device_);
  const Clock::time_point now = Clock::now();
  times_->*device_s += std::chrono::duration<double>(now - start_).count();
  start_ = now;
}

void StepClock::step_done() {
  if (times_) ++times_->steps;
}

}  // namespace rt
