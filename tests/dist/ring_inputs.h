// What the ring tests average: each rank's own values, different on every rank and at every
// offset, some of them negative, so that an element reduced twice or never shows.
#pragma once

#include <cstdint>
#include <vector>

namespace rt {

inline std::vector<float> contribution(int64_t count, int rank) {
  std::vector<float> v(static_cast<size_t>(count));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = 0.37f * static_cast<float>(rank + 1) + static_cast<float>(static_cast<int>(i % 53) - 26) * 0.11f;
  return v;
}

}  // namespace rt
