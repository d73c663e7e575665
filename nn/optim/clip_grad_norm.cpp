#include "nn/optim/clip_grad_norm.h"

#include <algorithm>
#include <cmath>

#include "nn/ops/agreed_reductions.h"

namespace rt {

GradNorm clip_grad_norm(Graph& graph, double max_norm, double grad_scale) {
  // Every rank scales its update by the factor: Note [Agreed reductions] keeps the ranks' sums
  // equal to the last bit whatever their thread counts. In double: ResNet-101 sums 44 M squares.
  const double squares = sum_of_squares(graph.device(), graph.grad_arena(), graph.grad_floats());
  GradNorm r;
  r.total = std::sqrt(squares) * grad_scale;
  r.coef = std::min(1.0, max_norm / (r.total + 1e-6));
  return r;
}

}  // namespace rt
