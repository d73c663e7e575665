// The CPU's bf16 path (Note [CPU bfloat16] in nn/cpu_bf16.h) computes what it claims, against
// sums in double over the same values: a convolution stores its output in bf16 and computes from
// bf16 copies of its input and weights, and a fully connected layer computes from bf16 copies and
// writes float32. A float32 result is checked twice: it matches the sums over the bf16-rounded
// values to float32 rounding, and misses the sums over the unrounded values by far more, so a
// layer left in float32 where bf16 is claimed fails. Dropout and gradient accumulation, our own
// loops, compute in float32 and round once. Runs wherever oneDNN runs bf16, emulated or not
// (AVX-512 and later); skips below.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <tuple>
#include <vector>

#include "base/half_float.h"
#include "base/rng.h"
#include "nn/cpu_bf16.h"
#include "nn/ops/add.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/cpu/winograd_bf16.h"
#include "nn/ops/dropout.h"
#include "nn/ops/linear.h"
#include "nn/ops/reorder.h"

namespace rt {
namespace {

float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }

// A plain float32 tensor of `shape` holding values uniform in [-1, 1).
Tensor centred(const Shape& shape, uint64_t stream) {
  Tensor t(plain_spec(shape));
  Rng rng(91, stream);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(2 * rng.uniform() - 1);
  return t;
}

std::vector<float> values(const Tensor& t, bool rounded) {
  const Tensor plain = to_plain(t);
  std::vector<float> v(plain.data(), plain.data() + plain.numel());
  if (rounded) std::transform(v.begin(), v.end(), v.begin(), round_bf16);
  return v;
}

// max |got - want| / max |want|, got read back as plain float32.
double relative_error(const Tensor& got, const std::vector<double>& want) {
  const std::vector<float> g = values(got, false);
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ref = std::max(ref, std::abs(want[i]));
    const double e = std::abs(static_cast<double>(g[i]) - want[i]);
    if (!(e <= err)) err = e;  // NaN counts as worst
  }
  return err / std::max(ref, 1e-30);
}

// The float32 results' two bounds: float32 sums of a few hundred bf16 products round to well
// under 1e-5 of the largest; rounding the inputs to bf16 moves each product by up to 2^-8 of
// itself, and the largest result by about 1e-3 of itself here.
constexpr double kRoundedBound = 1e-5, kUnroundedFloor = 1e-4;
// The bf16 outputs' two bounds, on the share of elements that equal the rounded exact sum.
constexpr double kSameRounding = 0.97, kOtherRounding = 0.9;

constexpr int64_t kN = 2, kC = 16, kK = 32, kH = 12;  // 3x3, stride 1, padding 1: H x H out

// Direct convolution in double: y[n, k, h, w] = sum x[n, c, h + r - 1, w + s - 1] w[k, c, r, s].
std::vector<double> conv_sums(const std::vector<float>& x, const std::vector<float>& w) {
  std::vector<double> y(static_cast<size_t>(kN * kK * kH * kH));
  for (int64_t n = 0; n < kN; ++n)
    for (int64_t k = 0; k < kK; ++k)
      for (int64_t h = 0; h < kH; ++h)
        for (int64_t v = 0; v < kH; ++v) {
          double s = 0;
          for (int64_t c = 0; c < kC; ++c)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t q = 0; q < 3; ++q) {
                const int64_t i = h + r - 1, j = v + q - 1;
                if (i < 0 || j < 0 || i >= kH || j >= kH) continue;
                s += static_cast<double>(x[((n * kC + c) * kH + i) * kH + j]) * w[((k * kC + c) * 3 + r) * 3 + q];
              }
          y[((n * kK + k) * kH + h) * kH + v] = s;
        }
  return y;
}

// Its weight gradient in double: dw[k, c, r, s] = sum x[n, c, h + r - 1, w + s - 1] dy[n, k, h, w].
std::vector<double> conv_weight_sums(const std::vector<float>& x, const std::vector<float>& dy) {
  std::vector<double> dw(static_cast<size_t>(kK * kC * 9));
  for (int64_t k = 0; k < kK; ++k)
    for (int64_t c = 0; c < kC; ++c)
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t q = 0; q < 3; ++q) {
          double s = 0;
          for (int64_t n = 0; n < kN; ++n)
            for (int64_t h = 0; h < kH; ++h)
              for (int64_t v = 0; v < kH; ++v) {
                const int64_t i = h + r - 1, j = v + q - 1;
                if (i < 0 || j < 0 || i >= kH || j >= kH) continue;
                s += static_cast<double>(x[((n * kC + c) * kH + i) * kH + j]) * dy[((n * kK + k) * kH + h) * kH + v];
              }
          dw[((k * kC + c) * 3 + r) * 3 + q] = s;
        }
  return dw;
}

