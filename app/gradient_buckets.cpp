#include "app/gradient_buckets.h"

namespace rt {

GradientBuckets plan_gradient_buckets(const Graph& graph, const DistConfig& dist) {
  GradientBuckets g;
  for (const ParamRef& p : graph.trainable_params()) {
    g.params.push_back({p.offset, p.value.numel()});
    g.shapes.push_back(p.value.shape());
  }
  const auto floats = [](double mib) { return static_cast<int64_t>(mib * 1024 * 1024 / sizeof(float)); };
  g.buckets = plan_buckets(g.params, floats(dist.first_bucket_mb), floats(dist.bucket_mb));
  return g;
}

PowerSgdOptions powersgd_options(const DistConfig& dist, uint64_t seed) {
  return {dist.powersgd_rank, dist.powersgd_min_ratio, dist.powersgd_start_step, seed};
}

}  // namespace rt
