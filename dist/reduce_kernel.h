// The ring's byte kernels: add a received slice into the local one (on the last reduce-scatter
// step of a float32 wire scaling the sum to the average in the same pass), the same from a 16-bit
// wire type (wire_format.h; called unscaled, the ranks having scaled before sending), and copy a
// slice into shared memory without leaving it in this core's cache.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "dist/wire_format.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rt {

// dst[i] = (dst[i] + src[i]) * scale; scale == 1 is a plain sum.
inline void add_into(float* __restrict dst, const float* __restrict src, size_t n, float scale) {
  if (scale == 1.0f) {
    for (size_t i = 0; i < n; ++i) dst[i] += src[i];
  } else {
    for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] + src[i]) * scale;
  }
}

// dst[i] = (dst[i] + src[i]) * scale, src in a 16-bit wire type, the sum in float32.
inline void add_from_wire(float* __restrict dst, const uint16_t* __restrict src, size_t n, float scale, Wire wire) {
  for (size_t i = 0; i < n; ++i) dst[i] = (dst[i] + from_wire(src[i], wire)) * scale;
}

inline void narrow_to_wire(const float* __restrict src, uint16_t* __restrict dst, size_t n, Wire wire) {
  for (size_t i = 0; i < n; ++i) dst[i] = to_wire(src[i], wire);
}

inline void widen_from_wire(const uint16_t* __restrict src, float* __restrict dst, size_t n, Wire wire) {
  for (size_t i = 0; i < n; ++i) dst[i] = from_wire(src[i], wire);
}

// memcpy with non-temporal stores: the bytes go to memory, not into this core's cache, so the
// core that reads them next does not have to snoop them out of ours (on this VM, slow whenever
// the two cores sit far apart; see Note [Slot copies] in shm_transport.cpp). Followed by a fence,
// so a release store after it publishes the bytes.
inline void stream_copy(void* dst, const void* src, size_t bytes) {
#if defined(__x86_64__)
  auto* d = static_cast<char*>(dst);
  const auto* s = static_cast<const char*>(src);
  const size_t head = std::min(bytes, (16 - reinterpret_cast<uintptr_t>(d) % 16) % 16);
  std::memcpy(d, s, head);
  size_t i = head;
  for (; i + 64 <= bytes; i += 64) {
    const __m128 a = _mm_loadu_ps(reinterpret_cast<const float*>(s + i));
    const __m128 b = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + 16));
    const __m128 c = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + 32));
    const __m128 e = _mm_loadu_ps(reinterpret_cast<const float*>(s + i + 48));
    _mm_stream_ps(reinterpret_cast<float*>(d + i), a);
    _mm_stream_ps(reinterpret_cast<float*>(d + i + 16), b);
    _mm_stream_ps(reinterpret_cast<float*>(d + i + 32), c);
    _mm_stream_ps(reinterpret_cast<float*>(d + i + 48), e);
  }
  std::memcpy(d + i, s + i, bytes - i);
  _mm_sfence();
#else
  std::memcpy(dst, src, bytes);
#endif
}

}  // namespace rt
