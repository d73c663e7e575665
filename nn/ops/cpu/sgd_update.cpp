// The SGD step, and loss scaling's finite check, as one parallel loop over the flat buffers.
#include "nn/ops/sgd_update.h"

#include <cmath>

#include "nn/ops/cpu/make.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cpu {

void sgd_update(const SgdStep& s, float* w, const float* g, float* v, int64_t n) {
#pragma omp parallel for
  for (int64_t i = 0; i < n; ++i) sgd_element(s, w[i], g[i], v[i]);
}

bool all_finite(const float* x, int64_t n) {
  bool finite = true;
#pragma omp parallel for reduction(&& : finite)
  for (int64_t i = 0; i < n; ++i) finite = finite && std::isfinite(x[i]);
  return finite;
}

}  // namespace rt::cpu
