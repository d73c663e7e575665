// Offsets in one arena for buffers with known lifetimes: two buffers share bytes only when their
// lifetimes do not overlap. Lifetimes are closed intervals [first, last] of step indices (a step
// is one layer's forward or backward). Greedy, largest buffer first, each at the lowest offset
// that clears every placed buffer it is live with (the strategy of TFLite's arena planner).
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace rt {

struct BufferLifetime {
  size_t bytes = 0;
  int64_t first = 0, last = 0;  // live at steps first..last inclusive
};

struct MemoryPlan {
  std::vector<size_t> offsets;  // one per request, aligned
  size_t total_bytes = 0;
};

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, size_t alignment = 64);

}  // namespace rt
