// Our 1x1 weight reorders (Note [1x1 weight reorders] in nn/ops/cpu/weight_reorders.h) against
// oneDNN's own reorder between the same layouts, bit for bit, on values that include rounding ties,
// NaN, infinities, signed zeros and subnormals; and oneDNN's 1x1 convolutions on this CPU asking
// for the layouts ours cover, so that a oneDNN that chose others would not leave them unused.
#include "nn/ops/cpu/weight_reorders.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "base/rng.h"
#include "nn/cpu_bf16.h"
#include "nn/ops/cpu/dnnl_util.h"

namespace rt::cpu {
namespace {

bool native_bf16() { return cpu_bf16().native && __builtin_cpu_supports("avx512bf16"); }

float from_bits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// Uniform values in [-4, 4), every 7th one of a set that rounds or converts unusually.
std::vector<float> weights(int64_t count) {
  const float special[] = {
      from_bits(0x3F808000),  // 1 + 2^-8: a tie, rounds down to even
      from_bits(0x3F818000),  // a tie that rounds up to even
      from_bits(0x3F80FFFF),  // just below the next tie
      std::numeric_limits<float>::quiet_NaN(),
      std::numeric_limits<float>::infinity(),
      -std::numeric_limits<float>::infinity(),
      -0.0f,
      from_bits(0x00000301),  // subnormal
      -std::numeric_limits<float>::denorm_min(),
      std::numeric_limits<float>::max(),
  };
  std::vector<float> v(static_cast<size_t>(count));
  Rng rng(5, 1);
  for (size_t i = 0; i < v.size(); ++i)
    v[i] =
        i % 7 == 3 ? special[i / 7 % (sizeof special / sizeof special[0])] : static_cast<float>(8 * rng.uniform() - 4);
  return v;
}

// Reorders `plain` into `to` by oneDNN and by ours; true where ours exists. Bytes compared.
bool check_against_onednn(const md& from, const md& to, const std::vector<float>& source) {
  const WeightReorder ours = WeightReorder::between(from, to);
  if (!ours) return false;
  std::vector<char> want(to.get_size()), got(to.get_size(), 0x55);
  reorder(mem(from, source.data()), dnnl::memory(to, engine(), want.data()));
  ours(source.data(), got.data());
  EXPECT_EQ(0, std::memcmp(want.data(), got.data(), want.size()));
  return true;
}

struct Filters {
  int64_t k, c;
};
// One 16 x 16 tile, unequal counts, C not a power of two, and a row as long as ResNet-101's.
const Filters kShapes[] = {{16, 16}, {32, 48}, {48, 80}, {64, 1024}};

TEST(WeightReorders, GradientOutMatchesOneDnnBitForBit) {
  if (!__builtin_cpu_supports("avx512f")) GTEST_SKIP() << "ours need AVX-512";
  for (const Filters& f : kShapes) {
    SCOPED_TRACE(testing::Message() << f.k << " x " << f.c);
    const dnnl::memory::dims d{f.k, f.c, 1, 1};
    const md blocked(d, dt::f32, tag::ABcd16b16a);
    std::vector<float> values = weights(f.k * f.c);
    // oneDNN's layout of the blocked values, then both back to plain.
    std::vector<float> source(blocked.get_size() / sizeof(float));
    reorder(mem(plain_md({f.k, f.c, 1, 1}), values.data()), mem(blocked, source.data()));
    EXPECT_TRUE(check_against_onednn(blocked, plain_md({f.k, f.c, 1, 1}), source));
  }
}

TEST(WeightReorders, Bf16WeightsMatchOneDnnBitForBit) {
  if (!native_bf16()) GTEST_SKIP() << "ours round with AVX512_BF16; oneDNN runs " << cpu_bf16().isa;
  for (const Filters& f : kShapes)
    for (const tag layout : {tag::ABcd8b16a2b, tag::ABcd8a16b2a, tag::BAcd8a16b2a}) {
      SCOPED_TRACE(testing::Message() << f.k << " x " << f.c << ", layout " << static_cast<int>(layout));
      const md to({f.k, f.c, 1, 1}, dt::bf16, layout);
      EXPECT_TRUE(check_against_onednn(plain_md({f.k, f.c, 1, 1}), to, weights(f.k * f.c)));
    }
}

// Not ours: filters larger than 1x1, counts that leave a block part empty, other types.
TEST(WeightReorders, OtherLayoutsStayWithOneDnn) {
  EXPECT_FALSE(WeightReorder::between(md({64, 64, 3, 3}, dt::f32, tag::ABcd16b16a), plain_md({64, 64, 3, 3})));
  EXPECT_FALSE(WeightReorder::between(md({24, 64, 1, 1}, dt::f32, tag::ABcd16b16a), plain_md({24, 64, 1, 1})));
  EXPECT_FALSE(WeightReorder::between(plain_md({64, 64, 1, 1}), md({64, 64, 1, 1}, dt::f32, tag::ABcd16b16a)));
  EXPECT_FALSE(WeightReorder::between(plain_md({64, 64, 1, 1}), md({64, 64, 1, 1}, dt::bf16, tag::abcd)));
}

// oneDNN's 1x1 convolutions here ask for the layouts ours cover, in all three passes: float32's
// where oneDNN runs AVX-512 kernels (cpu_bf16().runs says so), bf16's where it runs
// avx512_core_bf16 (on AMX it asks for others).
TEST(WeightReorders, OneDnnOneByOneConvolutionsTakeThem) {
  if (!__builtin_cpu_supports("avx512f") || !cpu_bf16().runs)
    GTEST_SKIP() << "ours need AVX-512; oneDNN runs " << cpu_bf16().isa;
  for (const dt compute : {dt::f32, dt::bf16}) {
    if (compute == dt::bf16 && !(native_bf16() && cpu_bf16().isa == "avx512_core_bf16")) continue;
    SCOPED_TRACE(compute == dt::bf16 ? "bf16" : "f32");
    const dnnl::memory::dims x{8, 256, 14, 14}, y{8, 64, 14, 14}, w{64, 256, 1, 1}, one{1, 1}, zero{0, 0};
    const md x_any(x, compute, tag::any), y_any(y, compute, tag::any), w_any(w, compute, tag::any);
    const md dw_any(w, dt::f32, tag::any), plain = plain_md({64, 256, 1, 1});
    const auto alg = dnnl::algorithm::convolution_direct;
    const dnnl::convolution_forward::primitive_desc fwd(
        {dnnl::prop_kind::forward_training, alg, x_any, w_any, y_any, one, zero, zero}, engine());
    const dnnl::convolution_backward_data::primitive_desc bwd({alg, x_any, w_any, y_any, one, zero, zero}, engine(),
                                                              fwd);
    const dnnl::convolution_backward_weights::primitive_desc bww({alg, x_any, dw_any, y_any, one, zero, zero}, engine(),
                                                                 fwd);
    EXPECT_TRUE(WeightReorder::between(bww.diff_weights_desc(), plain));
    if (compute == dt::bf16) {
      EXPECT_TRUE(WeightReorder::between(plain, fwd.weights_desc()));
      EXPECT_TRUE(WeightReorder::between(plain, bwd.weights_desc()));
    }
  }
}

}  // namespace
}  // namespace rt::cpu
