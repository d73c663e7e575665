// The bucket planner: contiguous, in order, covering every parameter once, honouring the caps.
#include <gtest/gtest.h>

#include "dist/bucket_plan.h"

namespace rt {
namespace {

std::vector<ParamExtent> extents(std::initializer_list<int64_t> sizes) {
  std::vector<ParamExtent> p;
  int64_t at = 0;
  for (int64_t n : sizes) {
    p.push_back({at, n});
    at += (n + 15) / 16 * 16;
  }
  return p;
}

TEST(BucketPlan, ZeroCapGivesOneBucketPerParameter) {
  const auto b = plan_buckets(extents({5, 100, 7}), 1000, 0);
  ASSERT_EQ(b.size(), 3u);
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(b[i].first_param, i);
}

TEST(BucketPlan, SmallFirstAndLastBucketsThenCapsAndOversizedParametersAlone) {
  // Sizes in floats (offsets aligned to 16: 0, 64, 128, 432, 736, 1040, 6048, 6064, 6080; the
  // arena ends at 6140); first and last cap 100, cap 1000.
  const auto p = extents({60, 60, 300, 300, 300, 5000, 10, 10, 60});
  const auto b = plan_buckets(p, 100, 1000);
  ASSERT_EQ(b.size(), 4u);
  EXPECT_EQ(b[0].end_param, 1u);    // 60 alone: with the next it would span 124 > 100
  EXPECT_EQ(b[1].first_param, 1u);  // from offset 64: 60 + 300 + 300 + 300 spans 972 <= 1000
  EXPECT_EQ(b[1].end_param, 5u);
  EXPECT_EQ(b[1].count, 972);
  EXPECT_EQ(b[2].first_param, 5u);  // 5000 > cap: a bucket of its own
  EXPECT_EQ(b[2].end_param, 6u);
  EXPECT_EQ(b[3].first_param, 6u);  // the last bucket: from offset 6048 to the end spans 92 <= 100
  EXPECT_EQ(b[3].end_param, 9u);
  EXPECT_EQ(b[3].count, 92);
  // A last parameter larger than the cap is the last bucket alone; one that fits takes it all.
  const auto big_last = plan_buckets(extents({10, 10, 500}), 100, 1000);
  ASSERT_EQ(big_last.size(), 2u);
  EXPECT_EQ(big_last[1].first_param, 2u);
  EXPECT_EQ(plan_buckets(extents({10, 10, 20}), 100, 1000).size(), 1u);
}

TEST(BucketPlan, BucketsAreContiguousSlicesCoveringEveryParameterOnce) {
  const auto p = extents({1, 17, 33, 1000, 2, 99999, 3, 64, 65});
  for (int64_t cap : {0, 10, 100, 5000, 1 << 20}) {
    const auto b = plan_buckets(p, 50, cap);
    size_t next = 0;
    for (const Bucket& x : b) {
      EXPECT_EQ(x.first_param, next);
      EXPECT_GT(x.end_param, x.first_param);
      EXPECT_EQ(x.offset, p[x.first_param].offset);
      EXPECT_EQ(x.offset + x.count, p[x.end_param - 1].offset + p[x.end_param - 1].count);
      next = x.end_param;
    }
    EXPECT_EQ(next, p.size());
  }
}

}  // namespace
}  // namespace rt
