#include "nn/layers/group_batch_norm.h"

#include <vector>

#include "base/check.h"
#include "nn/ops/add.h"
#include "nn/ops/group_batch_norm_math.h"

namespace rt {
namespace {

// C floats of `value` on `device` (set-up only: the copy waits for the GPU).
Tensor filled(int64_t n, float value, Device device) {
  Tensor t(plain_spec({n}, device));
  const std::vector<float> host(static_cast<size_t>(n), value);
  copy_bytes(t.data(), device, host.data(), Device::kCpu, host.size() * sizeof(float));
  return t;
}

}  // namespace

GroupBatchNorm::GroupBatchNorm(const BatchNormGroup& group, const BatchNormOptions& options, const TensorSpec& x)
    : group_(group),
      options_(options),
      device_(x.device),
      channels_(x.shape[1]),
      pixels_(x.shape[0] * x.shape[2] * x.shape[3]),
      moments_(make_batch_norm(BatchNormOptions{options.eps, 1.0}, x)),
      affine_(make_batch_norm(options, x)),
      local_mean_(filled(channels_, 0, device_)),
      local_var_(filled(channels_, 1, device_)),
      mean_(filled(channels_, 0, device_)),
      var_(filled(channels_, 1, device_)),
      zeros_(filled(channels_, 0, device_)),
      ones_(filled(channels_, 1, device_)),
      slope_(filled(channels_, 0, device_)),
      offset_(filled(channels_, 0, device_)),
      scaled_dy_(x),
      pooled_(filled(2 * channels_, 0, device_)) {}

void GroupBatchNorm::forward_training(BatchNormOp& op, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                      Tensor& y, Tensor& running_mean, Tensor& running_var) {
  // This rank's moments (y is written over below).
  moments_->forward_training(x, gamma, beta, y, local_mean_, local_var_);
  const double n = static_cast<double>(pixels_);
  const double biased = pixels_ > 1 ? (n - 1) / n : 1.0;
  const int64_t C = channels_;
  float* pooled = pooled_.data();
  // Two averages, as Chan et al. combine variances: the means first, then each rank's variance
  // plus its mean's squared distance from the group's. Every term is positive: no cancellation,
  // however far from 0 the mean lies.
  pack_channels(device_, local_mean_.data(), nullptr, pooled, C);
  group_.average(pooled, C);
  group_variance_terms(device_, local_mean_.data(), local_var_.data(), biased, pooled, C);
  group_.average(pooled + C, C);
  const double M = n * group_.size;
  take_group_statistics(device_, pooled, options_.momentum, M > 1 ? M / (M - 1) : 1.0, mean_.data(), var_.data(),
                        running_mean.data(), running_var.data(), C);
  op.forward_inference(x, gamma, beta, y, mean_, var_);
}

void GroupBatchNorm::backward_training(BatchNormOp& op, const Tensor& x, const Tensor& gamma, const Tensor& beta,
                                       const Tensor& dy, Tensor& dx, Tensor& dgamma, Tensor& dbeta) {
  // dx may share memory with x or dy (the memory plan's in-place gradients): both are read before
  // dx is first written. gamma / sigma dy, and this rank's sums S (dgamma) and B (dbeta), at the
  // group's statistics:
  op.backward_inference(x, gamma, beta, dy, scaled_dy_, dgamma, dbeta, mean_, var_);
  const int64_t C = channels_;
  float* pooled = pooled_.data();
  pack_channels(device_, dgamma.data(), dbeta.data(), pooled, C);
  group_.average(pooled, 2 * C);
  // The group's averages over n are its sums over M = G n: S_g / M = avg S / n.
  group_backward_affines(device_, pooled, static_cast<double>(pixels_), gamma.data(), mean_.data(), var_.data(),
                         options_.eps, slope_.data(), offset_.data(), C);
  affine_->forward_inference(x, slope_, offset_, dx, zeros_, ones_);
  accumulate(dx, scaled_dy_);
}

}  // namespace rt
