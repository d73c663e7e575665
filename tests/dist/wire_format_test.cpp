// The 16-bit conversions (base/half_float.h: the ring's wire, the GPU's 16-bit activations)
// against independent references: the CPU's own
// F16C instructions for fp16 where the CPU has them, and everywhere a brute-force "nearest of the
// two neighbouring values, ties to even" computed in double, plus the round trip of every fp16
// and bf16 value.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "dist/reduce_kernel.h"
#include "dist/wire_format.h"

#if defined(__x86_64__)
#include <immintrin.h>
#endif

namespace rt {
namespace {

// Floats to try: every power-of-two scale from below fp16's subnormals to float's largest, random
// mantissas, the halfway points between neighbouring 16-bit values, and the special values.
std::vector<float> probe_values() {
  std::vector<float> v = {0.0f,
                          -0.0f,
                          1.0f,
                          -1.0f,
                          65504.0f,
                          65519.0f,
                          65520.0f,
                          65536.0f,
                          1e-8f,
                          5.9604644775390625e-08f,
                          2.98023223876953125e-08f,
                          2.9802326e-08f,
                          6.103515625e-05f,
                          std::numeric_limits<float>::max(),
                          std::numeric_limits<float>::denorm_min(),
                          std::numeric_limits<float>::infinity(),
                          -std::numeric_limits<float>::infinity()};
  for (int e = -30; e <= 127; ++e)
    for (int k = 0; k < 40; ++k) {
      const float m = 1.0f + to_unit_float(hash3(7, static_cast<uint64_t>(e + 64), static_cast<uint64_t>(k)));
      v.push_back(std::ldexp(m, e));
      v.push_back(-std::ldexp(m, e));
    }
  for (uint32_t h = 0; h < 0x7c00u; h += 37) {  // halfway between fp16 neighbours h and h + 1
    const double mid =
        (static_cast<double>(fp16_to_float(static_cast<uint16_t>(h))) + fp16_to_float(static_cast<uint16_t>(h + 1))) /
        2;
    v.push_back(static_cast<float>(mid));
  }
  for (uint32_t b = 0; b < 0x7f80u; b += 41) {  // halfway between bf16 neighbours
    v.push_back(float_of_bits((b << 16) | 0x8000u));
  }
  return v;
}

// The reference: among all finite 16-bit values (and infinity past the overflow threshold), the
// nearest to f, ties to the even encoding.
template <typename ToFloat>
uint16_t nearest(float f, ToFloat to_float, uint16_t largest_finite, double overflow_at) {
  const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
  const double a = std::abs(static_cast<double>(f));
  if (a >= overflow_at) return static_cast<uint16_t>(sign | (largest_finite + 1));
  uint16_t lo = 0, hi = largest_finite;  // binary search on the monotone encodings
  while (hi - lo > 1) {
    const uint16_t mid = static_cast<uint16_t>((lo + hi) / 2);
    (to_float(mid) <= a ? lo : hi) = mid;
  }
  if (to_float(hi) <= a) lo = hi;
  const uint16_t up = static_cast<uint16_t>(lo + 1);
  const double d_lo = a - to_float(lo), d_up = static_cast<double>(to_float(up)) - a;
  const uint16_t pick = lo == largest_finite ? lo : d_lo < d_up ? lo : d_up < d_lo ? up : (lo & 1 ? up : lo);
  return static_cast<uint16_t>(sign | pick);
}

TEST(WireFormat, Fp16RoundsToTheNearestValueTiesToEven) {
  const double overflow_at = 65520.0;  // halfway between 65504 and 65536, which ties up to infinity
  for (float f : probe_values()) {
    if (std::isinf(f)) continue;
    const uint16_t want = nearest(f, fp16_to_float, 0x7bff, overflow_at);
    ASSERT_EQ(float_to_fp16(f), want) << f;
  }
}

TEST(WireFormat, Bf16RoundsToTheNearestValueTiesToEven) {
  // bf16's largest finite is 0x7f7f; halfway to the next binade's first value (2^128) overflows.
  const double overflow_at = (static_cast<double>(bf16_to_float(0x7f7f)) + std::ldexp(1.0, 128)) / 2;
  for (float f : probe_values()) {
    if (std::isinf(f)) continue;
    ASSERT_EQ(float_to_bf16(f), nearest(f, bf16_to_float, 0x7f7f, overflow_at)) << f;
  }
}

TEST(WireFormat, EverySixteenBitValueSurvivesTheRoundTrip) {
  for (uint32_t h = 0; h <= 0xffffu; ++h) {
    const auto x = static_cast<uint16_t>(h);
    const bool fp16_nan = (h & 0x7c00u) == 0x7c00u && (h & 0x3ffu) != 0;
    if (fp16_nan) {
      EXPECT_TRUE(std::isnan(fp16_to_float(x))) << h;
      EXPECT_TRUE(std::isnan(fp16_to_float(float_to_fp16(fp16_to_float(x))))) << h;
    } else {
      ASSERT_EQ(float_to_fp16(fp16_to_float(x)), x) << h;
    }
    const bool bf16_nan = (h & 0x7f80u) == 0x7f80u && (h & 0x7fu) != 0;
    if (bf16_nan) {
      EXPECT_TRUE(std::isnan(bf16_to_float(float_to_bf16(bf16_to_float(x))))) << h;
    } else {
      ASSERT_EQ(float_to_bf16(bf16_to_float(x)), x) << h;
    }
  }
  EXPECT_EQ(fp16_to_float(0x3c00), 1.0f);
  EXPECT_EQ(fp16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(bf16_to_float(0x3f80), 1.0f);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) uint16_t f16c_convert(float f) {
  return static_cast<uint16_t>(_cvtss_sh(f, _MM_FROUND_TO_NEAREST_INT));
}

TEST(WireFormat, Fp16MatchesTheCpusOwnConversion) {
  if (!__builtin_cpu_supports("f16c")) GTEST_SKIP() << "this CPU has no F16C instructions";
  for (float f : probe_values()) ASSERT_EQ(float_to_fp16(f), f16c_convert(f)) << f;
  EXPECT_EQ(float_to_fp16(std::numeric_limits<float>::quiet_NaN()) & 0x7e00u, 0x7e00u);
}
#endif

TEST(WireFormat, ReduceKernelsSumInFloat32) {
  std::vector<float> dst = {1.0f, 2.0f, 1e-3f, 65504.0f};
  std::vector<float> src = {0.5f, 2049.0f, 1e-3f, 65504.0f};
  std::vector<uint16_t> wire(src.size());
  narrow_to_wire(src.data(), wire.data(), wire.size(), Wire::kFp16);
  add_from_wire(dst.data(), wire.data(), dst.size(), 0.5f, Wire::kFp16);
  // 2049 is not an fp16 value: it rounds to 2048 (ties to even); 65504 + 65504 is fine in float32.
  EXPECT_EQ(dst[0], 0.75f);
  EXPECT_EQ(dst[1], 1025.0f);
  EXPECT_NEAR(dst[2], 1e-3f, 1e-6f);
  EXPECT_EQ(dst[3], 65504.0f);
  std::vector<float> back(src.size());
  widen_from_wire(wire.data(), back.data(), back.size(), Wire::kFp16);
  EXPECT_EQ(back[1], 2048.0f);
}

}  // namespace
}  // namespace rt
