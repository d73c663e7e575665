// Where a profiled training step's time goes (`ringtrain bench --profile`): each phase is timed
// with the device's queue drained at its start and its end, and the host's share is the time it
// took to issue the phase's work, up to that drain. Without StepTimes every call does nothing, so
// train_step makes them unconditionally.
#pragma once

#include <chrono>
#include <cstdint>
#include <vector>

#include "nn/device.h"

namespace rt {

// Summed over the profiled steps.
struct StepTimes {
  int64_t steps = 0;
  double forward_s = 0;            // forward and the loss
  std::vector<double> backward_s;  // per layer, rows as Graph::layer_table() (Graph times these)
  double optimizer_s = 0;          // SGD after the allreduce
  double forward_host_s = 0, optimizer_host_s = 0;
  std::vector<double> backward_host_s;
  double host_s() const;  // all three
};

class StepClock {
 public:
  // Drains the queue and starts the first phase, when profiling.
  StepClock(StepTimes* times, Device device);
  // A phase starts now, the queue drained first (the optimizer, after the allreduce's wait).
  void start();
  // The host has issued the phase's work: the seconds since its start go to times->*host_s.
  void issued(double StepTimes::*host_s);
  // The phase is over: drains the queue, and the seconds since its start go to times->*device_s.
  void done(double StepTimes::*device_s);
  void step_done();

 private:
  using Clock = std::chrono::steady_clock;
  StepTimes* const times_;
  const Device device_;
  Clock::time_point start_;
};

}  // namespace rt
