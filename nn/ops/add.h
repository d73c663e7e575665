// Elementwise sums: y = a + b for residual connections (output in a's spec), and dst += src for
// summing the gradients of a tensor with several consumers.
#pragma once

#include <memory>

#include "nn/tensor.h"

namespace rt {

class AddOp {
 public:
  virtual ~AddOp() = default;
  virtual void forward(const Tensor& a, const Tensor& b, Tensor& y) = 0;  // writes y
  // The gradient reaches both inputs unchanged: writes da and db (either may be null).
  virtual void backward(const Tensor& dy, Tensor* da, Tensor* db) = 0;
};

std::unique_ptr<AddOp> make_add(const TensorSpec& a, const TensorSpec& b);

// dst += src; src is reordered to dst's layout when they differ.
void accumulate(Tensor& dst, const Tensor& src);

}  // namespace rt
