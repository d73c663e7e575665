// The SGD step over flat parameter, gradient and momentum buffers, as torch.optim.SGD
// (dampening 0): d = g + wd w;  v = m v + d;  w -= lr (nesterov ? d + m v : v).
#pragma once

#include <cstdint>

#include "nn/device.h"

namespace rt {

struct SgdStep {
  float lr = 0, momentum = 0, weight_decay = 0;
  bool nesterov = false;
};

// Updates w and v in place over n elements.
void sgd_update(Device device, const SgdStep& step, float* w, const float* g, float* v, int64_t n);

}  // namespace rt
