// CPU forward ops against a second, naive implementation written here as plain loops with double
// accumulation and PyTorch's definitions: conv2d, max/avg/adaptive-avg pooling, linear, batch norm
// (training and inference) and channel concat, on plain and blocked inputs. Outputs are read back
// through to_plain; plain -> blocked -> plain reordering must be bit-exact.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/concat.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/linear.h"
#include "nn/ops/pool2d.h"
#include "nn/ops/reorder.h"
#include "tests/nn/gradcheck.h"

namespace rt::testing {
namespace {

std::vector<float> random_values(int64_t n, uint64_t stream, float lo = -1, float hi = 1) {
  Rng rng(2024, stream);
  std::vector<float> v(n);
  for (float& x : v) x = lo + (hi - lo) * rng.uniform();
  return v;
}

// max |got - want| <= rel_tol * max |want| (plus a tiny floor for all-zero references).
void expect_matches(const std::string& what, const Tensor& got, const Shape& want_shape,
                    const std::vector<double>& want, double rel_tol = 1e-5) {
  ASSERT_EQ(got.shape(), want_shape) << what << ": output shape";
  const Tensor plain = to_plain(got);
  ASSERT_EQ(static_cast<size_t>(plain.numel()), want.size()) << what;
  double max_ref = 0, max_abs = 0;
  int64_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_ref = std::max(max_ref, std::abs(want[i]));
    const double err = std::abs(static_cast<double>(plain.data()[i]) - want[i]);
    if (!(err <= max_abs)) max_abs = err, worst = static_cast<int64_t>(i);  // NaN counts as worst
  }
  const double tol = rel_tol * max_ref + 1e-12;
  EXPECT_LE(max_abs, tol) << what << " " << got.spec().describe() << ": largest abs error " << max_abs << " at "
                          << index_str(worst, want_shape) << " (op " << plain.data()[worst] << ", naive " << want[worst]
                          << "), relative to max |naive| = " << max_ref << ": " << max_abs / std::max(max_ref, 1e-300);
}

// ---- conv2d ----

Conv2dGeometry conv_geometry(int64_t c, int64_t k, int64_t r, int64_t s, int64_t stride, int64_t pad, int64_t dil,
                             int64_t groups, bool bias) {
  Conv2dGeometry g = Conv2dGeometry::square(c, k, r, stride, pad);
  g.kernel_w = s;
  g.dilation_h = g.dilation_w = dil;
  g.groups = groups;
  g.bias = bias;
  return g;
}

std::vector<double> naive_conv2d(const Conv2dGeometry& g, const Shape& xs, const std::vector<float>& x,
                                 const std::vector<float>& w, const std::vector<float>& b) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3], K = g.out_channels, R = g.kernel_h, S = g.kernel_w;
  const int64_t OH = (H + 2 * g.pad_h - g.dilation_h * (R - 1) - 1) / g.stride_h + 1;
  const int64_t OW = (W + 2 * g.pad_w - g.dilation_w * (S - 1) - 1) / g.stride_w + 1;
  const int64_t Cg = C / g.groups, Kg = K / g.groups;
  std::vector<double> y(N * K * OH * OW);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t oh = 0; oh < OH; ++oh)
        for (int64_t ow = 0; ow < OW; ++ow) {
          double s = g.bias ? b[k] : 0.0;
          const int64_t group = k / Kg;
          for (int64_t c = 0; c < Cg; ++c)
            for (int64_t r = 0; r < R; ++r)
              for (int64_t q = 0; q < S; ++q) {
                const int64_t h = oh * g.stride_h - g.pad_h + r * g.dilation_h;
                const int64_t ww = ow * g.stride_w - g.pad_w + q * g.dilation_w;
                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                s += static_cast<double>(x[((n * C + group * Cg + c) * H + h) * W + ww]) *
                     w[((k * Cg + c) * R + r) * S + q];
              }
          y[((n * K + k) * OH + oh) * OW + ow] = s;
        }
  return y;
}

void check_conv(const Conv2dGeometry& g, const TensorSpec& x_spec) {
  const std::vector<float> x = random_values(numel(x_spec.shape), 1);
  const std::vector<float> w = random_values(numel(g.weight_shape()), 2);
  const std::vector<float> b = random_values(g.out_channels, 3);
  auto op = make_conv2d(g, x_spec, false);
  Tensor xt = tensor_from_plain(x_spec, x), wt = tensor_from_plain(plain_spec(g.weight_shape()), w);
  Tensor bt = tensor_from_plain(plain_spec({g.out_channels}), b);
  Tensor y(op->y_spec());
  op->forward(xt, wt, g.bias ? &bt : nullptr, y);
  expect_matches("conv2d", y, g.output_shape(x_spec.shape), naive_conv2d(g, x_spec.shape, x, w, b));
}

