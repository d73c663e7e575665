// Note [Group batch norm]'s per-channel loops on the CPU: a few hundred channels, one thread.
#include "nn/ops/group_batch_norm_math.h"

#include "nn/ops/cpu/make.h"

namespace rt::cpu {

void pack_channels(const float* first, const float* second, float* pooled, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) pooled[c] = first[c];
  if (second)
    for (int64_t c = 0; c < channels; ++c) pooled[channels + c] = second[c];
}

void group_variance_terms(const float* local_mean, const float* local_var, double biased, float* pooled,
                          int64_t channels) {
  for (int64_t c = 0; c < channels; ++c)
    pooled[channels + c] = group_variance_term(local_mean[c], local_var[c], pooled[c], biased);
}

void take_group_statistics(const float* pooled, double momentum, double unbias, float* mean, float* var,
                           float* running_mean, float* running_var, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c) {
    mean[c] = pooled[c];
    var[c] = pooled[channels + c];
    running_mean[c] = running_statistic(running_mean[c], pooled[c], momentum, 1.0);
    running_var[c] = running_statistic(running_var[c], pooled[channels + c], momentum, unbias);
  }
}

void group_backward_affines(const float* pooled, double n, const float* gamma, const float* mean, const float* var,
                            double eps, float* slope, float* offset, int64_t channels) {
  for (int64_t c = 0; c < channels; ++c)
    group_backward_affine(pooled[c], pooled[channels + c], n, gamma[c], mean[c], var[c], eps, slope[c], offset[c]);
}

}  // namespace rt::cpu
