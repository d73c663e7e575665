// Channel concatenation of any number of inputs (Inception's branches).
#pragma once

#include <memory>

#include "nn/layer.h"
#include "nn/ops/concat.h"

namespace rt {

class Concat final : public Layer {
 public:
  std::string_view kind() const override { return "concat"; }
  bool backward_reads_inputs() const override { return false; }

 protected:
  size_t arity() const override { return 0; }
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>&) override {
    op_ = make_concat(x);
    return op_->y_spec();
  }
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override { op_->forward(x, y); }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor&, const Tensor& dy, const std::vector<Tensor*>& dx,
                     const RunContext&) override {
    op_->backward(dy, dx);
  }

 private:
  std::unique_ptr<ConcatOp> op_;
};

}  // namespace rt
