// BatchNorm2d layer: weight (C) = 1, bias (C) = 0, buffers running_mean (C) = 0,
// running_var (C) = 1 and the counter num_batches_tracked, named as in torchvision.
#pragma once

#include <memory>

#include "nn/layer.h"
#include "nn/layers/group_batch_norm.h"
#include "nn/ops/batch_norm.h"

namespace rt {

class BatchNorm2d final : public Layer {
 public:
  BatchNorm2d(int64_t channels, BatchNormOptions options = {});
  std::string_view kind() const override { return "batch_norm2d"; }
  std::vector<ParamSpec> param_specs() const override;
  std::vector<BufferSpec> buffer_specs() const override;
  std::vector<std::pair<std::string, int64_t*>> counters() override { return {{"num_batches_tracked", &batches_}}; }
  // Note [ReLU in batch norm] in nn/graph.cpp: on the CPU, with its statistics its own batch's
  // (not frozen, not pooled over ranks).
  bool can_take_relu(Device device, const PlanContext& context) const override;
  void take_relu() override { options_.fuse_relu = true; }
  // torchvision's zero_init_residual: the last BN of a residual branch starts with weight 0.
  BatchNorm2d& zero_init() {
    zero_init_ = true;
    return *this;
  }

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>& need_dx) override;
  void begin_forward_impl(const RunContext& ctx) override {
    if (batch_statistics(ctx)) ++batches_;
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override;
  void backward_impl(const std::vector<const Tensor*>& x, const Tensor& y, const Tensor& dy,
                     const std::vector<Tensor*>& dx, const RunContext& ctx) override;

 private:
  // Whether a forward normalises with the batch's statistics (and updates the running ones).
  bool batch_statistics(const RunContext& ctx) const { return ctx.training && !statistics_frozen(); }

  int64_t channels_;
  BatchNormOptions options_;
  bool zero_init_ = false;
  int64_t batches_ = 0;
  Tensor dx_scratch_;                      // when the input needs no gradient, oneDNN still writes one
  Tensor dgamma_scratch_, dbeta_scratch_;  // and frozen, the parameters' gradients
  std::unique_ptr<BatchNormOp> op_;
  std::unique_ptr<GroupBatchNorm> group_;  // training statistics over several ranks, where planned so
};

}  // namespace rt
