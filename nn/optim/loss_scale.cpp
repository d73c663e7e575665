#include "nn/optim/loss_scale.h"

#include "base/check.h"

namespace rt {

LossScaler::LossScaler(LossScaleOptions options) : options_(options), scale_(options.initial) {
  RT_CHECK(options.initial > 0 && options.growth_factor >= 1 && options.backoff_factor > 0 &&
               options.backoff_factor < 1 && options.growth_interval >= 1,
           "loss scaling needs an initial scale > 0, growth >= 1, backoff in (0, 1) and an interval >= 1");
}

void LossScaler::set_scale(double scale) {
  RT_CHECK(scale > 0, "a loss scale must be > 0, got ", scale);
  scale_ = scale;
  finite_in_a_row_ = 0;
}

bool LossScaler::update(bool finite, int64_t step) {
  if (finite) {
    if (++finite_in_a_row_ == options_.growth_interval) {
      scale_ *= options_.growth_factor;
      finite_in_a_row_ = 0;
    }
    return true;
  }
  ++skipped_;
  finite_in_a_row_ = 0;
  scale_ *= options_.backoff_factor;
  RT_CHECK(scale_ >= options_.smallest, "step ", step + 1, ": fp16 gradients were inf or NaN ", skipped_,
           " time(s), and the loss scale fell to ", scale_,
           ": the weights or the loss are no longer finite, not "
           "merely overflowing; lower train.lr_per_256, or train in bf16");
  return false;
}

}  // namespace rt
