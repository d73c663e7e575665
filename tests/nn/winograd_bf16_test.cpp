// Our bf16 Winograd F(2x2, 3x3) (Note [bf16 Winograd] in nn/ops/cpu/winograd_bf16.h) against sums
// in double over the same bf16 inputs, for all three passes: an odd-sized image (tiles cut at the
// edge), unequal channel counts, chunks of tiles that split images and leave a short last chunk,
// and an odd number of tiles in a chunk (the products take tiles in pairs). The bound comes from bf16's rounding of the transformed values: V, U and dM are rounded
// to 8 significant bits (up to 2^-9 of each), and the error's root mean square comes to about
// twice 2^-9 of the result's (4e-3 measured, 1e-2 allowed); a wrong transform entry misses by
// the order of 1.
#include "nn/ops/cpu/winograd_bf16.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/half_float.h"
#include "base/rng.h"

namespace rt::cpu {
namespace {

constexpr int64_t kN = 3, kC = 32, kK = 48, kH = 9, kW = 13;  // 105 tiles: an odd count
constexpr double kBound = 1e-2;                               // of the root mean square; measured: 3.9 to 4.3e-3

// Values uniform in [-1, 1), rounded to bf16, in plain (N, C, H, W) order.
std::vector<float> bf16_values(int64_t count, uint64_t stream) {
  std::vector<float> v(static_cast<size_t>(count));
  Rng rng(17, stream);
  for (float& x : v) x = bf16_to_float(float_to_bf16(static_cast<float>(2 * rng.uniform() - 1)));
  return v;
}

// Plain (N, C, H, W) to nChw16c bf16 and back.
std::vector<uint16_t> blocked(const std::vector<float>& plain, int64_t c) {
  std::vector<uint16_t> out(plain.size());
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < kH * kW; ++i)
        out[static_cast<size_t>(((n * (c / 16) + ch / 16) * kH * kW + i) * 16 + ch % 16)] =
            float_to_bf16(plain[static_cast<size_t>((n * c + ch) * kH * kW + i)]);
  return out;
}
std::vector<float> unblocked(const std::vector<uint16_t>& b, int64_t c) {
  std::vector<float> out(b.size());
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < kH * kW; ++i)
        out[static_cast<size_t>((n * c + ch) * kH * kW + i)] =
            bf16_to_float(b[static_cast<size_t>(((n * (c / 16) + ch / 16) * kH * kW + i) * 16 + ch % 16)]);
  return out;
}

double x_at(const std::vector<float>& x, int64_t c, int64_t n, int64_t ch, int64_t i, int64_t j) {
  if (i < 0 || j < 0 || i >= kH || j >= kW) return 0;
  return x[static_cast<size_t>(((n * c + ch) * kH + i) * kW + j)];
}
double w_at(const std::vector<float>& w, int64_t k, int64_t c, int64_t r, int64_t s) {
  return w[static_cast<size_t>(((k * kC + c) * 3 + r) * 3 + s)];
}

// The root mean square of got - want over that of want.
double error(const std::vector<float>& got, const std::vector<double>& want) {
  double miss = 0, square = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    miss += (got[i] - want[i]) * (got[i] - want[i]);  // NaN stays NaN and fails the bound
    square += want[i] * want[i];
  }
  return std::sqrt(miss / square);
}

class WinogradBf16Test : public ::testing::TestWithParam<int64_t> {
 protected:
  void SetUp() override {
    if (!winograd_bf16_runs()) GTEST_SKIP() << "bf16 Winograd needs AVX-512 and oneDNN's bf16 kernels";
  }
  WinogradBf16Shape shape() const { return {kN, kC, kK, kH, kW}; }
  std::vector<float> x = bf16_values(kN * kC * kH * kW, 1), dy = bf16_values(kN * kK * kH * kW, 2);
  std::vector<float> w = bf16_values(kK * kC * 9, 3), bias = bf16_values(kK, 4);
};

