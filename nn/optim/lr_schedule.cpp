#include "nn/optim/lr_schedule.h"

#include <cmath>

#include "base/check.h"

namespace rt {

double LrSchedule::at(int64_t step) const {
  if (step < warmup_steps) return base * static_cast<double>(step + 1) / static_cast<double>(warmup_steps);
  switch (kind) {
    case Kind::kConstant:
      return base;
    case Kind::kStep: {
      double lr = base;
      for (int64_t m : milestones)
        if (step >= m) lr *= factor;
      return lr;
    }
    case Kind::kCosine: {
      const int64_t span = std::max<int64_t>(total_steps - warmup_steps, 1);
      const double t = std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(span));
      return base * (final_fraction + (1 - final_fraction) * 0.5 * (1 + std::cos(M_PI * t)));
    }
    case Kind::kPoly: {
      const int64_t span = std::max<int64_t>(total_steps - warmup_steps, 1);
      const double t = std::min(1.0, static_cast<double>(step - warmup_steps) / static_cast<double>(span));
      return base * (final_fraction + (1 - final_fraction) * std::pow(1 - t, power));
    }
  }
  return base;
}

}  // namespace rt
