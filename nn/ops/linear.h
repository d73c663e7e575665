// Fully connected layer: y (N, O) = x (N, I) w^T + b, all plain; w is (O, I) as in PyTorch.
#pragma once

#include <memory>

#include "nn/plan_context.h"
#include "nn/tensor.h"

namespace rt {

class LinearOp {
 public:
  virtual ~LinearOp() = default;
  virtual void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) = 0;  // writes y
  // Writes dx. Under the CPU's bf16 it reads the copy of w the last forward made, as PyTorch's
  // autograd reads autocast's cast: call it after a forward on the same weights.
  virtual void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) = 0;
  // writes dw and db (db only with bias).
  virtual void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) = 0;
};

// On the GPU, plan.precision other than fp32 lets the products round their inputs to TF32; on the
// CPU, bf16 computes from bf16 copies of x, w and dy (Note [CPU bfloat16] in nn/cpu_bf16.h).
std::unique_ptr<LinearOp> make_linear(int64_t batch, int64_t in_features, int64_t out_features, bool bias, bool need_dx,
                                      Device device, const PlanContext& plan = {});

}  // namespace rt
