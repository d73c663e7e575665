// Softmax cross-entropy on plain logits (N, K) with integer targets, mean over the batch, with
// optional label smoothing (target = (1 - s) one_hot + s / K, as PyTorch's CrossEntropyLoss).
#pragma once

#include <cstdint>

#include "nn/tensor.h"

namespace rt {

struct LossResult {
  double loss = 0;       // mean over the batch
  int64_t correct1 = 0;  // samples whose target is the arg-max
  int64_t correct5 = 0;  // samples whose target is among the 5 largest logits
};

// writes dlogits (if non-null) = d(mean loss)/d(logits) x grad_scale.
LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* targets, double label_smoothing,
                                 Tensor* dlogits, double grad_scale = 1.0);

}  // namespace rt
