#include "nn/memory_plan.h"

#include <algorithm>
#include <numeric>

namespace rt {

MemoryPlan plan_memory(const std::vector<BufferLifetime>& buffers, size_t alignment) {
  const auto round_up = [&](size_t n) { return (n + alignment - 1) / alignment * alignment; };
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });

  MemoryPlan plan;
  plan.offsets.assign(buffers.size(), 0);
  std::vector<size_t> placed;  // indices, sorted by offset
  for (size_t i : order) {
    const BufferLifetime& b = buffers[i];
    const size_t size = round_up(std::max<size_t>(b.bytes, 1));
    size_t offset = 0;
    for (size_t j : placed) {  // by increasing offset: first gap that fits wins
      const BufferLifetime& p = buffers[j];
      if (p.last < b.first || b.last < p.first) continue;  // never live together
      if (offset + size <= plan.offsets[j]) break;
      offset = std::max(offset, plan.offsets[j] + round_up(std::max<size_t>(p.bytes, 1)));
    }
    plan.offsets[i] = offset;
    plan.total_bytes = std::max(plan.total_bytes, offset + size);
    placed.insert(std::upper_bound(placed.begin(), placed.end(), i,
                                   [&](size_t x, size_t y) { return plan.offsets[x] < plan.offsets[y]; }),
                  i);
  }
  return plan;
}

}  // namespace rt
