// 2-D convolution (cross-correlation, as PyTorch): stride, padding, dilation, groups, optional bias.
// Planned once for an input spec; the op picks the output layout. Weights and their gradients are
// plain (K, C/groups, R, S); activations and their gradients stay in the planned layouts.
#pragma once

#include <memory>

#include "nn/plan_context.h"
#include "nn/tensor.h"

namespace rt {

struct Conv2dGeometry {
  int64_t in_channels = 0, out_channels = 0;
  int64_t kernel_h = 1, kernel_w = 1;
  int64_t stride_h = 1, stride_w = 1;
  int64_t pad_h = 0, pad_w = 0;
  int64_t dilation_h = 1, dilation_w = 1;
  int64_t groups = 1;
  bool bias = false;

  // An r x r kernel with the same stride and padding on both axes; other fields at their defaults.
  static Conv2dGeometry square(int64_t c, int64_t k, int64_t r, int64_t stride = 1, int64_t pad = 0);
  Shape weight_shape() const { return {out_channels, in_channels / groups, kernel_h, kernel_w}; }  // (K, C/g, R, S)
  Shape output_shape(const Shape& x) const;  // floor mode, as PyTorch
  void validate(const Shape& x) const;       // rt::Error naming the mismatch
};

class Conv2dOp {
 public:
  virtual ~Conv2dOp() = default;
  virtual const TensorSpec& y_spec() const = 0;
  // What the op runs: kWinograd only where it was asked for and the backend has it for this shape.
  virtual ConvAlgorithm algorithm() const = 0;
  // How many of its directions (forward, backward data, backward weights) run a plan of cuDNN's
  // graph API (Note [cuDNN graph API] in nn/ops/cuda/cudnn_graph.h); 0 on the CPU.
  virtual int cudnn_graph_directions() const { return 0; }
  // writes y.
  virtual void forward(const Tensor& x, const Tensor& w, const Tensor* b, Tensor& y) = 0;
  // writes dx.
  virtual void backward_data(const Tensor& dy, const Tensor& w, Tensor& dx) = 0;
  // writes dw and db (db only with bias).
  virtual void backward_weights(const Tensor& x, const Tensor& dy, Tensor& dw, Tensor* db) = 0;
};

// need_dx = false skips planning backward-data (the first layer never needs it). kWinograd falls
// back to direct where the backend has no Winograd kernel for this geometry (see algorithm()); on
// the CPU, plan.precision bf16 computes in bf16 (Note [CPU bfloat16] in nn/cpu_bf16.h), and
// plan.cudnn_graph has no effect.
std::unique_ptr<Conv2dOp> make_conv2d(const Conv2dGeometry& g, const TensorSpec& x, bool need_dx,
                                      const PlanContext& plan = {});

}  // namespace rt
