// Inverted dropout: in training each element is zeroed with probability p and the rest scaled by
// 1/(1-p); the mask is drawn from (seed, step) by a counter-based generator, so it is the same
// whatever the thread count. Works on any layout; identity in inference.
#pragma once

#include <cstdint>
#include <memory>

#include "nn/tensor.h"

namespace rt {

class DropoutOp {
 public:
  virtual ~DropoutOp() = default;
  // Before each training forward: the (seed, step) the next mask derives from. A GPU op keeps
  // them in its own device memory, written by work enqueued now, so that a recorded forward reads
  // the current step when it is replayed (Note [CUDA graph steps] in nn/device.h).
  virtual void set_step(uint64_t seed, uint64_t step) = 0;
  // writes y and keeps the mask for backward; the mask of the last set_step.
  virtual void forward(const Tensor& x, Tensor& y, bool training) = 0;
  virtual void backward(const Tensor& dy, Tensor& dx) = 0;  // writes dx
};

std::unique_ptr<DropoutOp> make_dropout(double p, const TensorSpec& x);

}  // namespace rt
