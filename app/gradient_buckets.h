// The gradient buckets of a planned graph under the [dist] settings: what the trainer's reducer
// averages and what `ringtrain simulate` models, from this one function.
#pragma once

#include <vector>

#include "config/config.h"
#include "dist/bucket_plan.h"
#include "nn/graph.h"

namespace rt {

struct GradientBuckets {
  std::vector<ParamExtent> params;  // arena order: the order backward finishes them
  std::vector<Bucket> buckets;
};

GradientBuckets plan_gradient_buckets(const Graph& graph, const DistConfig& dist);

}  // namespace rt
