// Flatten (N, C, H, W) in any layout to plain (N, C*H*W) in NCHW order, as torch.flatten(x, 1),
// so the fully connected weights that follow have PyTorch's column order.
#pragma once

#include <memory>

#include "nn/tensor.h"

namespace rt {

class FlattenOp {
 public:
  virtual ~FlattenOp() = default;
  virtual const TensorSpec& y_spec() const = 0;
  virtual void forward(const Tensor& x, Tensor& y) = 0;     // writes y
  virtual void backward(const Tensor& dy, Tensor& dx) = 0;  // writes dx
};

std::unique_ptr<FlattenOp> make_flatten(const TensorSpec& x);

}  // namespace rt
