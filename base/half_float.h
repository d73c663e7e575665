// The two 16-bit floating-point formats, converted to and from float32 by RT_HD functions, so the
// CPU and the GPU round identically (the wire of the ring, the GPU's 16-bit activations). Both
// round to nearest, ties to even, as the hardware does; NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

#include "base/host_device.h"

namespace rt {

RT_HD inline uint32_t float_bits(float f) {
#ifdef __CUDA_ARCH__
  return __float_as_uint(f);
#else
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
#endif
}

RT_HD inline float float_of_bits(uint32_t u) {
#ifdef __CUDA_ARCH__
  return __uint_as_float(u);
#else
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
#endif
}

// bfloat16 is float32's top half: round the bottom half away, to nearest even. NaN stays NaN.
RT_HD inline uint16_t float_to_bf16(float f) {
  uint32_t u = float_bits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}

RT_HD inline float bf16_to_float(uint16_t h) { return float_of_bits(static_cast<uint32_t>(h) << 16); }

// IEEE half: 5 exponent bits (bias 15), 10 mantissa bits, subnormals below 2^-14, largest 65504.
RT_HD inline uint16_t float_to_fp16(float f) {
  const uint32_t u = float_bits(f);
  const uint32_t sign = (u >> 16) & 0x8000u;
  const uint32_t a = u & 0x7fffffffu;
  if (a >= 0x7f800000u) return static_cast<uint16_t>(sign | 0x7c00u | (a > 0x7f800000u ? 0x200u : 0u));
  if (a >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // >= 65520 rounds to infinity
  if (a < 0x38800000u) {
    // Below half's smallest normal: the result is round(|f| / 2^-24), a subnormal (or the smallest
    // normal, when it rounds up to it).
    const uint32_t shift = 126u - (a >> 23);  // |f| = m * 2^-(shift + 24) with the implicit bit in m
    if (shift > 24u) return static_cast<uint16_t>(sign);
    const uint32_t m = (a & 0x7fffffu) | 0x800000u;
    uint32_t q = m >> shift;
    const uint32_t rest = m & ((1u << shift) - 1u), half = 1u << (shift - 1u);
    if (rest > half || (rest == half && (q & 1u))) ++q;
    return static_cast<uint16_t>(sign | q);
  }
  uint32_t h = (((a >> 23) - 112u) << 10) | ((a & 0x7fffffu) >> 13);
  const uint32_t rest = a & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;  // a carry into the exponent is right
  return static_cast<uint16_t>(sign | h);
}

RT_HD inline float fp16_to_float(uint16_t h) {
  const uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  const uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1fu) return float_of_bits(sign | 0x7f800000u | (m << 13));
  if (e == 0) {
    const float v = static_cast<float>(m) * 5.9604644775390625e-08f;  // m * 2^-24, exact
    return sign ? -v : v;
  }
  return float_of_bits(sign | ((e + 112u) << 23) | (m << 13));
}

}  // namespace rt
