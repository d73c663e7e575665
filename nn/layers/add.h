// Elementwise add of two inputs (a residual connection); output in the first input's layout.
#pragma once

#include <memory>

#include "nn/layer.h"
#include "nn/ops/add.h"

namespace rt {

class Add final : public Layer {
 public:
  std::string_view kind() const override { return "add"; }
  bool backward_reads_inputs() const override { return false; }
  bool passes_gradient_through() const override { return true; }

 protected:
  size_t arity() const override { return 2; }
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>&) override {
    op_ = make_add(x[0], x[1]);
    return x[0];
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    op_->forward(*x[0], *x[1], y);
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dy, const std::vector<Tensor*>& dx,
                     const RunContext&) override {
    op_->backward(dy, dx[0], dx[1]);
  }

 private:
  std::unique_ptr<AddOp> op_;
};

}  // namespace rt
