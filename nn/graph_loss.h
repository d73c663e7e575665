// The training loss of a graph: softmax cross-entropy on every output, summed with the outputs'
// loss weights (Inception-v3: main + 0.4 x aux), with the gradient of that total written for each
// output. Accuracy counts come from the main output alone, as torchvision reports them.
#pragma once

#include <cstdint>
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

// After graph.forward(): loss = sum_k w_k CE(output k). Writes d(loss)/d(output k), times
// grad_scale (the loss scale under fp16, else 1), into grads (if non-null). `per_output` (if
// non-null) receives each output's unweighted loss.
LossResult graph_loss(const Graph& graph, const int32_t* targets, double label_smoothing, OutputGradients* grads,
                      std::vector<double>* per_output = nullptr, double grad_scale = 1);

}  // namespace rt
