// Rectified linear unit, elementwise on any layout; output and gradients share the input's spec.
#pragma once

#include <memory>

#include "nn/tensor.h"

namespace rt {

class ReluOp {
 public:
  virtual ~ReluOp() = default;
  virtual void forward(const Tensor& x, Tensor& y) = 0;  // writes y
  // From the output y (y > 0 exactly where x > 0), so the forward may run in place.
  virtual void backward(const Tensor& y, const Tensor& dy, Tensor& dx) = 0;  // writes dx
};

std::unique_ptr<ReluOp> make_relu(const TensorSpec& x);

}  // namespace rt
