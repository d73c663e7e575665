// Note [Group batch norm]'s per-channel work on the GPU: one thread per channel, on the compute
// stream, so nothing waits for the host between a layer's statistics and its normalisation.
#include "nn/cuda/runtime.h"
#include "nn/ops/cuda/make.h"
#include "nn/ops/group_batch_norm_math.h"

namespace rt::cuda {
namespace {

__global__ void pack_kernel(const float* first, const float* second, float* pooled, int64_t channels) {
  RT_FOR_EACH_ELEMENT(c, channels) {
    pooled[c] = first[c];
    if (second) pooled[channels + c] = second[c];
  }
}

__global__ void variance_terms_kernel(const float* local_mean, const float* local_var, double biased, float* pooled,
                                      int64_t channels) {
  RT_FOR_EACH_ELEMENT(c, channels)
  pooled[channels + c] = group_variance_term(local_mean[c], local_var[c], pooled[c], biased);
}

__global__ void take_statistics_kernel(const float* pooled, double momentum, double unbias, float* mean, float* var,
                                       float* running_mean, float* running_var, int64_t channels) {
  RT_FOR_EACH_ELEMENT(c, channels) {
    mean[c] = pooled[c];
    var[c] = pooled[channels + c];
    running_mean[c] = running_statistic(running_mean[c], pooled[c], momentum, 1.0);
    running_var[c] = running_statistic(running_var[c], pooled[channels + c], momentum, unbias);
  }
}

__global__ void backward_affines_kernel(const float* pooled, double n, const float* gamma, const float* mean,
                                        const float* var, double eps, float* slope, float* offset, int64_t channels) {
  RT_FOR_EACH_ELEMENT(c, channels)
  group_backward_affine(pooled[c], pooled[channels + c], n, gamma[c], mean[c], var[c], eps, slope[c], offset[c]);
}

}  // namespace

void pack_channels(const float* first, const float* second, float* pooled, int64_t channels) {
  pack_kernel<<<blocks_for(channels), 256, 0, context().stream>>>(first, second, pooled, channels);
  RT_CU_LAUNCHED();
}

void group_variance_terms(const float* local_mean, const float* local_var, double biased, float* pooled,
                          int64_t channels) {
  variance_terms_kernel<<<blocks_for(channels), 256, 0, context().stream>>>(local_mean, local_var, biased, pooled,
                                                                            channels);
  RT_CU_LAUNCHED();
}

void take_group_statistics(const float* pooled, double momentum, double unbias, float* mean, float* var,
                           float* running_mean, float* running_var, int64_t channels) {
  take_statistics_kernel<<<blocks_for(channels), 256, 0, context().stream>>>(pooled, momentum, unbias, mean, var,
                                                                             running_mean, running_var, channels);
  RT_CU_LAUNCHED();
}

void group_backward_affines(const float* pooled, double n, const float* gamma, const float* mean, const float* var,
                            double eps, float* slope, float* offset, int64_t channels) {
  backward_affines_kernel<<<blocks_for(channels), 256, 0, context().stream>>>(pooled, n, gamma, mean, var, eps, slope,
                                                                              offset, channels);
  RT_CU_LAUNCHED();
}

}  // namespace rt::cuda
