// Learning-rate schedules by step: constant, step (milestones x factor), cosine and polynomial
// decay (MLPerf's for LARS: (base - final) (1 - t)^power + final, t the share of the steps after
// warmup), each with an optional linear warmup from base/warmup to base. Pure functions of the step: a resumed run
// gets the same rates as an uninterrupted one.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/run_settings.h"  // ScheduleKind

namespace rt {

struct LrSchedule {
  using Kind = ScheduleKind;
  Kind kind = Kind::kConstant;
  double base = 0.1;  // after warmup, before decay
  int64_t warmup_steps = 0;
  std::vector<int64_t> milestones;  // steps at which the rate is multiplied by factor
  double factor = 0.1;
  double final_fraction = 0;  // cosine and poly end at base x this
  double power = 2;           // poly's exponent
  int64_t total_steps = 1;

  double at(int64_t step) const;
};

// Goyal et al. 2017: the rate for `global_batch` images is lr_per_256 x global_batch / 256.
inline double scaled_lr(double lr_per_256, int64_t global_batch) {
  return lr_per_256 * static_cast<double>(global_batch) / 256.0;
}
// The base rate: `absolute` where it is given (> 0; LARS's rates do not scale linearly, and
// MLPerf's reference points give them per global batch), else lr_per_256 scaled.
inline double base_lr(double absolute, double lr_per_256, int64_t global_batch) {
  return absolute > 0 ? absolute : scaled_lr(lr_per_256, global_batch);
}

}  // namespace rt
