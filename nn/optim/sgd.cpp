#include "nn/optim/sgd.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "nn/ops/agreed_reductions.h"
#include "nn/ops/sgd_update.h"

namespace rt {

Sgd::Sgd(Graph& graph, SgdOptions options)
    : graph_(graph),
      options_(options),
      momentum_(plain_spec({std::max<int64_t>(graph.arena_floats(), 1)}, graph.device())) {
  RT_CHECK(options.momentum >= 0 && options.momentum < 1, "momentum must be in [0, 1), got ", options.momentum);
  RT_CHECK(options.weight_decay >= 0, "weight decay must be >= 0, got ", options.weight_decay);
  RT_CHECK(!options.nesterov || options.momentum > 0, "Nesterov momentum needs momentum > 0");
  RT_CHECK(!options.lars.on || (options.lars.trust > 0 && options.lars.epsilon >= 0),
           "LARS needs a trust coefficient > 0 and an epsilon >= 0, got ", options.lars.trust, " and ",
           options.lars.epsilon);
  for (const ParamRef& p : graph.params())
    momentum_views_.emplace_back(p.value.spec(), momentum_.data() + p.offset, nullptr);
}

// Consecutive parameters with the same step are updated by one sgd_update over their whole
// span: the alignment padding between them is zero in all three arenas and stays zero, and one
// call per run instead of one per parameter is what keeps the GPU's step from being hundreds of
// tiny kernel launches.
void Sgd::step_range(double lr, int64_t begin, int64_t end, double grad_scale) {
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
                 momentum_.data() + run_lo, run_hi - run_lo);
    run_lo = run_hi = 0;
  };
  for (; it != params.end() && it->offset < end; ++it) {
    const ParamRef& p = *it;
    const int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.value.numel());
    if (lo >= hi) continue;  // alignment padding
    const bool decays = options_.decay_bias_and_bn || p.role == ParamRole::kWeight;
    const bool lars = options_.lars.on;
    RT_CHECK(!lars || (lo == p.offset && hi == p.offset + p.value.numel()), "LARS updates whole parameters only; ",
             p.name, " is cut at arena floats [", begin, ", ", end, ")");
    const double rate = lars && p.role == ParamRole::kWeight ? lr * trust_ratio(p, grad_scale) : lr;
    const SgdStep s{static_cast<float>(rate),
                    static_cast<float>(options_.momentum),
                    decays ? static_cast<float>(options_.weight_decay) : 0.0f,
                    options_.nesterov,
                    static_cast<float>(grad_scale),
                    lars};
    if (run_hi > run_lo && (s.weight_decay != run.weight_decay || s.lr != run.lr)) flush();
    if (run_hi == run_lo) run = s, run_lo = lo;
    run_hi = hi;
  }
  flush();
}

double Sgd::trust_ratio(const ParamRef& p, double grad_scale) const {
  const int64_t n = p.value.numel();
  const double w = std::sqrt(sum_of_squares(graph_.device(), graph_.param_arena() + p.offset, n));
  const double g = std::sqrt(sum_of_squares(graph_.device(), graph_.grad_arena() + p.offset, n)) * grad_scale;
  if (w == 0 || g == 0) return 1;
  return options_.lars.trust * w / (g + options_.weight_decay * w + options_.lars.epsilon);
}

}  // namespace rt
