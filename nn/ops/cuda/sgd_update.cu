// The SGD update (sgd_element of nn/ops/elementwise_math.h over the arena) and loss scaling's
// check that every gradient is finite.
#include "base/check.h"
#include "nn/cuda/device_api.h"
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/element_io.cuh"
#include "nn/ops/cuda/make.h"
#include "nn/ops/elementwise_math.h"

namespace rt::cuda {
namespace {

__global__ void sgd_kernel(SgdStep s, float* w, const float* g, float* v, int64_t n) {
  RT_FOR_EACH_ELEMENT(i, n) sgd_element(s, w[i], g[i], v[i]);
}
__global__ void find_non_finite(const float* x, int64_t n, int* found) {
  RT_FOR_EACH_ELEMENT(i, n) {
    if (!isfinite(x[i])) *found = 1;
  }
}

}  // namespace

void sgd_update(const SgdStep& step, float* w, const float* g, float* v, int64_t n) {
  if (n == 0) return;
  sgd_kernel<<<blocks_for(n), 256, 0, context().stream>>>(step, w, g, v, n);
  RT_CU_LAUNCHED();
}

bool all_finite(const float* x, int64_t n) {
  if (n == 0) return true;
  int* found = static_cast<int*>(scratch(sizeof(int)));
  const cudaStream_t s = context().stream;
  RT_CU(cudaMemsetAsync(found, 0, sizeof(int), s));
  find_non_finite<<<blocks_for(n), 256, 0, s>>>(x, n, found);
  RT_CU_LAUNCHED();
  int host = 0;
  RT_CU(cudaMemcpyAsync(&host, found, sizeof(int), cudaMemcpyDeviceToHost, s));
  RT_CU(cudaStreamSynchronize(s));
  return host == 0;
}

}  // namespace rt::cuda
