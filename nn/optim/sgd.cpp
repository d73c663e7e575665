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
void Sgd::step_range(double lr, int64_t begin, int64_t end, double grad_scale,
                     const std::vector<double>* grad_squares) {
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
    const size_t i = static_cast<size_t>(it - params.begin());
    const int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.value.numel());
    if (lo >= hi) continue;  // alignment padding
    const bool decays = options_.decay_bias_and_bn || p.role == ParamRole::kWeight;
    const bool lars = options_.lars.on;
    RT_CHECK(!lars || grad_squares || (lo == p.offset && hi == p.offset + p.value.numel()),
             "LARS updates whole parameters only; ", p.name, " is cut at arena floats [", begin, ", ", end, ")");
    const double rate = lars && p.role == ParamRole::kWeight ? lr * trust_ratio(i, grad_scale, grad_squares) : lr;
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

void Sgd::step_shard(double lr, int64_t begin, int64_t end, int64_t own_begin, int64_t own_end,
                     const std::function<void(std::vector<double>&)>& sum_over_ranks) {
  if (!options_.lars.on) {
    if (own_end > own_begin) step_range(lr, own_begin, own_end);
    return;
  }
  const std::vector<NormPiece> pieces = norm_pieces(begin, end);
  std::vector<double> sums(pieces.size(), 0.0);
  for (size_t k = 0; k < pieces.size(); ++k) {
    const NormPiece& p = pieces[k];
    if (p.begin >= own_end || p.end <= own_begin) continue;
    RT_ASSERT(p.begin >= own_begin && p.end <= own_end);  // the cuts include this rank's bounds
    sums[k] = squares(graph_.grad_arena(), p);
  }
  if (!pieces.empty()) sum_over_ranks(sums);
  std::vector<double> grad_squares(graph_.params().size(), 0.0);
  for (size_t k = 0; k < pieces.size(); ++k) grad_squares[pieces[k].param] += sums[k];
  if (own_end > own_begin) step_range(lr, own_begin, own_end, 1, &grad_squares);
}

std::vector<NormPiece> Sgd::norm_pieces(int64_t begin, int64_t end) const {
  std::vector<NormPiece> pieces;
  const std::vector<ParamRef>& params = graph_.params();
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamRef& p = params[i];
    int64_t lo = std::max(begin, p.offset);
    const int64_t hi = std::min(end, p.offset + p.value.numel());
    if (p.role != ParamRole::kWeight || lo >= hi) continue;
    for (auto cut = std::upper_bound(cuts_.begin(), cuts_.end(), lo); cut != cuts_.end() && *cut < hi; ++cut)
      pieces.push_back({i, lo, *cut}), lo = *cut;
    pieces.push_back({i, lo, hi});
  }
  return pieces;
}

double Sgd::squares(const float* arena, const NormPiece& p) const {
  return sum_of_squares(graph_.device(), arena + p.begin, p.end - p.begin);
}

double Sgd::squares_in_pieces(const float* arena, size_t param) const {
  const ParamRef& p = graph_.params()[param];
  double sum = 0;
  for (const NormPiece& piece : norm_pieces(p.offset, p.offset + p.value.numel())) sum += squares(arena, piece);
  return sum;
}

double Sgd::trust_ratio(size_t i, double grad_scale, const std::vector<double>* grad_squares) const {
  const double w = std::sqrt(squares_in_pieces(graph_.param_arena(), i));
  const double g =
      std::sqrt(grad_squares ? (*grad_squares)[i] : squares_in_pieces(graph_.grad_arena(), i)) * grad_scale;
  if (w == 0 || g == 0) return 1;
  return options_.lars.trust * w / (g + options_.weight_decay * w + options_.lars.epsilon);
}

}  // namespace rt
