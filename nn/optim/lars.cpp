#include "nn/optim/lars.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"

namespace rt {

Lars::Lars(Graph& graph, SgdOptions sgd, LarsOptions lars) : Sgd(graph, sgd), lars_(lars), norms_(graph) {
  RT_CHECK(lars.trust > 0 && lars.epsilon >= 0, "LARS needs a trust coefficient > 0 and an epsilon >= 0, got ",
           lars.trust, " and ", lars.epsilon);
}

void Lars::update(double lr, int64_t begin, int64_t end, double grad_scale) {
  for (const ParamRef& p : graph_.params()) {
    const int64_t lo = std::max(begin, p.offset), hi = std::min(end, p.offset + p.value.numel());
    RT_CHECK(lo >= hi || (lo == p.offset && hi == p.offset + p.value.numel()), "LARS updates whole parameters only; ",
             p.name, " is cut at arena floats [", begin, ", ", end, ")");
  }
  update_with(begin, end, grad_scale, /*lr_in_momentum=*/true,
              [&](size_t i) { return rate(i, lr, grad_scale, nullptr); });
}

void Lars::update_part(double lr, int64_t begin, int64_t end, int64_t own_begin, int64_t own_end,
                       const SumOverRanks& sum_over_ranks) {
  const std::vector<NormPiece> pieces = norms_.pieces(begin, end);
  std::vector<double> sums(pieces.size(), 0.0);
  for (size_t k = 0; k < pieces.size(); ++k) {
    const NormPiece& p = pieces[k];
    if (p.begin >= own_end || p.end <= own_begin) continue;
    RT_ASSERT(p.begin >= own_begin && p.end <= own_end);  // the cuts include this rank's bounds
    sums[k] = norms_.squares(graph_.grad_arena(), p);
  }
  if (!pieces.empty()) sum_over_ranks(sums);
  std::vector<double> grad_squares(graph_.params().size(), 0.0);
  for (size_t k = 0; k < pieces.size(); ++k) grad_squares[pieces[k].param] += sums[k];
  if (own_end > own_begin)
    update_with(own_begin, own_end, 1, /*lr_in_momentum=*/true,
                [&](size_t i) { return rate(i, lr, 1, &grad_squares); });
}

double Lars::rate(size_t i, double lr, double grad_scale, const std::vector<double>* grad_squares) const {
  return graph_.params()[i].role == ParamRole::kWeight ? lr * trust_ratio(i, grad_scale, grad_squares) : lr;
}

double Lars::trust_ratio(size_t i, double grad_scale, const std::vector<double>* grad_squares) const {
  const double w = std::sqrt(norms_.squares_in_pieces(graph_.param_arena(), i));
  const double g =
      std::sqrt(grad_squares ? (*grad_squares)[i] : norms_.squares_in_pieces(graph_.grad_arena(), i)) * grad_scale;
  if (w == 0 || g == 0) return 1;
  return lars_.trust * w / (g + options().weight_decay * w + lars_.epsilon);
}

}  // namespace rt
