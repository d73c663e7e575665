// The training loss of a graph: softmax cross-entropy on every output, summed with the outputs'
// loss weights (Inception-v3: main + 0.4 x aux), with the gradient of that total written for each
// output. Accuracy counts come from the main output alone, as torchvision reports them.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "nn/graph.h"
#include "nn/ops/softmax_cross_entropy.h"

namespace rt {

// Holds one gradient tensor per output of `graph`, shaped as the outputs.
class OutputGradients {
 public:
  explicit OutputGradients(const Graph& graph);
  std::vector<const Tensor*> views() const;
  std::vector<Tensor>& tensors() { return dy_; }

 private:
  std::vector<Tensor> dy_;
};

// The loss of a training step, planned once for a graph: one SoftmaxCrossEntropyOp per output, in
// its three phases, so that compute() can be recorded with the step's device work (Note [CUDA
// graph steps] in nn/device.h).
class StepLoss {
 public:
  explicit StepLoss(const Graph& graph);  // a planned graph
  // targets: the batch's labels in host memory (checked: rt::Error names a sample out of range).
  void set_targets(const int32_t* targets);
  // After the graph's forward work: enqueues every output's loss, and its gradient, times
  // grad_scale, into grads (if non-null).
  void compute(const Graph& graph, double label_smoothing, OutputGradients* grads, double grad_scale);
  // Waits for compute's work: the weighted total, the main output's top-1 / top-5 counts, and
  // each output's unweighted loss into per_output (if non-null).
  LossResult result(std::vector<double>* per_output = nullptr);

 private:
  std::vector<std::unique_ptr<SoftmaxCrossEntropyOp>> ops_;  // one per output
  std::vector<double> weights_;
};

// After graph.forward(): loss = sum_k w_k CE(output k). Writes d(loss)/d(output k), times
// grad_scale (the loss scale under fp16, else 1), into grads (if non-null). `per_output` (if
// non-null) receives each output's unweighted loss.
LossResult graph_loss(const Graph& graph, const int32_t* targets, double label_smoothing, OutputGradients* grads,
                      std::vector<double>* per_output = nullptr, double grad_scale = 1);

}  // namespace rt
