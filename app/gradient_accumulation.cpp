#include "app/gradient_accumulation.h"

#include <algorithm>

#include "nn/ops/add.h"

namespace rt {

GradientAccumulation::GradientAccumulation(Graph& graph, GradReducer* reducer)
    : graph_(graph), sum_(plain_spec({std::max<int64_t>(graph.grad_floats(), 1)}, graph.device())) {
  graph.on_grad_ready([this, reducer](size_t i) {
    if (!last_) return;  // no collective before the last micro-batch, as DDP's no_sync
    ParamRef& p = graph_.params()[i];
    accumulate(p.grad, Tensor(p.grad.spec(), sum_.data() + p.offset, nullptr));
    if (reducer) reducer->on_grad_ready(i);
  });
}

void GradientAccumulation::add(bool first, Timeline* timeline) {
  ComputeSpan span(timeline, "sum micro-batch gradients");
  const int64_t n = graph_.grad_floats();
  if (first) {
    copy_bytes(sum_.data(), graph_.device(), graph_.grad_arena(), graph_.device(),
               static_cast<size_t>(n) * sizeof(float));
    return;
  }
  Tensor sum(plain_spec({n}, graph_.device()), sum_.data(), nullptr);
  accumulate(sum, Tensor(plain_spec({n}, graph_.device()), graph_.grad_arena(), nullptr));
}

}  // namespace rt
