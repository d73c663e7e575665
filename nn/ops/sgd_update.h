// The SGD step over flat parameter, gradient and momentum buffers, as torch.optim.SGD
// (dampening 0): d = s g + wd w;  v = m v + d;  w -= lr (nesterov ? d + m v : v), where s is
// grad_scale (1 / the loss scale under fp16, Note [Mixed precision]; else 1). With
// lr_in_momentum, as MLPerf's LARS: v = m v + lr d;  w -= nesterov ? m v + lr d : v.
#pragma once

#include <cstdint>

#include "nn/device.h"

namespace rt {

struct SgdStep {
  float lr = 0, momentum = 0, weight_decay = 0;
  bool nesterov = false;
  float grad_scale = 1;
  bool lr_in_momentum = false;
};

// Updates w and v in place over n elements.
void sgd_update(Device device, const SgdStep& step, float* w, const float* g, float* v, int64_t n);

// True when none of x[0, n) is infinite or NaN (loss scaling's test of a step's gradients). On the
// GPU it waits for the device's queued work.
bool all_finite(Device device, const float* x, int64_t n);

}  // namespace rt
