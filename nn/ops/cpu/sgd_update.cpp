// The SGD step as one parallel loop over the flat buffers.
#include "nn/ops/sgd_update.h"

#include "nn/ops/cpu/make.h"

namespace rt::cpu {

void sgd_update(const SgdStep& s, float* w, const float* g, float* v, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) {
    const float d = g[i] + s.weight_decay * w[i];
    const float m = s.momentum * v[i] + d;
    v[i] = m;
    w[i] -= s.lr * (s.nesterov ? d + s.momentum * m : m);
  }
}

}  // namespace rt::cpu