TEST(ConvForward, MatchesNaiveLoopsOnOddPlainInputWithBias) {
  check_conv(conv_geometry(3, 5, 3, 3, 1, 1, 1, 1, true), plain_spec({2, 3, 7, 5}));
}

TEST(ConvForward, MatchesNaiveLoopsWithDilationAndGroups) {
  check_conv(conv_geometry(8, 12, 3, 3, 1, 2, 2, 4, true), plain_spec({2, 8, 9, 7}));
}

TEST(ConvForward, MatchesNaiveLoopsWithStrideTwoOnBlockedInput) {
  check_conv(conv_geometry(16, 32, 3, 3, 2, 1, 1, 1, false), blocked_spec({2, 16, 9, 9}));
}

TEST(ConvForward, MatchesNaiveLoopsWhenStrideDropsTheLastRows) {
  check_conv(conv_geometry(4, 6, 3, 3, 2, 0, 1, 1, true), plain_spec({1, 4, 8, 8}));
}

TEST(ConvForward, MatchesNaiveLoopsForDepthwiseOnBlockedInput) {
  check_conv(conv_geometry(16, 16, 3, 3, 1, 1, 1, 16, true), blocked_spec({2, 16, 6, 5}));
}

TEST(ConvForward, MatchesNaiveLoopsWithRectangularKernelsAndUnequalStridesAndPadding) {
  Conv2dGeometry g = conv_geometry(3, 4, 3, 5, 1, 0, 1, 1, true);
  g.stride_h = 2;
  g.pad_h = 1;
  g.pad_w = 2;
  g.dilation_w = 2;
  check_conv(g, plain_spec({2, 3, 11, 10}));
  Conv2dGeometry row = conv_geometry(20, 8, 1, 7, 1, 0, 1, 1, true);
  row.pad_w = 3;
  check_conv(row, blocked_spec({2, 20, 5, 9}));
}

// ---- pooling ----

std::vector<double> naive_pool2d(const Pool2dGeometry& g, const Shape& xs, const std::vector<float>& x) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  const int64_t OH = (H + 2 * g.pad_h - g.kernel_h) / g.stride_h + 1,
                OW = (W + 2 * g.pad_w - g.kernel_w) / g.stride_w + 1;
  std::vector<double> y(N * C * OH * OW);
  for (int64_t nc = 0; nc < N * C; ++nc)
    for (int64_t oh = 0; oh < OH; ++oh)
      for (int64_t ow = 0; ow < OW; ++ow) {
        // PyTorch: the padded window [start, min(start + k, in + pad)), then clipped to the input.
        const int64_t h0 = oh * g.stride_h - g.pad_h, w0 = ow * g.stride_w - g.pad_w;
        const int64_t h1 = std::min(h0 + g.kernel_h, H + g.pad_h), w1 = std::min(w0 + g.kernel_w, W + g.pad_w);
        const int64_t padded = (h1 - h0) * (w1 - w0);
        double mx = -std::numeric_limits<double>::infinity(), sum = 0;
        int64_t count = 0;
        for (int64_t h = std::max<int64_t>(h0, 0); h < std::min(h1, H); ++h)
          for (int64_t w = std::max<int64_t>(w0, 0); w < std::min(w1, W); ++w) {
            const double v = x[(nc * H + h) * W + w];
            mx = std::max(mx, v);
            sum += v;
            ++count;
          }
        double out = mx;
        if (g.kind == PoolKind::kAvg) out = sum / static_cast<double>(g.count_include_pad ? padded : count);
        y[(nc * OH + oh) * OW + ow] = out;
      }
  return y;
}

Pool2dGeometry pool_geometry(PoolKind kind, int64_t kh, int64_t kw, int64_t sh, int64_t sw, int64_t ph, int64_t pw,
                             bool count_include_pad = true) {
  Pool2dGeometry g;
  g.kind = kind;
  g.kernel_h = kh;
  g.kernel_w = kw;
  g.stride_h = sh;
  g.stride_w = sw;
  g.pad_h = ph;
  g.pad_w = pw;
  g.count_include_pad = count_include_pad;
  return g;
}

