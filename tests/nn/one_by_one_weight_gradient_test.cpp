// The 1x1 weight gradient as one matrix product (Note [1x1 weight gradient as a product] in
// nn/ops/cpu/one_by_one_weight_gradient.h) against sums in double over the same bf16 inputs: pixel
// counts that fill 16-pixel tiles exactly, leave a short last tile, or hold one pixel, and unequal
// channel counts. Each bf16 product is exact in float32, so the only error is float32's rounding of
// the sums: bounded by a few 2^-24 of the sum of the terms' magnitudes (measured below 1e-7 of it);
// a pixel, channel or image taken from the wrong place misses by the order of a term.
#include "nn/ops/cpu/one_by_one_weight_gradient.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/half_float.h"
#include "base/rng.h"

namespace rt::cpu {
namespace {

struct Shape1x1 {
  int64_t n, c, k, pixels;
};

// Values uniform in [-1, 1) as bf16, in nChw16c order for `channels` channels.
std::vector<uint16_t> blocked_values(int64_t n, int64_t channels, int64_t pixels, uint64_t stream) {
  std::vector<uint16_t> v(static_cast<size_t>(n * channels * pixels));
  Rng rng(23, stream);
  for (uint16_t& x : v) x = float_to_bf16(static_cast<float>(2 * rng.uniform() - 1));
  return v;
}
double at(const std::vector<uint16_t>& v, int64_t channels, int64_t pixels, int64_t i, int64_t ch, int64_t p) {
  return bf16_to_float(v[static_cast<size_t>(((i * (channels / 16) + ch / 16) * pixels + p) * 16 + ch % 16)]);
}

class OneByOneWeightGradientTest : public testing::TestWithParam<Shape1x1> {};

TEST_P(OneByOneWeightGradientTest, MatchesSumsInDouble) {
  const Shape1x1 s = GetParam();
  if (!OneByOneWeightGradient::runs(s.c, s.k)) GTEST_SKIP() << "it runs where oneDNN runs avx512_core_bf16";
  const std::vector<uint16_t> x = blocked_values(s.n, s.c, s.pixels, 1), dy = blocked_values(s.n, s.k, s.pixels, 2);
  std::vector<float> dw(static_cast<size_t>(s.k * s.c), -1.0f);
  OneByOneWeightGradient(s.n, s.c, s.k, s.pixels)(x.data(), dy.data(), dw.data());
  double worst = 0;
  for (int64_t k = 0; k < s.k; ++k)
    for (int64_t c = 0; c < s.c; ++c) {
      double sum = 0, magnitude = 0;
      for (int64_t i = 0; i < s.n; ++i)
        for (int64_t p = 0; p < s.pixels; ++p) {
          const double term = at(dy, s.k, s.pixels, i, k, p) * at(x, s.c, s.pixels, i, c, p);
          sum += term;
          magnitude += std::fabs(term);
        }
      worst = std::max(worst, std::fabs(dw[static_cast<size_t>(k * s.c + c)] - sum) / magnitude);
    }
  EXPECT_LT(worst, 1e-6) << "the worst error, over the sum of the terms' magnitudes";
}

INSTANTIATE_TEST_SUITE_P(Shapes, OneByOneWeightGradientTest,
                         testing::Values(Shape1x1{2, 32, 48, 35}, Shape1x1{3, 16, 16, 16}, Shape1x1{1, 64, 32, 1},
                                         Shape1x1{2, 48, 16, 289}));

}  // namespace
}  // namespace rt::cpu
