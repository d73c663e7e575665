// Every op interface, and the factories each backend provides, declared once: a backend's make.h
// declares them with RT_DECLARE_BACKEND_OPS(its namespace), so the CPU (rt::cpu) and CUDA (rt::cuda)
// factories have one set of signatures and nn/ops/dispatch.cpp can pick between them by device.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nn/ops/add.h"
#include "nn/ops/agreed_reductions.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/concat.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/dropout.h"
#include "nn/ops/flatten.h"
#include "nn/ops/group_batch_norm_math.h"
#include "nn/ops/linear.h"
#include "nn/ops/pool2d.h"
#include "nn/ops/relu.h"
#include "nn/ops/sgd_update.h"
#include "nn/ops/softmax_cross_entropy.h"

#define RT_DECLARE_BACKEND_OPS(ns)                                                                                    \
  namespace rt::ns {                                                                                                  \
  std::unique_ptr<Conv2dOp> make_conv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx,                   \
                                        const PlanContext& plan);                                                     \
  std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormOptions& options, const TensorSpec& x);                 \
  std::unique_ptr<ReluOp> make_relu(const TensorSpec& x);                                                             \
  std::unique_ptr<Pool2dOp> make_pool2d(const Pool2dGeometry& g, const TensorSpec& x);                                \
  std::unique_ptr<Pool2dOp> make_adaptive_avg_pool2d(int64_t out_h, int64_t out_w, const TensorSpec& x);              \
  std::unique_ptr<LinearOp> make_linear(int64_t batch, int64_t in_features, int64_t out_features, bool bias,          \
                                        bool need_dx, const PlanContext& plan);                                       \
  std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec& x);                                             \
  std::unique_ptr<ConcatOp> make_concat(const std::vector<TensorSpec>& xs);                                           \
  std::unique_ptr<AddOp> make_add(const TensorSpec& a, const TensorSpec& b);                                          \
  std::unique_ptr<FlattenOp> make_flatten(const TensorSpec& x);                                                       \
  void accumulate(Tensor& dst, const Tensor& src);                                                                    \
  void reorder(const Tensor& src, Tensor& dst);                                                                       \
  LossResult softmax_cross_entropy(const Tensor& logits, const int32_t* targets, double label_smoothing,              \
                                   Tensor* dlogits, double grad_scale);                                               \
  std::unique_ptr<SoftmaxCrossEntropyOp> make_softmax_cross_entropy(const TensorSpec& logits);                        \
  void sgd_update(const SgdStep& step, float* w, const float* g, float* v, int64_t n);                                \
  bool all_finite(const float* x, int64_t n);                                                                         \
  double sum_of_squares(const float* x, int64_t n);                                                                   \
  uint64_t fingerprint(const float* x, int64_t n);                                                                    \
  void pack_channels(const float* first, const float* second, float* pooled, int64_t channels);                       \
  void group_variance_terms(const float* local_mean, const float* local_var, double biased, float* pooled,            \
                            int64_t channels);                                                                        \
  void take_group_statistics(const float* pooled, double momentum, double unbias, float* mean, float* var,            \
                             float* running_mean, float* running_var, int64_t channels);                              \
  void group_backward_affines(const float* pooled, double n, const float* gamma, const float* mean, const float* var, \
                              double eps, float* slope, float* offset, int64_t channels);                             \
  }
