// Ring-allreduce (average) of a float buffer over a Transport, following Note [Ring schedule].
// Each step's chunk travels in slices: all of a step's receives and sends are posted at once and
// each received slice is reduced while the later ones are still in flight.
#pragma once

#include <chrono>
#include <cstdint>
#include <optional>

#include "dist/transport.h"

namespace rt {

class RingAllreduce {
 public:
  explicit RingAllreduce(Transport& transport, int64_t slice_floats = int64_t{1} << 17);
  // data[0, count) becomes the average over all ranks, on every rank.
  void run(float* data, int64_t count, const WaitContext& context);
  // When the last run finished its reduce-scatter (its all-gather took the rest); unset for runs
  // with nothing to exchange. For the timeline's phase spans.
  std::optional<std::chrono::steady_clock::time_point> last_phase_switch() const { return phase_switch_; }

 private:
  Transport& t_;
  int64_t slice_;
  std::optional<std::chrono::steady_clock::time_point> phase_switch_;
};

}  // namespace rt
