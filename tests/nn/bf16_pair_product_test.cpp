// Our batched bf16 products (Note [bf16 pair products] in nn/ops/cpu/bf16_pair_product.h) against
// sums in double over the same bf16 inputs, natively (where the CPU has AVX512_BF16) and in the
// two-FMA form: A read row-major and pair-major, panels full and narrow (48, 32 and 16 columns),
// rows that fill the register tile and rows left over, one pair and many, and sums added to what C
// held. Each bf16 product is exact in float32, so the error is float32's rounding of the sums: a
// few 2^-24 of the terms' magnitudes; an element taken from the wrong row, column, pair half or
// matrix misses by the order of a term.
#include "nn/ops/cpu/bf16_pair_product.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/half_float.h"
#include "base/rng.h"

namespace rt::cpu {
namespace {

struct ProductShape {
  int64_t batch, m, n, k;
  bool pair_major_a, accumulate, emulate;
};

std::vector<float> uniform_bf16_values(size_t count, uint64_t stream) {
  std::vector<float> v(count);
  Rng rng(29, stream);
  for (float& x : v) x = bf16_to_float(float_to_bf16(static_cast<float>(2 * rng.uniform() - 1)));
  return v;
}

class PairProductTest : public testing::TestWithParam<ProductShape> {};

TEST_P(PairProductTest, MatchesSumsInDouble) {
  const ProductShape s = GetParam();
  if (!pair_products_run()) GTEST_SKIP() << "pair products need AVX-512 F and BW";
  if (!s.emulate && !__builtin_cpu_supports("avx512bf16")) GTEST_SKIP() << "the native form needs AVX512_BF16";
  // a[b][i][kk], b[b][kk][j] and the C it starts from, as floats holding bf16 values.
  const std::vector<float> a = uniform_bf16_values(static_cast<size_t>(s.batch * s.m * s.k), 1);
  const std::vector<float> b = uniform_bf16_values(static_cast<size_t>(s.batch * s.k * s.n), 2);
  const std::vector<float> start = uniform_bf16_values(static_cast<size_t>(s.batch * s.m * s.n), 3);
  auto a_at = [&](int64_t m, int64_t i, int64_t kk) { return a[static_cast<size_t>((m * s.m + i) * s.k + kk)]; };
  auto b_at = [&](int64_t m, int64_t kk, int64_t j) { return b[static_cast<size_t>((m * s.k + kk) * s.n + j)]; };

  PairProduct p;
  p.batch = s.batch, p.m = s.m, p.n = s.n, p.k = s.k, p.accumulate = s.accumulate;
  // A row-major (pairs along a row) or pair-major ((kk / 2, i, kk % 2)), in 32-bit pairs.
  std::vector<uint16_t> a_laid(a.size()), b_laid(b.size());
  for (int64_t m = 0; m < s.batch; ++m)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t kk = 0; kk < s.k; ++kk) {
        const int64_t at = s.pair_major_a ? pair_panel_index(s.k, s.m, s.m, kk, i) : i * s.k + kk;
        a_laid[static_cast<size_t>(m * s.m * s.k + at)] = float_to_bf16(a_at(m, i, kk));
      }
  p.a = a_laid.data();
  p.a_batch = s.m * s.k / 2;
  p.a_row = s.pair_major_a ? 1 : s.k / 2;
  p.a_pair = s.pair_major_a ? s.m : 1;
  for (int64_t m = 0; m < s.batch; ++m)
    for (int64_t kk = 0; kk < s.k; ++kk)
      for (int64_t j = 0; j < s.n; ++j)
        b_laid[static_cast<size_t>(m * s.k * s.n + pair_panel_index(s.k, s.n, kPairPanelWidth, kk, j))] =
            float_to_bf16(b_at(m, kk, j));
  p.b = b_laid.data();
  p.b_batch = s.k * s.n;
  // C 64-byte aligned, as the Winograd's buffers: where it starts new, the stores stream.
  std::vector<float> c_storage(start.size() + 16);
  float* c = c_storage.data() + (64 - reinterpret_cast<uintptr_t>(c_storage.data()) % 64) % 64 / sizeof(float);
  std::copy(start.begin(), start.end(), c);
  p.c = c;
  p.c_batch = s.m * s.n;
  multiply_pairs(p, s.emulate);

  double worst = 0;
  for (int64_t m = 0; m < s.batch; ++m)
    for (int64_t i = 0; i < s.m; ++i)
      for (int64_t j = 0; j < s.n; ++j) {
        const size_t at = static_cast<size_t>((m * s.m + i) * s.n + j);
        double sum = s.accumulate ? start[at] : 0, magnitude = std::fabs(sum);
        for (int64_t kk = 0; kk < s.k; ++kk) {
          const double term = static_cast<double>(a_at(m, i, kk)) * b_at(m, kk, j);
          sum += term;
          magnitude += std::fabs(term);
        }
        worst = std::max(worst, std::fabs(c[at] - sum) / magnitude);
      }
  EXPECT_LT(worst, 1e-6) << "the worst error, over the sum of the terms' magnitudes";
}

// Panels of 64 columns and a last one of 48, 32 or 16: rows 6, 8, 14 and 24 fill the native tiles
// of those widths; 4 the emulated ones.
// Sums of more than 256 pairs run in blocks (1,100 and 1,030: blocks of 256 and a short one).
INSTANTIATE_TEST_SUITE_P(Native, PairProductTest,
                         testing::Values(ProductShape{2, 16, 48, 64, false, false, false},
                                         ProductShape{3, 29, 80, 34, false, true, false},
                                         ProductShape{2, 37, 112, 2, true, false, false},
                                         ProductShape{1, 50, 16, 96, true, true, false},
                                         ProductShape{2, 13, 32, 256, false, false, false},
                                         ProductShape{2, 20, 208, 1100, true, false, false},
                                         ProductShape{1, 9, 96, 1030, true, true, false}));
INSTANTIATE_TEST_SUITE_P(Emulated, PairProductTest,
                         testing::Values(ProductShape{2, 16, 48, 64, false, false, true},
                                         ProductShape{3, 29, 80, 34, true, true, true},
                                         ProductShape{1, 7, 16, 2, false, true, true},
                                         ProductShape{1, 11, 64, 1030, true, false, true}));

}  // namespace
}  // namespace rt::cpu