#define SKIP_WITHOUT_BF16() \
  if (!cpu_bf16().runs) GTEST_SKIP() << "oneDNN 2.6 has no bf16 kernels on " << cpu_bf16().isa << " (it needs AVX-512)"

TEST(CpuBf16, AConvolutionStoresBf16AndComputesFromBf16Copies) {
  SKIP_WITHOUT_BF16();
  const Conv2dGeometry g = Conv2dGeometry::square(kC, kK, 3, 1, 1);
  PlanContext plan;
  plan.precision = Precision::kBf16;
  const Tensor x = centred({kN, kC, kH, kH}, 1), w = centred(g.weight_shape(), 2);
  std::unique_ptr<Conv2dOp> op = make_conv2d(g, x.spec(), /*need_dx=*/true, plan);
  ASSERT_NE(op->y_spec().describe().find("bf16"), std::string::npos)
      << "the output is " << op->y_spec().describe() << ", not bf16";
  Tensor y(op->y_spec());
  op->forward(x, w, nullptr, y);
  // Stored in bf16, y is the float32 sum rounded: almost every element equals the bf16 rounding of
  // the exact sum over the rounded inputs (a float32 sum near a rounding boundary may fall on the
  // other side), and far fewer that over the unrounded inputs.
  const std::vector<float> got = values(y, false);
  const auto rounded_matches = [&](const std::vector<double>& want) {
    int64_t same = 0;
    for (size_t i = 0; i < want.size(); ++i) same += got[i] == round_bf16(static_cast<float>(want[i]));
    return static_cast<double>(same) / static_cast<double>(want.size());
  };
  const double from_rounded = rounded_matches(conv_sums(values(x, true), values(w, true)));
  const double from_unrounded = rounded_matches(conv_sums(values(x, false), values(w, false)));
  EXPECT_GE(from_rounded, kSameRounding) << "y is not the bf16 rounding of the sums of bf16 products";
  EXPECT_LE(from_unrounded, kOtherRounding) << "y was computed from unrounded (float32) inputs";
  std::printf("conv: y equals the rounded sum over rounded inputs at %.4f of its elements, over unrounded at %.4f\n",
              from_rounded, from_unrounded);

  // dy in the output's layout, so bf16 whatever the op rounds: the same values on both sides.
  Tensor dy(op->y_spec());
  reorder(centred({kN, kK, kH, kH}, 3), dy);
  Tensor dw(plain_spec(g.weight_shape()));
  op->backward_weights(x, dy, dw, nullptr);
  const std::vector<float> dy_values = values(dy, false);
  const double rounded = relative_error(dw, conv_weight_sums(values(x, true), dy_values));
  const double unrounded = relative_error(dw, conv_weight_sums(values(x, false), dy_values));
  EXPECT_LE(rounded, kRoundedBound) << "the weight gradient is not the float32 sum of bf16 products";
  EXPECT_GE(unrounded, kUnroundedFloor) << "the weight gradient was computed from x unrounded (float32)";
  std::printf("conv: weight gradient against rounded inputs %.2e, against unrounded %.2e\n", rounded, unrounded);
}

