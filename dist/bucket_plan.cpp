#include "dist/bucket_plan.h"

namespace rt {

std::vector<Bucket> plan_buckets(const std::vector<ParamExtent>& params, int64_t first_cap_floats, int64_t cap_floats) {
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamExtent& p = params[i];
    if (!buckets.empty() && cap_floats > 0) {
      Bucket& b = buckets.back();
      const int64_t cap = buckets.size() == 1 ? first_cap_floats : cap_floats;
      const int64_t grown = p.offset + p.count - b.offset;
      if (grown <= cap) {
        b.count = grown;
        b.end_param = i + 1;
        continue;
      }
    }
    buckets.push_back({p.offset, p.count, i, i + 1});
  }
  return buckets;
}

}  // namespace rt
