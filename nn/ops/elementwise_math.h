// The per-element math of the ops whose CUDA kernels are ringtrain's own, written once as RT_HD
// functions: the kernels call them on the GPU, and tests/nn/cuda_math_test.cpp checks them on the
// CPU against the CPU backend, so the GPU's arithmetic is verified even where no GPU exists.
#pragma once

#include <cmath>
#include <cstdint>

#include "base/host_device.h"
#include "base/rng.h"
#include "nn/ops/sgd_update.h"

namespace rt {

RT_HD inline float relu_forward(float x) { return x > 0.0f ? x : 0.0f; }
// From the output, as the CPU's eltwise_relu_use_dst_for_bwd: y > 0 exactly where x > 0.
RT_HD inline float relu_backward(float y, float dy) { return y > 0.0f ? dy : 0.0f; }

// torch.optim.SGD on one element (dampening 0), or MLPerf's LARS momentum with the rate inside
// the buffer (lr_in_momentum); updates w and v.
RT_HD inline void sgd_element(const SgdStep& s, float& w, float g, float& v) {
  const float d = g * s.grad_scale + s.weight_decay * w;
  if (s.lr_in_momentum) {
    v = s.momentum * v + s.lr * d;
    w -= s.nesterov ? s.momentum * v + s.lr * d : v;
    return;
  }
  const float m = s.momentum * v + d;
  v = m;
  w -= s.lr * (s.nesterov ? d + s.momentum * m : m);
}

// Inverted dropout's factor for physical element i of step `step`: 0 with probability p, else
// 1 / (1 - p). A pure function of (seed, step, i), shared by the CPU and CUDA ops, so both draw
// the same mask.
RT_HD inline float dropout_scale(uint64_t seed, uint64_t step, uint64_t i, float p) {
  const uint64_t stream = 0xD50Full ^ (step << 16);
  return to_unit_float(hash3(seed, stream, i)) < p ? 0.0f : 1.0f / (1.0f - p);
}

// The input rows [begin, end) that pooling output row i reads. Fixed windows: start i * stride -
// pad, size kernel (may reach into the padding). Adaptive windows (kernel == 0), PyTorch's rule:
// [floor(i in / out), ceil((i + 1) in / out)).
// I is the index type: int64_t on the CPU; the GPU kernels take int32_t where every index fits,
// since 64-bit division is many times slower there.
template <typename I>
struct BasicPoolAxis {
  I in = 1, out = 1, kernel = 0, stride = 1, pad = 0;

  RT_HD I begin(I i) const { return kernel ? i * stride - pad : i * in / out; }
  RT_HD I end(I i) const { return kernel ? i * stride - pad + kernel : ((i + 1) * in + out - 1) / out; }
  // The outputs whose windows may contain input row h: a superset, checked with contains().
  RT_HD I first_output(I h) const {
    if (!kernel) return h * out / in;
    return h + pad < kernel ? 0 : (h + pad - kernel) / stride + 1;
  }
  RT_HD I last_output(I h) const {
    const I last = kernel ? (h + pad) / stride : ((h + 1) * out + in - 1) / in;
    return last < out - 1 ? last : out - 1;
  }
  RT_HD bool contains(I i, I h) const { return begin(i) <= h && h < end(i); }
  // No input row lies in two windows (a fixed kernel no longer than the stride, as VGG's 2x2/2).
  RT_HD bool disjoint() const { return kernel > 0 && kernel <= stride; }
  template <typename J>
  RT_HD BasicPoolAxis<J> as() const {
    return {static_cast<J>(in), static_cast<J>(out), static_cast<J>(kernel), static_cast<J>(stride),
            static_cast<J>(pad)};
  }
};
using PoolAxis = BasicPoolAxis<int64_t>;

// The rank of a target whose logit is not a number: NaN compares false with everything, and a
// diverged model must not count every row as right (one once scored 100% top-1), nor in the top 5.
inline constexpr int64_t kUnranked = INT64_MAX;

// Softmax cross-entropy of one row of logits z[0..K) with target t, as the CPU op: writes the
// row's loss, the number of logits strictly above the target's (0 means top-1), and, if dz is
// non-null, the gradient of the mean loss times grad_scale (g = grad_scale / N).
RT_HD inline void softmax_cross_entropy_row(const float* z, int64_t K, int32_t t, double smoothing, double g, float* dz,
                                            double* loss, int64_t* above) {
  double zmax = z[0];
  for (int64_t k = 1; k < K; ++k) zmax = zmax > z[k] ? zmax : static_cast<double>(z[k]);
  double sum = 0, mean_z = 0;
  int64_t rank = 0;
  for (int64_t k = 0; k < K; ++k) {
    sum += exp(z[k] - zmax);
    mean_z += z[k];
    rank += z[k] > z[t];
  }
  const double log_sum = log(sum) + zmax;
  mean_z /= static_cast<double>(K);
  *loss = (1 - smoothing) * (log_sum - z[t]) + smoothing * (log_sum - mean_z);
  *above = z[t] == z[t] ? rank : kUnranked;
  if (!dz) return;
  for (int64_t k = 0; k < K; ++k) {
    const double q = (k == t ? 1 - smoothing : 0) + smoothing / static_cast<double>(K);
    dz[k] = static_cast<float>((exp(z[k] - zmax) / sum - q) * g);
  }
}

}  // namespace rt
