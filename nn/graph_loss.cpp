#include "nn/graph_loss.h"

namespace rt {

OutputGradients::OutputGradients(const Graph& graph) {
  for (size_t k = 0; k < graph.output_count(); ++k) dy_.emplace_back(graph.output_spec(k));
}

std::vector<const Tensor*> OutputGradients::views() const {
  std::vector<const Tensor*> v;
  for (const Tensor& t : dy_) v.push_back(&t);
  return v;
}

LossResult graph_loss(const Graph& graph, const int32_t* targets, double label_smoothing, OutputGradients* grads,
                      std::vector<double>* per_output, double grad_scale) {
  LossResult total;
  if (per_output) per_output->clear();
  for (size_t k = 0; k < graph.output_count(); ++k) {
    const double w = graph.output_loss_weight(k);
    const LossResult r = softmax_cross_entropy(graph.output(k), targets, label_smoothing,
                                               grads ? &grads->tensors()[k] : nullptr, w * grad_scale);
    total.loss += w * r.loss;
    if (k == 0) total.correct1 = r.correct1, total.correct5 = r.correct5;
    if (per_output) per_output->push_back(r.loss);
  }
  return total;
}

}  // namespace rt