TEST(CpuBf16, AFullyConnectedLayerComputesFromBf16CopiesAndWritesFloat32) {
  SKIP_WITHOUT_BF16();
  constexpr int64_t n = 8, in = 256, out = 24;
  PlanContext plan;
  plan.precision = Precision::kBf16;
  const Tensor x = centred({n, in}, 4), w = centred({out, in}, 5);
  std::unique_ptr<LinearOp> op = make_linear(n, in, out, /*bias=*/false, /*need_dx=*/true, Device::kCpu, plan);
  Tensor y(plain_spec({n, out}));
  op->forward(x, w, nullptr, y);
  const auto products = [&](const std::vector<float>& xv, const std::vector<float>& wv) {
    std::vector<double> r(static_cast<size_t>(n * out));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t o = 0; o < out; ++o)
        for (int64_t k = 0; k < in; ++k) r[i * out + o] += static_cast<double>(xv[i * in + k]) * wv[o * in + k];
    return r;
  };
  const double rounded = relative_error(y, products(values(x, true), values(w, true)));
  const double unrounded = relative_error(y, products(values(x, false), values(w, false)));
  EXPECT_LE(rounded, kRoundedBound) << "y is not the float32 sum of bf16 products";
  EXPECT_GE(unrounded, kUnroundedFloor) << "y was computed from unrounded (float32) inputs";
  std::printf("linear: y against rounded inputs %.2e, against unrounded %.2e\n", rounded, unrounded);

  // The backward products read bf16 copies too, dx the forward's copy of w (as PyTorch's autograd
  // keeps autocast's cast): w changed since the forward does not reach dx.
  const Tensor dy = centred({n, out}, 6);
  const std::vector<float> w_then = values(w, true);
  Tensor w_later = centred({out, in}, 7);
  Tensor dx(plain_spec({n, in})), dw(plain_spec({out, in}));
  op->backward_data(dy, w_later, dx);
  op->backward_weights(x, dy, dw, nullptr);
  const auto dx_sums = [&](const std::vector<float>& dyv, const std::vector<float>& wv) {
    std::vector<double> r(static_cast<size_t>(n * in));
    for (int64_t i = 0; i < n; ++i)
      for (int64_t k = 0; k < in; ++k)
        for (int64_t o = 0; o < out; ++o) r[i * in + k] += static_cast<double>(dyv[i * out + o]) * wv[o * in + k];
    return r;
  };
  const auto dw_sums = [&](const std::vector<float>& dyv, const std::vector<float>& xv) {
    std::vector<double> r(static_cast<size_t>(out * in));
    for (int64_t o = 0; o < out; ++o)
      for (int64_t k = 0; k < in; ++k)
        for (int64_t i = 0; i < n; ++i) r[o * in + k] += static_cast<double>(dyv[i * out + o]) * xv[i * in + k];
    return r;
  };
  const double dx_rounded = relative_error(dx, dx_sums(values(dy, true), w_then));
  EXPECT_LE(dx_rounded, kRoundedBound) << "dx is not the float32 sum of bf16 products with the forward's w";
  EXPECT_GE(relative_error(dx, dx_sums(values(dy, false), values(w, false))), kUnroundedFloor)
      << "dx was computed from unrounded (float32) inputs";
  EXPECT_GE(relative_error(dx, dx_sums(values(dy, true), values(w_later, true))), 0.1)
      << "dx read w as it is now, not the forward's copy";
  const double dw_rounded = relative_error(dw, dw_sums(values(dy, true), values(x, true)));
  EXPECT_LE(dw_rounded, kRoundedBound) << "dw is not the float32 sum of bf16 products";
  EXPECT_GE(relative_error(dw, dw_sums(values(dy, false), values(x, false))), kUnroundedFloor)
      << "dw was computed from unrounded (float32) inputs";
  std::printf("linear: dx against rounded inputs %.2e, dw %.2e\n", dx_rounded, dw_rounded);
}

TEST(CpuBf16, DropoutAndAccumulationComputeInFloat32AndRoundOnce) {
  SKIP_WITHOUT_BF16();
  PlanContext plan;
  plan.precision = Precision::kBf16;
  // A bf16 activation in a blocked layout: what a convolution writes.
  const TensorSpec spec =
      make_conv2d(Conv2dGeometry::square(kC, kK, 3, 1, 1), plain_spec({kN, kC, kH, kH}), false, plan)->y_spec();
  Tensor a(spec), b(spec), y(spec);
  reorder(centred({kN, kK, kH, kH}, 6), a);
  reorder(centred({kN, kK, kH, kH}, 7), b);
  const std::vector<float> a0 = values(a, false), b0 = values(b, false);

  constexpr float p = 0.3f;
  std::unique_ptr<DropoutOp> dropout = make_dropout(p, spec);
  dropout->set_step(5, 9);
  dropout->forward(a, y, /*training=*/true);
  const std::vector<float> kept = values(y, false);
  const float scale = 1.0f / (1.0f - p);  // as the op forms it
  int64_t zeros = 0, wrong = 0;
  for (size_t i = 0; i < kept.size(); ++i) {
    zeros += kept[i] == 0;
    wrong += kept[i] != 0 && kept[i] != round_bf16(a0[i] * scale);
  }
  EXPECT_EQ(wrong, 0) << "kept elements are not the bf16 rounding of x / (1 - p)";
  EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(kept.size()), p, 0.05);

  // And with 20 channels, which leave the layout's last block of 16 part padding.
  const TensorSpec padded =
      make_conv2d(Conv2dGeometry::square(kC, 20, 3, 1, 1), plain_spec({kN, kC, kH, kH}), false, plan)->y_spec();
  Tensor c(padded), d(padded);
  reorder(centred({kN, 20, kH, kH}, 8), c);
  reorder(centred({kN, 20, kH, kH}, 9), d);
  const std::vector<float> c0 = values(c, false), d0 = values(d, false);
  for (auto [into, from, into0, from0] : {std::tie(a, b, a0, b0), std::tie(c, d, c0, d0)}) {
    accumulate(into, from);
    const std::vector<float> sum = values(into, false);
    int64_t off = 0;
    for (size_t i = 0; i < sum.size(); ++i) off += sum[i] != round_bf16(into0[i] + from0[i]);
    EXPECT_EQ(off, 0) << "of " << sum.size() << " sums, these are not the bf16 rounding of the float32 sum";
  }
}