TEST_P(WinogradBf16Test, ForwardMatchesTheSumsWithItsBias) {
  WinogradBf16 op(shape(), GetParam());
  const std::vector<uint16_t> xb = blocked(x, kC);
  std::vector<uint16_t> yb(static_cast<size_t>(kN * kK * kH * kW));
  op.forward(xb.data(), w.data(), bias.data(), yb.data());
  std::vector<double> want(yb.size());
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t k = 0; k < kK; ++k)
      for (int64_t i = 0; i < kH; ++i)
        for (int64_t j = 0; j < kW; ++j) {
          double s = bias[static_cast<size_t>(k)];
          for (int64_t c = 0; c < kC; ++c)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t q = 0; q < 3; ++q) s += x_at(x, kC, n, c, i + r - 1, j + q - 1) * w_at(w, k, c, r, q);
          want[static_cast<size_t>(((n * kK + k) * kH + i) * kW + j)] = s;
        }
  const double e = error(unblocked(yb, kK), want);
  std::printf("forward: error %.2e of the root mean square\n", e);
  EXPECT_LT(e, kBound);
}

TEST_P(WinogradBf16Test, BackwardDataMatchesTheSums) {
  WinogradBf16 op(shape(), GetParam());
  const std::vector<uint16_t> dyb = blocked(dy, kK);
  std::vector<uint16_t> dxb(static_cast<size_t>(kN * kC * kH * kW));
  op.backward_data(dyb.data(), w.data(), dxb.data());
  // dx[n, c, i, j] = sum dy[n, k, i - r + 1, j - q + 1] w[k, c, r, q]
  std::vector<double> want(dxb.size());
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t i = 0; i < kH; ++i)
        for (int64_t j = 0; j < kW; ++j) {
          double s = 0;
          for (int64_t k = 0; k < kK; ++k)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t q = 0; q < 3; ++q) s += x_at(dy, kK, n, k, i - r + 1, j - q + 1) * w_at(w, k, c, r, q);
          want[static_cast<size_t>(((n * kC + c) * kH + i) * kW + j)] = s;
        }
  const double e = error(unblocked(dxb, kC), want);
  std::printf("backward data: error %.2e of the root mean square\n", e);
  EXPECT_LT(e, kBound);
}

TEST_P(WinogradBf16Test, BackwardWeightsMatchesTheSumsAndSumsTheBiasGradient) {
  WinogradBf16 op(shape(), GetParam());
  const std::vector<uint16_t> xb = blocked(x, kC), dyb = blocked(dy, kK);
  std::vector<float> dw(w.size(), NAN), db(static_cast<size_t>(kK), NAN);
  op.backward_weights(xb.data(), dyb.data(), dw.data(), db.data());
  std::vector<double> want_dw(dw.size()), want_db(db.size(), 0.0);
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t q = 0; q < 3; ++q) {
          double s = 0;
          for (int64_t n = 0; n < kN; ++n)
            for (int64_t i = 0; i < kH; ++i)
              for (int64_t j = 0; j < kW; ++j) s += x_at(x, kC, n, c, i + r - 1, j + q - 1) * x_at(dy, kK, n, k, i, j);
          want_dw[static_cast<size_t>(((k * kC + c) * 3 + r) * 3 + q)] = s;
        }
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t k = 0; k < kK; ++k)
      for (int64_t i = 0; i < kH * kW; ++i)
        want_db[static_cast<size_t>(k)] += dy[static_cast<size_t>((n * kK + k) * kH * kW + i)];
  const double e = error(dw, want_dw);
  std::printf("backward weights: error %.2e of the root mean square\n", e);
  EXPECT_LT(e, kBound);
  // The bias gradient sums bf16 values in float32: float32's rounding only.
  EXPECT_LT(error(db, want_db), 1e-5);
}

// 0: the default chunks (one here); 7 tiles: 9 chunks, images split, a last chunk of 4.
INSTANTIATE_TEST_SUITE_P(Chunks, WinogradBf16Test, ::testing::Values(0, 7));

}  // namespace
}  // namespace rt::cpu
