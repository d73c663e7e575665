// ReLU layer (no parameters).
#pragma once

#include <memory>

#include "nn/layer.h"
#include "nn/ops/relu.h"

namespace rt {

class Relu final : public Layer {
 public:
  std::string_view kind() const override { return "relu"; }
  bool backward_reads_inputs() const override { return false; }
  bool runs_in_place() const override { return true; }
  bool backward_reads_output() const override { return true; }

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>&) override {
    op_ = make_relu(x[0]);
    return x[0];
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], y);
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor& y, const Tensor& dy,
                     const std::vector<Tensor*>& dx, const RunContext&) override {
    if (dx[0]) op_->backward(y, dy, *dx[0]);
  }

 private:
  std::unique_ptr<ReluOp> op_;
};

}  // namespace rt
