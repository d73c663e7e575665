// ReLU layer (no parameters). Where the graph hands its work to the batch norm before it (Note
// [ReLU in batch norm] in nn/graph.cpp), it passes values and gradients through.
#pragma once

#include <memory>

#include "base/check.h"
#include "nn/layer.h"
#include "nn/ops/relu.h"

namespace rt {

class Relu final : public Layer {
 public:
  std::string_view kind() const override { return "relu"; }
  bool backward_reads_inputs() const override { return false; }
  bool runs_in_place() const override { return true; }
  bool backward_reads_output() const override { return !given_away_; }
  bool passes_gradient_through() const override { return given_away_; }
  bool give_relu_away() override {
    given_away_ = true;
    return true;
  }
  std::string_view algorithm() const override { return given_away_ ? "in batch norm" : ""; }

 protected:
  TensorSpec plan_impl(const std::vector<TensorSpec>& x, const std::vector<bool>&) override {
    if (!given_away_) op_ = make_relu(x[0]);
    return x[0];
  }
  // Given away, it runs in place over its input, the batch norm's output, which has no other
  // reader (Note [Activation memory] in nn/graph.cpp), and its gradient is the batch norm's own
  // buffer but where it is a graph output, whose gradient comes from outside: then it is copied.
  void forward_impl(const std::vector<const Tensor*>& x, Tensor& y, const RunContext&) override {
    if (!given_away_)
      op_->forward(*x[0], y);
    else
      RT_ASSERT(x[0]->data() == y.data());
  }
  void backward_impl(const std::vector<const Tensor*>&, const Tensor& y, const Tensor& dy,
                     const std::vector<Tensor*>& dx, const RunContext&) override {
    if (!dx[0]) return;
    if (!given_away_)
      op_->backward(y, dy, *dx[0]);
    else
      copy_bytes(dx[0]->data(), dx[0]->device(), dy.data(), dy.device(), dy.bytes());
  }

 private:
  bool given_away_ = false;  // to the batch norm before it
  std::unique_ptr<ReluOp> op_;
};

}  // namespace rt
