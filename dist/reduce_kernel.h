// The ring's arithmetic: add a received slice into the local one, and on the last
// reduce-scatter step scale the sum to the average, in the same pass over memory.
#pragma once

#include <cstddef>

namespace rt {

// dst[i] = (dst[i] + src[i]) * scale; scale == 1 is a plain sum.
inline void add_into(float* __restrict dst, const float* __restrict src, size_t n, float scale) {
  if (scale == 1.0f) {
    for (size_t i = 0; i < n; ++i) dst[i] += src[i];
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] + src[i]) * scale;
  }
}

}  // namespace rt
