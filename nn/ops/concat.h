// Concatenation along channels of (N, C_i, H, W) inputs; the op chooses the output layout and
// splits the gradient back into each input's layout.
#pragma once

#include <memory>
#include <vector>

#include "nn/tensor.h"

namespace rt {

class ConcatOp {
 public:
  virtual ~ConcatOp() = default;
  virtual const TensorSpec& y_spec() const = 0;
  virtual void forward(const std::vector<const Tensor*>& xs, Tensor& y) = 0;     // writes y
  virtual void backward(const Tensor& dy, const std::vector<Tensor*>& dxs) = 0;  // writes each dx
};

std::unique_ptr<ConcatOp> make_concat(const std::vector<TensorSpec>& xs);

}  // namespace rt
