// Clipping by global norm, as torch.nn.utils.clip_grad_norm_ (norm_type 2): the norm of all
// gradients taken together, and the factor min(1, max_norm / (norm + 1e-6)) that the optimizer
// multiplies every gradient by (Sgd::step's grad_scale).
#pragma once

#include "nn/graph.h"

namespace rt {

struct GradNorm {
  double total = 0;  // the norm of the gradients (times grad_scale)
  double coef = 1;   // at most 1
};

// The norm of graph's gradient arena multiplied by grad_scale (1 / the loss scale under fp16:
// the norm of the true gradients). The arena's alignment padding is zero and adds nothing. The
// same on every rank that holds the same gradients, whatever its thread count; on the GPU it
// is summed on the device.
GradNorm clip_grad_norm(Graph& graph, double max_norm, double grad_scale = 1);

}  // namespace rt