void check_pool(const Pool2dGeometry& g, const TensorSpec& x_spec) {
  const std::vector<float> x = random_values(numel(x_spec.shape), 4);
  auto op = make_pool2d(g, x_spec);
  Tensor xt = tensor_from_plain(x_spec, x), y(op->y_spec());
  op->forward(xt, y, true);
  const std::string what =
      str_cat(g.kind == PoolKind::kMax ? "max" : "avg", "_pool2d ", g.kernel_h, "x", g.kernel_w, " stride ", g.stride_h,
              "x", g.stride_w, " pad ", g.pad_h, "x", g.pad_w, g.count_include_pad ? "" : " exclude-pad");
  expect_matches(what, y, g.output_shape(x_spec.shape), naive_pool2d(g, x_spec.shape, x));
}

TEST(MaxPoolForward, MatchesNaiveLoopsWithPaddingOnBlockedInput) {
  check_pool(pool_geometry(PoolKind::kMax, 3, 3, 2, 2, 1, 1), blocked_spec({2, 16, 7, 6}));
}

TEST(MaxPoolForward, MatchesNaiveLoopsOnOddPlainInput) {
  check_pool(pool_geometry(PoolKind::kMax, 2, 2, 2, 2, 0, 0), plain_spec({2, 3, 7, 5}));
  check_pool(pool_geometry(PoolKind::kMax, 2, 3, 1, 2, 1, 1), plain_spec({1, 4, 6, 9}));
}

TEST(AvgPoolForward, MatchesNaiveLoopsCountingPadding) {
  check_pool(pool_geometry(PoolKind::kAvg, 3, 3, 2, 2, 1, 1, true), blocked_spec({2, 16, 7, 7}));
  check_pool(pool_geometry(PoolKind::kAvg, 2, 3, 1, 2, 1, 1, true), plain_spec({2, 5, 6, 9}));
}

TEST(AvgPoolForward, MatchesNaiveLoopsExcludingPadding) {
  check_pool(pool_geometry(PoolKind::kAvg, 3, 3, 2, 2, 1, 1, false), blocked_spec({2, 16, 7, 7}));
  check_pool(pool_geometry(PoolKind::kAvg, 2, 3, 1, 2, 1, 1, false), plain_spec({2, 5, 6, 9}));
}

std::vector<double> naive_adaptive_avg_pool2d(const Shape& xs, int64_t OH, int64_t OW, const std::vector<float>& x) {
  const int64_t NC = xs[0] * xs[1], H = xs[2], W = xs[3];
  std::vector<double> y(NC * OH * OW);
  for (int64_t nc = 0; nc < NC; ++nc)
    for (int64_t i = 0; i < OH; ++i)
      for (int64_t j = 0; j < OW; ++j) {
        // PyTorch: start = floor(i * in / out), end = ceil((i + 1) * in / out).
        const auto h0 = static_cast<int64_t>(std::floor(static_cast<double>(i * H) / static_cast<double>(OH)));
        const auto h1 = static_cast<int64_t>(std::ceil(static_cast<double>((i + 1) * H) / static_cast<double>(OH)));
        const auto w0 = static_cast<int64_t>(std::floor(static_cast<double>(j * W) / static_cast<double>(OW)));
        const auto w1 = static_cast<int64_t>(std::ceil(static_cast<double>((j + 1) * W) / static_cast<double>(OW)));
        double s = 0;
        for (int64_t h = h0; h < h1; ++h)
          for (int64_t w = w0; w < w1; ++w) s += x[(nc * H + h) * W + w];
        y[(nc * OH + i) * OW + j] = s / static_cast<double>((h1 - h0) * (w1 - w0));
      }
  return y;
}

void check_adaptive(const TensorSpec& x_spec, int64_t out_h, int64_t out_w) {
  const std::vector<float> x = random_values(numel(x_spec.shape), 5);
  auto op = make_adaptive_avg_pool2d(out_h, out_w, x_spec);
  Tensor xt = tensor_from_plain(x_spec, x), y(op->y_spec());
  op->forward(xt, y, true);
  const Shape& s = x_spec.shape;
  expect_matches(str_cat("adaptive_avg_pool2d ", shape_str(s), " -> ", out_h, "x", out_w), y,
                 {s[0], s[1], out_h, out_w}, naive_adaptive_avg_pool2d(s, out_h, out_w, x));
}