// root mean square of a - b over that of b, both read back as plain float32.
double rms_difference(const Tensor& a, const Tensor& b) {
  const std::vector<float> x = values(a, false), y = values(b, false);
  double miss = 0, square = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    miss += (static_cast<double>(x[i]) - y[i]) * (static_cast<double>(x[i]) - y[i]);
    square += static_cast<double>(y[i]) * y[i];
  }
  return std::sqrt(miss / square);
}

// Under bf16, conv_algorithm = "winograd" runs our F(2x2, 3x3) (Note [bf16 Winograd] in
// nn/ops/cpu/winograd_bf16.h) where it pays, and direct elsewhere. Its three passes agree with
// direct bf16's to a few times bf16's rounding (tests/nn/winograd_bf16_test.cpp checks them
// against exact sums), here from a plain float32 input, so the reorders in and out run too.
TEST(CpuBf16, WinogradRunsOursWhereItPaysAndAgreesWithDirect) {
  SKIP_WITHOUT_BF16();
  PlanContext direct, winograd;
  direct.precision = winograd.precision = Precision::kBf16;
  winograd.conv_algorithm = ConvAlgorithm::kWinograd;
  const Conv2dGeometry small = Conv2dGeometry::square(64, 64, 3, 1, 1);
  EXPECT_EQ(make_conv2d(small, plain_spec({2, 64, 14, 14}), true, winograd)->algorithm(), ConvAlgorithm::kDirect)
      << "64 channels are too few for bf16 Winograd to pay";
  Conv2dGeometry g = Conv2dGeometry::square(256, 272, 3, 1, 1);
  g.bias = true;
  const Tensor x = centred({2, 256, 15, 14}, 11), w = centred(g.weight_shape(), 12), b = centred({272}, 13);
  const auto ours = make_conv2d(g, x.spec(), true, winograd), theirs = make_conv2d(g, x.spec(), true, direct);
  if (!cpu::winograd_bf16_runs()) GTEST_SKIP() << "bf16 Winograd needs AVX-512 BW";
  ASSERT_EQ(ours->algorithm(), ConvAlgorithm::kWinograd);
  ASSERT_EQ(theirs->algorithm(), ConvAlgorithm::kDirect);
  Tensor y_ours(ours->y_spec()), y_theirs(theirs->y_spec());
  ours->forward(x, w, &b, y_ours);
  theirs->forward(x, w, &b, y_theirs);
  Tensor dy(ours->y_spec());
  reorder(centred({2, 272, 15, 14}, 14), dy);
  Tensor dy_theirs(theirs->y_spec());
  reorder(dy, dy_theirs);
  Tensor dx_ours(x.spec()), dx_theirs(x.spec());
  ours->backward_data(dy, w, dx_ours);
  theirs->backward_data(dy_theirs, w, dx_theirs);
  Tensor dw_ours(plain_spec(g.weight_shape())), dw_theirs(plain_spec(g.weight_shape()));
  Tensor db_ours(plain_spec({272})), db_theirs(plain_spec({272}));
  ours->backward_weights(x, dy, dw_ours, &db_ours);
  theirs->backward_weights(x, dy_theirs, dw_theirs, &db_theirs);
  const double fwd = rms_difference(y_ours, y_theirs), bwd = rms_difference(dx_ours, dx_theirs);
  const double bww = rms_difference(dw_ours, dw_theirs), bias = rms_difference(db_ours, db_theirs);
  std::printf("bf16 Winograd against direct bf16: y %.2e, dx %.2e, dw %.2e, db %.2e of their root mean square\n", fwd,
              bwd, bww, bias);
  EXPECT_LT(fwd, 1e-2);
  EXPECT_LT(bwd, 1e-2);
  EXPECT_LT(bww, 1e-2);
  EXPECT_LT(bias, 1e-5);  // both sum the same bf16 dy in float32
}

}  // namespace
}  // namespace rt
