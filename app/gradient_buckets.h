// The gradient buckets of a planned graph under the [dist] settings: what the trainer's reducer
// averages and what `ringtrain simulate` models, from this one function.
#pragma once

#include <vector>

#include "config/config.h"
#include "dist/bucket_plan.h"
#include "dist/powersgd_buckets.h"
#include "nn/graph.h"

namespace rt {

struct GradientBuckets {
  std::vector<ParamExtent> params;  // arena order: the order backward finishes them
  std::vector<Shape> shapes;        // each parameter's tensor shape, as params: what PowerSGD views as n x m
  std::vector<Bucket> buckets;
};

GradientBuckets plan_gradient_buckets(const Graph& graph, const DistConfig& dist);

// dist.compression = "powersgd"'s settings; seed: the first Q's (train.seed in a run).
PowerSgdOptions powersgd_options(const DistConfig& dist, uint64_t seed = 0);

}  // namespace rt
