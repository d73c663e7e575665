// Pooling layers: fixed-window max or average pooling, and adaptive average pooling to a size
// (global average pooling is adaptive to 1x1). No parameters.
#pragma once

#include <memory>

#include "nn/layer.h"
#include "nn/ops/pool2d.h"

namespace rt {

class Pool2d final : public Layer {
 public:
  explicit Pool2d(const Pool2dGeometry& g) : g_(g) {}
  std::string_view kind() const override { return g_.kind == PoolKind::kMax ? "max_pool2d" : "avg_pool2d"; }
  bool backward_reads_inputs() const override { return false; }  // max pooling keeps its workspace

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>&) override {
    op_ = make_pool2d(g_, x[0]);
    return op_->y_spec();
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    op_->forward(*x[0], y, ctx.training);
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dy, const std::vector<Tensor*>& dx,
                     const RunContext&) override {
    if (dx[0]) op_->backward(dy, *dx[0]);
  }

 private:
  Pool2dGeometry g_;
  std::unique_ptr<Pool2dOp> op_;
};

class AdaptiveAvgPool2d final : public Layer {
 public:
  AdaptiveAvgPool2d(int64_t out_h, int64_t out_w) : out_h_(out_h), out_w_(out_w) {}
  std::string_view kind() const override { return "adaptive_avg_pool2d"; }
  bool backward_reads_inputs() const override { return false; }

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>&) override {
    op_ = make_adaptive_avg_pool2d(out_h_, out_w_, x[0]);
    return op_->y_spec();
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    op_->forward(*x[0], y, ctx.training);
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dy, const std::vector<Tensor*>& dx,
                     const RunContext&) override {
    if (dx[0]) op_->backward(dy, *dx[0]);
  }

 private:
  int64_t out_h_, out_w_;
  std::unique_ptr<Pool2dOp> op_;
};

}  // namespace rt
