#include "nn/layers/group_batch_norm.h"

#include <cmath>

#include "base/check.h"
#include "nn/ops/add.h"

namespace rt {
namespace {

Tensor filled(int64_t n, float value) {
  Tensor t(plain_spec({n}));
  for (int64_t i = 0; i < n; ++i) t.data()[i] = value;
  return t;
}

}  // namespace

GroupBatchNorm::GroupBatchNorm(const BatchNormGroup& group, const BatchNormOptions& options, const TensorSpec& x)
    : group_(group),
      options_(options),
      channels_(x.shape[1]),
      pixels_(x.shape[0] * x.shape[2] * x.shape[3]),
      moments_(make_batch_norm(BatchNormOptions{options.eps, 1.0}, x)),
      affine_(make_batch_norm(options, x)),
      local_mean_(filled(channels_, 0)),
      local_var_(filled(channels_, 1)),
      mean_(filled(channels_, 0)),
      var_(filled(channels_, 1)),
      zeros_(filled(channels_, 0)),
      ones_(filled(channels_, 1)),
      slope_(filled(channels_, 0)),
      offset_(filled(channels_, 0)),
      scaled_dy_(x),
      pooled_(static_cast<size_t>(2 * channels_)) {
  RT_CHECK(x.device == Device::kCpu, "train.bn_group > 1 runs on the CPU only (the GPU's is not built)");
}

void GroupBatchNorm::forward_training(BatchNormOp& op, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      Tensor& y, Tensor& running_mean, Tensor& running_var) {
  // This rank's moments (y is written over below).
  moments_->forward_training(x, gamma, beta, y, local_mean_, local_var_);
  const double n = static_cast<double>(pixels_);
  const double biased = pixels_ > 1 ? (n - 1) / n : 1.0;
  const size_t C = static_cast<size_t>(channels_);
  // Two averages, as Chan et al. combine variances: the means first, then each rank's variance
  // plus its mean's squared distance from the group's. Every term is positive: no cancellation,
  // however far from 0 the mean lies.
  for (size_t c = 0; c < C; ++c) pooled_[c] = local_mean_.data()[c];
  group_.average(pooled_.data(), static_cast<int64_t>(C));
  for (size_t c = 0; c < C; ++c) {
    const double d = static_cast<double>(local_mean_.data()[c]) - pooled_[c];
    pooled_[C + c] = static_cast<float>(local_var_.data()[c] * biased + d * d);
  }
  group_.average(pooled_.data() + C, static_cast<int64_t>(C));
  const double M = n * group_.size;
  const double mom = options_.momentum, unbias = M > 1 ? M / (M - 1) : 1.0;
  for (size_t c = 0; c < C; ++c) {
    mean_.data()[c] = pooled_[c];
    var_.data()[c] = pooled_[C + c];
    running_mean.data()[c] = static_cast<float>((1 - mom) * running_mean.data()[c] + mom * pooled_[c]);
    running_var.data()[c] = static_cast<float>((1 - mom) * running_var.data()[c] + mom * pooled_[C + c] * unbias);
  }
  op.forward_inference(x, gamma, beta, y, mean_, var_);
}

void GroupBatchNorm::backward_training(BatchNormOp& op, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  // dx may share memory with x or dy (the memory plan's in-place gradients): both are read before
  // dx is first written. gamma / sigma dy, and this rank's sums S (dgamma) and B (dbeta), at the
  // group's statistics:
  op.backward_inference(x, gamma, beta, dy, scaled_dy_, dgamma, dbeta, mean_, var_);
  const size_t C = static_cast<size_t>(channels_);
  for (size_t c = 0; c < C; ++c) {
    pooled_[c] = dgamma.data()[c];
    pooled_[C + c] = dbeta.data()[c];
  }
  group_.average(pooled_.data(), static_cast<int64_t>(2 * C));
  // The group's averages over n are its sums over M = G n: S_g / M = avg S / n.
  const double n = static_cast<double>(pixels_);
  for (size_t c = 0; c < C; ++c) {
    const double sigma = std::sqrt(static_cast<double>(var_.data()[c]) + options_.eps);
    const double s = pooled_[c] / n, b = pooled_[C + c] / n, g = gamma.data()[c], mu = mean_.data()[c];
    // -gamma / sigma (b + (x - mu) / sigma s) = A x + offset; the kernel divides the slope by
    // sqrt(1 + eps), its variance 1 plus its epsilon.
    slope_.data()[c] = static_cast<float>(-g * s / (sigma * sigma) * std::sqrt(1 + options_.eps));
    offset_.data()[c] = static_cast<float>(g / sigma * (mu * s / sigma - b));
  }
  affine_->forward_inference(x, slope_, offset_, dx, zeros_, ones_);
  accumulate(dx, scaled_dy_);
}

}  // namespace rt
