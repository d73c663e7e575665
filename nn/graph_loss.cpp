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

namespace {

// Output k's loss r, of weight w, into the step's total.
void add_output_loss(LossResult& total, size_t k, double w, const LossResult& r, std::vector<double>* per_output) {
  total.loss += w * r.loss;
  if (k == 0) total.correct1 = r.correct1, total.correct5 = r.correct5;
  if (per_output) per_output->push_back(r.loss);
}

}  // namespace

StepLoss::StepLoss(const Graph& graph) {
  for (size_t k = 0; k < graph.output_count(); ++k) {
    ops_.push_back(make_softmax_cross_entropy(graph.output_spec(k)));
    weights_.push_back(graph.output_loss_weight(k));
  }
}

void StepLoss::set_targets(const int32_t* targets) {
  for (auto& op : ops_) op->set_targets(targets);
}

void StepLoss::compute(const Graph& graph, double label_smoothing, OutputGradients* grads, double grad_scale) {
  for (size_t k = 0; k < ops_.size(); ++k)
    ops_[k]->compute(graph.output(k), label_smoothing, grads ? &grads->tensors()[k] : nullptr,
                     weights_[k] * grad_scale);
}

LossResult StepLoss::result(std::vector<double>* per_output) {
  LossResult total;
  if (per_output) per_output->clear();
  for (size_t k = 0; k < ops_.size(); ++k) add_output_loss(total, k, weights_[k], ops_[k]->result(), per_output);
  return total;
}

LossResult graph_loss(const Graph& graph, const int32_t* targets, double label_smoothing, OutputGradients* grads,
                      std::vector<double>* per_output, double grad_scale) {
  // Per call, without StepLoss's memory of its own (planned once, for a trainer's many steps).
  LossResult total;
  if (per_output) per_output->clear();
  for (size_t k = 0; k < graph.output_count(); ++k) {
    const double w = graph.output_loss_weight(k);
    add_output_loss(total, k, w,
                    softmax_cross_entropy(graph.output(k), targets, label_smoothing,
                                          grads ? &grads->tensors()[k] : nullptr, w * grad_scale),
                    per_output);
  }
  return total;
}

}  // namespace rt
