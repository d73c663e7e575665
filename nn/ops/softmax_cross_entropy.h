// Softmax cross-entropy on plain logits (N, K) with integer targets, mean over the batch, with
// optional label smoothing (target = (1 - s) one_hot + s / K, as PyTorch's CrossEntropyLoss).
#pragma once

#include <cstdint>
#include <memory>

#include "nn/tensor.h"

namespace rt {

struct LossResult {
  double loss = 0;       // mean over the batch
  int64_t correct1 = 0;  // samples whose target is the arg-max
  int64_t correct5 = 0;  // samples whose target is among the 5 largest logits
};

// writes dlogits (if non-null) = d(mean loss)/d(logits) x grad_scale.
LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* targets, double label_smoothing, Tensor* dlogits,
                                 double grad_scale = 1.0);

// The same loss planned once for a training step, in three phases, so that the device work in the
// middle can be recorded with the rest of the step and replayed (Note [CUDA graph steps] in
// nn/device.h): set_targets copies this step's labels into the op's own memory; compute enqueues
// device work only (on a GPU the rows' results land in the op's page-locked host memory); result
// waits for it and sums the rows.
class SoftmaxCrossEntropyOp {
 public:
  explicit SoftmaxCrossEntropyOp(const TensorSpec& logits) : logits_(logits) {}
  virtual ~SoftmaxCrossEntropyOp() = default;
  // targets: N labels in host memory, each in [0, K), else rt::Error naming the sample.
  void set_targets(const int32_t* targets);
  // writes dlogits (if non-null) = d(mean loss)/d(logits) x grad_scale; both of the planned spec.
  void compute(const Tensor& logits, double label_smoothing, Tensor* dlogits, double grad_scale);
  LossResult result() { return result_impl(); }

 protected:
  virtual void set_targets_impl(const int32_t* targets) = 0;
  virtual void compute_impl(const Tensor& logits, double label_smoothing, Tensor* dlogits, double grad_scale) = 0;
  virtual LossResult result_impl() = 0;

  TensorSpec logits_;  // plain (N, K)
};

std::unique_ptr<SoftmaxCrossEntropyOp> make_softmax_cross_entropy(const TensorSpec& logits);

}  // namespace rt
