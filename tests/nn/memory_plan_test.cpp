// The activation memory planner: buffers live at the same time never share bytes (checked for
// every pair on random lifetimes), buffers live apart do share, and offsets respect alignment.
#include <gtest/gtest.h>

#include "base/rng.h"
#include "nn/memory_plan.h"

namespace rt::testing {
namespace {

bool live_together(const BufferLifetime& a, const BufferLifetime& b) { return a.first <= b.last && b.first <= a.last; }

TEST(MemoryPlan, BuffersLiveAtTheSameTimeNeverOverlapInMemory) {
  Rng rng(4, 2);
  for (int trial = 0; trial < 50; ++trial) {
    std::vector<BufferLifetime> buffers(1 + rng.below(60));
    for (BufferLifetime& b : buffers) {
      b.bytes = rng.below(5000);
      b.first = static_cast<int64_t>(rng.below(100));
      b.last = b.first + static_cast<int64_t>(rng.below(30));
    }
    const MemoryPlan plan = plan_memory(buffers, 64);
    size_t needed_at_peak = 0;
    for (int64_t step = 0; step < 130; ++step) {
      size_t live = 0;
      for (const BufferLifetime& b : buffers) live += (b.first <= step && step <= b.last) ? b.bytes : 0;
      needed_at_peak = std::max(needed_at_peak, live);
    }
    EXPECT_GE(plan.total_bytes, needed_at_peak);
    for (size_t i = 0; i < buffers.size(); ++i) {
      EXPECT_EQ(plan.offsets[i] % 64, 0u);
      EXPECT_LE(plan.offsets[i] + buffers[i].bytes, plan.total_bytes);
      for (size_t j = i + 1; j < buffers.size(); ++j) {
        if (!live_together(buffers[i], buffers[j]) || buffers[i].bytes == 0 || buffers[j].bytes == 0) continue;
        const bool apart = plan.offsets[i] + buffers[i].bytes <= plan.offsets[j] ||
                           plan.offsets[j] + buffers[j].bytes <= plan.offsets[i];
        EXPECT_TRUE(apart) << "trial " << trial << ": buffers " << i << " and " << j << " overlap";
      }
    }
  }
}

TEST(MemoryPlan, AChainOfShortLivedBuffersNeedsOnlyTwoAtATime) {
  // Buffer k lives over steps k and k + 1, as a gradient handed from one layer to the next.
  std::vector<BufferLifetime> chain;
  for (int64_t k = 0; k < 20; ++k) chain.push_back({1024, k, k + 1});
  EXPECT_EQ(plan_memory(chain, 64).total_bytes, 2u * 1024);
}

}  // namespace
}  // namespace rt::testing
