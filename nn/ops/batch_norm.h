// Batch normalisation over (N, H, W) per channel, on the layout of its input.
// Training normalises with batch statistics and updates the running ones as PyTorch does
// (running = (1 - momentum) running + momentum batch, variance unbiased); inference uses the
// running statistics. gamma, beta, running mean and variance are plain (C).
#pragma once

#include <memory>

#include "nn/tensor.h"

namespace rt {

struct BatchNormOptions {
  double eps = 1e-5;
  double momentum = 0.1;
  // The output is max(0, batch norm), and backward passes dy only where that output is positive
  // (Note [ReLU in batch norm] in nn/graph.cpp). The CPU's alone; not with backward_inference.
  bool fuse_relu = false;
};

class BatchNormOp {
 public:
  virtual ~BatchNormOp() = default;
  // writes y; training also writes the saved batch mean/variance and updates running stats.
  virtual void forward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                Tensor& running_mean, Tensor& running_var) = 0;
  // writes y from running statistics.
  virtual void forward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, Tensor& y,
                                 const Tensor& running_mean, const Tensor& running_var) = 0;
  // writes dx, dgamma, dbeta; uses the statistics saved by the last forward_training.
  virtual void backward_training(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& dy, Tensor& dx,
                                 Tensor& dgamma, Tensor& dbeta) = 0;
  // writes dx, dgamma, dbeta for the inference forward (the statistics are constants).
  virtual void backward_inference(const Tensor& x, const Tensor& gamma, const Tensor& beta, const Tensor& dy,
                                  Tensor& dx, Tensor& dgamma, Tensor& dbeta, const Tensor& running_mean,
                                  const Tensor& running_var) = 0;
};

// Output spec equals x.
std::unique_ptr<BatchNormOp> make_batch_norm(const BatchNormOptions& options, const TensorSpec& x);

}  // namespace rt
