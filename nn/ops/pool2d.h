// Max and average pooling over H and W (floor mode, as PyTorch), including global pooling and
// adaptive pooling to a given output size with PyTorch's window rule
// (start = floor(i * in / out), end = ceil((i + 1) * in / out)).
#pragma once

#include <memory>

#include "nn/tensor.h"

namespace rt {

enum class PoolKind { kMax, kAvg };

struct Pool2dGeometry {
  PoolKind kind = PoolKind::kMax;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  bool count_include_pad = true;  // average pooling: divide by the full window (PyTorch's default)

  Shape output_shape(const Shape& x) const;
  void validate(const Shape& x) const;
};

// Fixed-window geometry for adaptive pooling where the windows are all equal (in % out == 0),
// which is what the fast primitive can run; others use the general adaptive path.
bool adaptive_is_uniform(const Shape& x, int64_t out_h, int64_t out_w);

class Pool2dOp {
 public:
  virtual ~Pool2dOp() = default;
  virtual const TensorSpec& y_spec() const = 0;
  virtual void forward(const Tensor& x, Tensor& y, bool training) = 0;  // writes y
  virtual void backward(const Tensor& dy, Tensor& dx) = 0;              // writes dx
};

std::unique_ptr<Pool2dOp> make_pool2d(const Pool2dGeometry& g, const TensorSpec& x);
// Average pooling to (out_h, out_w) with PyTorch's adaptive windows; global pooling is (1, 1).
std::unique_ptr<Pool2dOp> make_adaptive_avg_pool2d(int64_t out_h, int64_t out_w, const TensorSpec& x);

}  // namespace rt