TEST(AdaptiveAvgPoolForward, MatchesPyTorchWindowsWhenTheyAreUneven) {
  check_adaptive(plain_spec({2, 5, 7, 10}), 3, 4);
  check_adaptive(blocked_spec({2, 16, 7, 7}), 3, 3);
  check_adaptive(plain_spec({1, 3, 5, 5}), 5, 5);
  check_adaptive(plain_spec({1, 3, 4, 6}), 6, 4);  // more outputs than inputs: overlapping windows
}

TEST(AdaptiveAvgPoolForward, MatchesNaiveLoopsForUniformAndGlobalWindows) {
  check_adaptive(blocked_spec({2, 16, 8, 8}), 2, 2);
  check_adaptive(blocked_spec({2, 64, 7, 7}), 1, 1);
  check_adaptive(plain_spec({3, 5, 6, 4}), 1, 1);
}

// ---- linear ----

TEST(LinearForward, MatchesNaiveLoopsWithAndWithoutBias) {
  const int64_t N = 5, I = 37, O = 11;
  const std::vector<float> x = random_values(N * I, 6), w = random_values(O * I, 7), b = random_values(O, 8);
  for (bool bias : {true, false}) {
    auto op = make_linear(N, I, O, bias, false, Device::kCpu);
    Tensor xt = tensor_from_plain(plain_spec({N, I}), x), wt = tensor_from_plain(plain_spec({O, I}), w);
    Tensor bt = tensor_from_plain(plain_spec({O}), b), y(plain_spec({N, O}));
    op->forward(xt, wt, bias ? &bt : nullptr, y);
    std::vector<double> want(N * O);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t o = 0; o < O; ++o) {
        double s = bias ? b[o] : 0.0;
        for (int64_t i = 0; i < I; ++i) s += static_cast<double>(x[n * I + i]) * w[o * I + i];
        want[n * O + o] = s;
      }
    expect_matches(bias ? "linear with bias" : "linear without bias", y, {N, O}, want);
  }
}

// ---- batch norm ----

struct BnCase {
  std::vector<float> x, gamma, beta, mean, var;  // mean, var: running statistics (C)
};

BnCase bn_case(const Shape& s) {
  BnCase c;
  // An offset and spread per channel, so mean and variance matter.
  c.x = random_values(numel(s), 9);
  const int64_t C = s[1], HW = s[2] * s[3];
  for (int64_t i = 0; i < numel(s); ++i) {
    const int64_t ch = (i / HW) % C;
    c.x[i] = c.x[i] * (0.5f + 0.25f * static_cast<float>(ch % 5)) + 0.3f * static_cast<float>(ch % 3) - 0.2f;
  }
  c.gamma = random_values(C, 10, 0.5f, 1.5f);
  c.beta = random_values(C, 11, -0.5f, 0.5f);
  c.mean = random_values(C, 12, -0.3f, 0.3f);
  c.var = random_values(C, 13, 0.5f, 2.0f);
  return c;
}

void check_batch_norm(const TensorSpec& x_spec, bool training) {
  const Shape& s = x_spec.shape;
  const int64_t N = s[0], C = s[1], HW = s[2] * s[3];
  const BnCase c = bn_case(s);
  const BatchNormOptions o;
  auto op = make_batch_norm(o, x_spec);
  Tensor xt = tensor_from_plain(x_spec, c.x), y(x_spec);
  Tensor gamma = tensor_from_plain(plain_spec({C}), c.gamma), beta = tensor_from_plain(plain_spec({C}), c.beta);
  Tensor rmean = tensor_from_plain(plain_spec({C}), c.mean), rvar = tensor_from_plain(plain_spec({C}), c.var);
  if (training)
    op->forward_training(xt, gamma, beta, y, rmean, rvar);
  else
    op->forward_inference(xt, gamma, beta, y, rmean, rvar);

  std::vector<double> want(numel(s)), want_mean(C), want_var(C);
  for (int64_t ch = 0; ch < C; ++ch) {
    double mean = c.mean[ch], var = c.var[ch];
    if (training) {
      double sum = 0, sq = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < HW; ++i) sum += c.x[(n * C + ch) * HW + i];
      mean = sum / static_cast<double>(N * HW);
      for (int64_t n = 0; n < N; ++n)
        for (int64_t i = 0; i < HW; ++i) sq += std::pow(c.x[(n * C + ch) * HW + i] - mean, 2);
      var = sq / static_cast<double>(N * HW);  // biased, for normalisation
      const double unbiased = sq / static_cast<double>(N * HW - 1);
      want_mean[ch] = (1 - o.momentum) * c.mean[ch] + o.momentum * mean;
      want_var[ch] = (1 - o.momentum) * c.var[ch] + o.momentum * unbiased;
    } else {
      want_mean[ch] = c.mean[ch];
      want_var[ch] = c.var[ch];
    }
    const double inv = 1 / std::sqrt(var + o.eps);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < HW; ++i) {
        const int64_t k = (n * C + ch) * HW + i;
        want[k] = c.gamma[ch] * (c.x[k] - mean) * inv + c.beta[ch];
      }
  }
  const std::string mode = training ? "training" : "inference";
  expect_matches("batch_norm " + mode + " y", y, s, want);
  expect_matches("batch_norm " + mode + " running_mean", rmean, {C}, want_mean);
  expect_matches("batch_norm " + mode + " running_var", rvar, {C}, want_var);
}

