#include "nn/optim/sgd.h"

#include <algorithm>

#include "base/check.h"
#include "nn/ops/sgd_update.h"

namespace rt {

Sgd::Sgd(Graph& graph, SgdOptions options)
    : graph_(graph), options_(options), momentum_(plain_spec({std::max<int64_t>(graph.arena_floats(), 1)}, graph.device())) {
  RT_CHECK(options.momentum >= 0 && options.momentum < 1, "momentum must be in [0, 1), got ", options.momentum);
  RT_CHECK(options.weight_decay >= 0, "weight decay must be >= 0, got ", options.weight_decay);
  RT_CHECK(!options.nesterov || options.momentum > 0, "Nesterov momentum needs momentum > 0");
  for (const ParamRef& p : graph.params())
    momentum_views_.emplace_back(p.value.spec(), momentum_.data() + p.offset, nullptr);
}

void Sgd::step_range(double lr, int64_t begin, int64_t end) {
  std::vector<ParamRef>& params = graph_.params();
  // Parameters sit in increasing offset order: start at the last one beginning at or before `begin`.
  auto it = std::upper_bound(params.begin(), params.end(), begin,
                             [](int64_t at, const ParamRef& p) { return at < p.offset; });
  if (it != params.begin()) --it;
  for (; it != params.end() && it->offset < end; ++it) {
    ParamRef& p = *it;
    const int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.value.numel());
    if (lo >= hi) continue;  // alignment padding
    const bool decays = options_.decay_bias_and_bn || p.role == ParamRole::kWeight;
    const SgdStep s{static_cast<float>(lr), static_cast<float>(options_.momentum),
                    decays ? static_cast<float>(options_.weight_decay) : 0.0f, options_.nesterov};
    const int64_t at = lo - p.offset;
    sgd_update(graph_.device(), s, p.value.data() + at, p.grad.data() + at,
               momentum_.data() + lo, hi - lo);
  }
}

}  // namespace rt
