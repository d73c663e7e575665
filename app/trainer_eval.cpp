// Evaluation on the test set, sharded over ranks, with batch-norm statistics averaged first.
#include <algorithm>

#include "app/consistency.h"
#include "app/trainer.h"
#include "data/sampler.h"
#include "nn/ops/softmax_cross_entropy.h"

namespace rt {
namespace {

// The rows [0, rows) of a plain (N, K) tensor, without copying.
Tensor leading_rows(const Tensor& t, int64_t rows) {
  return Tensor(plain_spec({rows, t.dim(1)}, t.device()), const_cast<float*>(t.data()), nullptr);
}

void copy_state(Graph& from, Graph& to) {
  copy_bytes(to.param_arena(), to.device(), from.param_arena(), from.device(),
             static_cast<size_t>(from.arena_floats()) * sizeof(float));
  for (size_t i = 0; i < from.buffers().size(); ++i) {
    const Tensor& src = from.buffers()[i].value;
    copy_bytes(const_cast<float*>(to.buffers()[i].value.data()), to.device(), src.data(), src.device(), src.bytes());
  }
}

}  // namespace

void Trainer::average_buffers() {
  if (world_.size() == 1) return;
  const float inv = 1.0f / static_cast<float>(world_.size());
  for (const BufferRef& b : graph_->buffers())
    if (!b.frozen)  // the same on every rank, and an average of copies need not round to them
      on_host(const_cast<float*>(b.value.data()), b.value.numel(), graph_->device(), [&](float* v) {
        world_.allreduce_sum(v, b.value.numel(), {&between_steps_, "the batch-norm statistics' average"});
        for (int64_t i = 0; i < b.value.numel(); ++i) v[i] *= inv;
      });
}

EvalResult Trainer::evaluate() {
  RT_CHECK(!data_.synthetic, "data.source = \"synthetic\" has no test set to evaluate");
  average_buffers();
  copy_state(*graph_, *eval_graph_);
  const EpochSampler sampler(data_.test->count(), config_.eval.batch, 0, world_.rank(), world_.size(), TailPolicy::kPad,
                             false);
  const std::vector<int64_t> indices = sampler.eval_indices();
  const int64_t B = config_.eval.batch;
  const int64_t sample = numel(data_.input_shape);
  const std::shared_ptr<void> image_memory =
      allocate_host_staging(eval_graph_->device(), static_cast<size_t>(B * sample) * sizeof(float));
  float* images = static_cast<float*>(image_memory.get());
  std::vector<int32_t> labels(static_cast<size_t>(B));
  // A short last chunk is padded with its first sample; only the valid rows are scored.
  std::vector<int64_t> padded;
  for (size_t start = 0; start < indices.size(); start += static_cast<size_t>(B))
    for (size_t i = 0; i < static_cast<size_t>(B); ++i)
      padded.push_back(indices[start + (start + i < indices.size() ? i : 0)]);
  data_.test->start(0, padded, B);
  double totals[4] = {0, 0, 0, 0};  // loss sum, top-1, top-5, samples
  for (size_t start = 0; start < indices.size(); start += static_cast<size_t>(B)) {
    const int64_t valid = std::min<int64_t>(B, static_cast<int64_t>(indices.size() - start));
    const LentBatch batch = data_.test->borrow(images, labels.data());
    const Tensor& logits = eval_graph_->forward(batch.images, RunContext{false, 0, 0});
    const LossResult l = softmax_cross_entropy(leading_rows(logits, valid), batch.labels, 0.0, nullptr);
    data_.test->release();
    totals[0] += l.loss * static_cast<double>(valid);
    totals[1] += static_cast<double>(l.correct1);
    totals[2] += static_cast<double>(l.correct5);
    totals[3] += static_cast<double>(valid);
  }
  // Exact: counts, summed over every rank's shard.
  world_.allreduce_sum(totals, 4, {&between_steps_, "the evaluation's totals"});
  EvalResult r;
  r.samples = static_cast<int64_t>(totals[3]);
  r.loss = totals[0] / totals[3];
  r.top1 = totals[1] / totals[3];
  r.top5 = totals[2] / totals[3];
  return r;
}

}  // namespace rt
