// Dropout layer; the probability is fixed at construction (from the model config).
#pragma once

#include <memory>

#include "nn/layer.h"
#include "nn/ops/dropout.h"

namespace rt {

class Dropout final : public Layer {
 public:
  explicit Dropout(double p) : p_(p) {}
  std::string_view kind() const override { return "dropout"; }
  bool backward_reads_inputs() const override { return false; }

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>&) override {
    op_ = make_dropout(p_, x[0]);
    return x[0];
  }
  void begin_forward_impl(const RunContext& ctx) override {
    if (ctx.training) op_->set_step(ctx.seed, ctx.step);
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext& ctx) override {
    op_->forward(*x[0], y, ctx.training);
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dy, const std::vector<Tensor*>& dx,
                     const RunContext&) override {
    if (dx[0]) op_->backward(dy, *dx[0]);
  }

 private:
  double p_;
  std::unique_ptr<DropoutOp> op_;
};

}  // namespace rt
