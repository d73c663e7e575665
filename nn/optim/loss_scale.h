// Dynamic loss scaling for fp16 training (Note [Mixed precision] in nn/ops/cuda/gpu_layout.h).
// fp16 flushes values below 6e-8 to zero, and small gradients would vanish; so the loss, and with
// it every gradient, is multiplied by scale() before backward, and the update divides it back out.
// A step whose gradients came back inf or NaN is skipped (parameters and momentum untouched) and
// the scale halved; after growth_interval finite steps in a row it doubles. The defaults are
// PyTorch's GradScaler's. Every rank sees the same averaged gradients, so every rank decides alike
// without a collective of its own.
#pragma once

#include <cstdint>

namespace rt {

// What a scaled run reports: the scale now and the steps skipped for overflow so far.
struct LossScaleState {
  double scale = 0;
  int64_t skipped_steps = 0;
};

struct LossScaleOptions {
  double initial = 65536;  // 2^16
  double growth_factor = 2;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  // Below this the gradients are not overflowing but broken (NaN in the weights, a diverged
  // run): update() fails instead of halving for ever.
  double smallest = 1.0 / 65536;
};

class LossScaler {
 public:
  explicit LossScaler(LossScaleOptions options = {});
  double scale() const { return scale_; }
  // Continues from a saved scale (a resumed run).
  void set_scale(double scale);
  // After step `step`'s gradients are final and averaged: true when they were all finite and the
  // update should run with gradients multiplied by 1 / (the scale before this call). Adjusts the
  // scale. rt::Error when the scale would fall below options.smallest.
  bool update(bool finite, int64_t step);
  int64_t skipped_steps() const { return skipped_; }
  LossScaleState state() const { return {scale_, skipped_}; }

 private:
  LossScaleOptions options_;
  double scale_;
  int64_t finite_in_a_row_ = 0;
  int64_t skipped_ = 0;
};

}  // namespace rt
