#include "dist/bucket_plan.h"

namespace rt {
namespace {

// Greedy buckets over params [begin, end), the first closing at first_cap, later ones at cap.
void plan_run(const std::vector<ParamExtent>& params, size_t begin, size_t end, int64_t first_cap, int64_t cap,
              std::vector<Bucket>& buckets) {
  for (size_t i = begin; i < end; ++i) {
    const ParamExtent& p = params[i];
    if (!buckets.empty() && cap > 0) {
      Bucket& b = buckets.back();
      const int64_t grown = p.offset + p.count - b.offset;
      if (grown <= (buckets.size() == 1 ? first_cap : cap)) {
        b.count = grown;
        b.end_param = i + 1;
        continue;
      }
    }
    buckets.push_back({p.offset, p.count, i, i + 1});
  }
}

}  // namespace

std::vector<Bucket> plan_buckets(const std::vector<ParamExtent>& params, int64_t first_cap_floats, int64_t cap_floats) {
  std::vector<Bucket> buckets;
  if (cap_floats == 0 || params.empty()) {  // one bucket per parameter
    plan_run(params, 0, params.size(), 0, 0, buckets);
    return buckets;
  }
  // The last bucket: the trailing parameters that fit in first_cap (at least one).
  size_t tail = params.size() - 1;
  const int64_t end = params.back().offset + params.back().count;
  while (tail > 0 && end - params[tail - 1].offset <= first_cap_floats) --tail;
  plan_run(params, 0, tail, first_cap_floats, cap_floats, buckets);
  buckets.push_back({params[tail].offset, end - params[tail].offset, tail, params.size()});
  return buckets;
}

}  // namespace rt
