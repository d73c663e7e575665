#include "nn/ops/cuda/algorithm_choice.h"

namespace rt::cuda {

std::optional<AlgorithmTrial> choose_algorithm(const std::vector<AlgorithmTrial>& trials, size_t workspace_limit,
                                               bool allow_transforms) {
  std::optional<AlgorithmTrial> best;
  for (const AlgorithmTrial& t : trials) {
    if (!t.ok || t.workspace > workspace_limit || (t.transform && !allow_transforms)) continue;
    if (!best || t.ms < best->ms) best = t;
  }
  return best;
}

bool engine_allowed(const EngineNotes& e, const EngineRules& r) {
  if (!e.known || e.down_converts_inputs || e.reduced_precision_sums) return false;
  if (e.transform && !r.allow_transforms) return false;
  return !(r.float32_data && e.tensor_cores && !r.allow_tf32);
}

}  // namespace rt::cuda