TEST(BatchNormForward, TrainingNormalisesWithBatchStatisticsAndUpdatesRunningOnes) {
  check_batch_norm(plain_spec({3, 5, 4, 3}), true);
  check_batch_norm(blocked_spec({2, 16, 5, 3}), true);
  check_batch_norm(blocked_spec({2, 20, 3, 3}), true);
}

TEST(BatchNormForward, InferenceNormalisesWithRunningStatistics) {
  check_batch_norm(plain_spec({3, 5, 4, 3}), false);
  check_batch_norm(blocked_spec({2, 16, 5, 3}), false);
  check_batch_norm(blocked_spec({2, 20, 3, 3}), false);
}

// ---- concat ----

void check_concat(const std::vector<TensorSpec>& specs) {
  std::vector<std::vector<float>> xs;
  std::vector<Tensor> ts;
  std::vector<const Tensor*> ptrs;
  int64_t K = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    xs.push_back(random_values(numel(specs[i].shape), 20 + i));
    ts.push_back(tensor_from_plain(specs[i], xs.back()));
    K += specs[i].shape[1];
  }
  for (const Tensor& t : ts) ptrs.push_back(&t);
  auto op = make_concat(specs);
  Tensor y(op->y_spec());
  op->forward(ptrs, y);
  const int64_t N = specs[0].shape[0], HW = specs[0].shape[2] * specs[0].shape[3];
  std::vector<double> want(N * K * HW);
  std::ostringstream what;
  what << "concat of";
  int64_t offset = 0;
  for (size_t i = 0; i < specs.size(); ++i) {
    const int64_t Ci = specs[i].shape[1];
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < Ci; ++c)
        for (int64_t p = 0; p < HW; ++p) want[(n * K + offset + c) * HW + p] = xs[i][(n * Ci + c) * HW + p];
    offset += Ci;
    what << " " << specs[i].describe();
  }
  expect_matches(what.str(), y, {N, K, specs[0].shape[2], specs[0].shape[3]}, want, 0);
}

TEST(ConcatForward, CopiesEachInputIntoItsChannelRange) {
  check_concat({plain_spec({2, 3, 4, 5}), plain_spec({2, 5, 4, 5}), plain_spec({2, 8, 4, 5})});
  check_concat({blocked_spec({2, 16, 3, 3}), blocked_spec({2, 32, 3, 3})});
  check_concat({blocked_spec({2, 16, 3, 3}), blocked_spec({2, 20, 3, 3}), blocked_spec({2, 64, 3, 3})});
  check_concat({blocked_spec({2, 16, 3, 3}), plain_spec({2, 3, 3, 3})});
}

// ---- reorder ----

TEST(Reorder, PlainToBlockedToPlainIsBitExact) {
  for (int64_t C : {3, 16, 20, 64}) {
    const Shape s{2, C, 5, 7};
    const TensorSpec blocked = blocked_spec(s);
    const std::vector<float> x = random_values(numel(s), 30 + C, -1e3f, 1e3f);
    Tensor plain = tensor_from_plain(plain_spec(s), x), mid(blocked);
    reorder(plain, mid);
    const Tensor back = to_plain(mid);
    ASSERT_EQ(back.shape(), s);
    int64_t first_diff = -1;
    for (int64_t i = 0; i < back.numel() && first_diff < 0; ++i)
      if (std::memcmp(&back.data()[i], &x[i], sizeof(float)) != 0) first_diff = i;
    EXPECT_EQ(first_diff, -1) << "C = " << C << " via " << blocked.describe() << ": first difference at "
                              << index_str(first_diff, s) << ": " << back.data()[first_diff] << " vs " << x[first_diff];
  }
}

}  // namespace
}  // namespace rt::testing
