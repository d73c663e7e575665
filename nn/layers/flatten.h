// Flatten layer: (N, C, H, W) in any layout -> plain (N, C*H*W), as torch.flatten(x, 1).
#pragma once

#include <memory>

#include "nn/layer.h"
#include "nn/ops/flatten.h"

namespace rt {

class Flatten final : public Layer {
 public:
  std::string_view kind() const override { return "flatten"; }
  bool backward_reads_inputs() const override { return false; }

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>&) override {
    op_ = make_flatten(x[0]);
    return op_->y_spec();
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], y);
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dy, const std::vector<Tensor*>& dx,
                     const RunContext&) override {
    if (dx[0]) op_->backward(dy, *dx[0]);
  }

 private:
  std::unique_ptr<FlattenOp> op_;
};

}  // namespace rt
