// The per-channel arithmetic of Note [Group batch norm] (nn/layers/group_batch_norm.h), written
// once as RT_HD functions: the CPU's loops and the GPU's kernels call the same ones, and the
// channel loops below run them on the device their vectors live on. Every vector has C floats,
// except `pooled` (2C: the group's two averages, side by side).
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.h"
#include "nn/device.h"

namespace rt {

// This rank's share of the group's biased variance: its own biased variance (local_var, unbiased,
// times biased = (n - 1) / n) plus its mean's squared distance from the group's.
RT_HD inline float group_variance_term(float local_mean, float local_var, float group_mean, double biased) {
  const double d = static_cast<double>(local_mean) - group_mean;
  return static_cast<float>(local_var * biased + d * d);
}

// (1 - momentum) running + momentum batch scale, as the running statistics move.
RT_HD inline float running_statistic(float running, float batch, double momentum, double scale) {
  return static_cast<float>((1 - momentum) * running + momentum * batch * scale);
}

// The input gradient's affine part -gamma / sigma (b + (x - mu) / sigma s) = slope x + offset, from
// the group's averaged sums S (pooled_s) and B (pooled_b) over n pixels per rank. The slope is
// multiplied by sqrt(1 + eps): the inference kernel that applies it divides by sqrt(1 + eps), its
// variance 1 plus its epsilon.
RT_HD inline void group_backward_affine(float pooled_s, float pooled_b, double n, float gamma, float mean, float var,
                                        double eps, float& slope, float& offset) {
  const double sigma = sqrt(static_cast<double>(var) + eps);
  const double s = pooled_s / n, b = pooled_b / n, g = gamma, mu = mean;
  slope = static_cast<float>(-g * s / (sigma * sigma) * sqrt(1 + eps));
  offset = static_cast<float>(g / sigma * (mu * s / sigma - b));
}

// pooled[0, C) = first; pooled[C, 2C) = second, unless second is null.
void pack_channels(Device device, const float* first, const float* second, float* pooled, int64_t channels);
// pooled[C + c] = group_variance_term(local_mean[c], local_var[c], pooled[c], biased).
void group_variance_terms(Device device, const float* local_mean, const float* local_var, double biased, float* pooled,
                          int64_t channels);
// mean = pooled[0, C), var = pooled[C, 2C); the running statistics move towards them (the
// variance times unbias = M / (M - 1)).
void take_group_statistics(Device device, const float* pooled, double momentum, double unbias, float* mean, float* var,
                           float* running_mean, float* running_var, int64_t channels);
// slope and offset of group_backward_affine, S = pooled[0, C), B = pooled[C, 2C).
void group_backward_affines(Device device, const float* pooled, double n, const float* gamma, const float* mean,
                            const float* var, double eps, float* slope, float* offset, int64_t channels);

}  // namespace rt
