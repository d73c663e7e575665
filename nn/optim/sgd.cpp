#include "nn/optim/sgd.h"

#include <algorithm>

#include "base/check.h"
#include "nn/ops/sgd_update.h"

namespace rt {

Sgd::Sgd(Graph& graph, SgdOptions options) : Optimizer(graph), options_(options) {
  RT_CHECK(options.momentum >= 0 && options.momentum < 1, "momentum must be in [0, 1), got ", options.momentum);
  RT_CHECK(options.weight_decay >= 0, "weight decay must be >= 0, got ", options.weight_decay);
  RT_CHECK(!options.nesterov || options.momentum > 0, "Nesterov momentum needs momentum > 0");
  add_state("momentum");
}

void Sgd::update(double lr, int64_t begin, int64_t end, double grad_scale) {
  update_with(begin, end, grad_scale, /*lr_in_momentum=*/false, [lr](size_t) { return lr; });
}

// Consecutive parameters with the same step are updated by one sgd_update over their whole
// span: the alignment padding between them is zero in all three arenas and stays zero, and one
// call per run instead of one per parameter is what keeps the GPU's step from being hundreds of
// tiny kernel launches.
void Sgd::update_with(int64_t begin, int64_t end, double grad_scale, bool lr_in_momentum,
                      const std::function<double(size_t)>& rate_of) {
  std::vector<ParamRef>& params = graph_.params();
  // Parameters sit in increasing offset order: start at the last one beginning at or before `begin`.
  auto it = std::upper_bound(params.begin(), params.end(), begin,
                             [](int64_t at, const ParamRef& p) { return at < p.offset; });
  if (it != params.begin()) --it;
  SgdStep run{};
  int64_t run_lo = 0, run_hi = 0;  // the pending span [run_lo, run_hi) of arena floats
  const auto flush = [&] {
    if (run_hi > run_lo)
      sgd_update(graph_.device(), run, graph_.param_arena() + run_lo, graph_.grad_arena() + run_lo,
                 momentum_arena() + run_lo, run_hi - run_lo);
    run_lo = run_hi = 0;
  };
  for (; it != params.end() && it->offset < end; ++it) {
    const ParamRef& p = *it;
    const int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.value.numel());
    if (lo >= hi) continue;  // alignment padding
    const bool decays = options_.decay_bias_and_bn || p.role == ParamRole::kWeight;
    const SgdStep s{static_cast<float>(rate_of(static_cast<size_t>(it - params.begin())) * p.lr_scale),
                    static_cast<float>(options_.momentum),
                    decays ? static_cast<float>(options_.weight_decay) : 0.0f,
                    options_.nesterov,
                    static_cast<float>(grad_scale),
                    lr_in_momentum};
    if (run_hi > run_lo && (s.weight_decay != run.weight_decay || s.lr != run.lr)) flush();
    if (run_hi == run_lo) run = s, run_lo = lo;
    run_hi = hi;
  }
  flush();
}

}  // namespace rt
