// Note [Group batch norm]: at small per-GPU batches (32 images or fewer) a batch-norm layer's
// statistics over one rank's images are noisy, and large-batch recipes (MLPerf's "BN span")
// pool them over a few ranks instead: train.bn_group = G averages each batch-norm layer's
// statistics over G consecutive ranks of a host, forward and backward, as PyTorch's
// SyncBatchNorm does over its process group. With n images' pixels per rank and M = G n:
//   forward:  the ranks' means m_r are averaged over the group (C floats), then each rank's
//             biased variance plus (m_r - m)^2 (C floats): Chan et al.'s combination, every term
//             positive, so no cancellation however far from 0 the mean lies. The group's mean and
//             variance normalise x through the backend's inference kernel, and the running
//             statistics take them (the variance unbiased by M / (M - 1));
//   backward: the inference kernel's backward gives gamma / sigma dy and this rank's sums
//             S = sum dy x^ and B = sum dy with the group's statistics; their group average makes
//             the full gradient dx = gamma / sigma (dy - B_g / M - x^ S_g / M), which is an
//             affine function of x per channel, A x + b, computed by the inference kernel with
//             mean 0 and variance 1 (its scale multiplied by sqrt(1 + eps)), plus gamma / sigma dy.
// Every rank of the group ends with the same statistics; dgamma and dbeta stay this rank's sums,
// which the gradients' ring averages over all ranks as any gradient. Evaluation and the saved
// running statistics mean what they meant: the statistics are a larger batch's.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>

#include "nn/ops/batch_norm.h"
#include "nn/tensor.h"

namespace rt {

// The ranks a batch-norm layer pools its statistics over (PlanContext::bn_group).
struct BatchNormGroup {
  int size = 1;
  // values[0, count), on the layer's device, becomes their average over the group; collective.
  // On the GPU it is enqueued on the compute stream (over NCCL) and returns at once.
  std::function<void(float* values, int64_t count)> average;
};

class GroupBatchNorm {
 public:
  // For inputs of spec x; `op` is the layer's own kernel, for these eps and momentum.
  GroupBatchNorm(const BatchNormGroup& group, const BatchNormOptions& options, const TensorSpec& x);
  void forward_training(BatchNormOp& op, const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                        Tensor& running_mean, Tensor& running_var);
  void backward_training(BatchNormOp& op, const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& dy,
                         Tensor& dx, Tensor& dgamma, Tensor& dbeta);

 private:
  const BatchNormGroup& group_;
  BatchNormOptions options_;
  Device device_;
  int64_t channels_, pixels_;             // pixels_: N H W, this rank's values per channel
  std::unique_ptr<BatchNormOp> moments_;  // momentum 1: its running statistics are the batch's
  std::unique_ptr<BatchNormOp> affine_;   // with mean 0 and variance 1: gamma x / sqrt(1 + eps) + beta
  Tensor local_mean_, local_var_;         // (C) this rank's, var unbiased
  Tensor mean_, var_;                     // (C) the group's, var biased: what normalised the batch
  Tensor zeros_, ones_, slope_, offset_;  // (C) for the affine kernel
  Tensor scaled_dy_;                      // as x: gamma / sigma dy
  Tensor pooled_;                         // (2C) averaged over the group
};

}  // namespace rt
