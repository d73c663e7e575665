// ConvAlgorithm::kWinograd against two independent references: forward against plain loops in
// double, backward (data and weights) against the direct algorithm, whose gradients
// layer_gradient_test checks by finite differences. Inputs are zero-mean, where Winograd's
// rounding is comparable to direct's; geometries it cannot run fall back to direct.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/reorder.h"
#include "tests/nn/gradcheck.h"

namespace rt::testing {
namespace {

std::vector<float> centred_values(int64_t n, uint64_t stream) {
  Rng rng(77, stream);
  std::vector<float> v(static_cast<size_t>(n));
  for (float& x : v) x = static_cast<float>(2 * rng.uniform() - 1);
  return v;
}

// max |got - want| / max |want|, both read back as plain.
double relative_error(const Tensor& got, const std::vector<double>& want) {
  const Tensor plain = to_plain(got);
  double err = 0, ref = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    ref = std::max(ref, std::abs(want[i]));
    const double e = std::abs(static_cast<double>(plain.data()[i]) - want[i]);
    if (!(e <= err)) err = e;  // NaN counts as worst
  }
  return err / std::max(ref, 1e-30);
}

std::vector<double> as_double(const Tensor& t) {
  const Tensor plain = to_plain(t);
  return std::vector<double>(plain.data(), plain.data() + plain.numel());
}

std::vector<double> naive_conv3x3(const Shape& xs, int64_t K, const std::vector<float>& x, const std::vector<float>& w,
                                  const std::vector<float>& b) {
  const int64_t N = xs[0], C = xs[1], H = xs[2], W = xs[3];
  std::vector<double> y(static_cast<size_t>(N * K * H * W));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t k = 0; k < K; ++k)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t ww = 0; ww < W; ++ww) {
          double s = b[k];
          for (int64_t c = 0; c < C; ++c)
            for (int64_t r = 0; r < 3; ++r)
              for (int64_t q = 0; q < 3; ++q) {
                const int64_t ih = h + r - 1, iw = ww + q - 1;
                if (ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                s += static_cast<double>(x[((n * C + c) * H + ih) * W + iw]) * w[((k * C + c) * 3 + r) * 3 + q];
              }
          y[((n * K + k) * H + h) * W + ww] = s;
        }
  return y;
}

struct Case {
  int64_t batch, in_channels, out_channels, size;
};

class WinogradConv : public ::testing::TestWithParam<Case> {};

TEST_P(WinogradConv, ForwardMatchesLoopsAndBackwardMatchesDirect) {
  const Case c = GetParam();
  const Conv2dGeometry g = [&] {
    Conv2dGeometry geo = Conv2dGeometry::square(c.in_channels, c.out_channels, 3, 1, 1);
    geo.bias = true;
    return geo;
  }();
  const TensorSpec x_spec = blocked_spec({c.batch, c.in_channels, c.size, c.size});
  auto wino = make_conv2d(g, x_spec, true, {.conv_algorithm = ConvAlgorithm::kWinograd});
  auto direct = make_conv2d(g, x_spec, true, {.conv_algorithm = ConvAlgorithm::kDirect});
  ASSERT_EQ(direct->algorithm(), ConvAlgorithm::kDirect);
  if (wino->algorithm() != ConvAlgorithm::kWinograd)
    GTEST_SKIP() << "oneDNN has no Winograd convolution on this CPU (it needs AVX-512); direct was used";

  const std::vector<float> x = centred_values(numel(x_spec.shape), 1), w = centred_values(numel(g.weight_shape()), 2),
                           b = centred_values(g.out_channels, 3);
  const Tensor xt = tensor_from_plain(x_spec, x), wt = tensor_from_plain(plain_spec(g.weight_shape()), w),
               bt = tensor_from_plain(plain_spec({g.out_channels}), b);
  Tensor y(wino->y_spec());
  wino->forward(xt, wt, &bt, y);
  EXPECT_LE(relative_error(y, naive_conv3x3(x_spec.shape, g.out_channels, x, w, b)), 1e-5) << "forward";

  ASSERT_TRUE(wino->y_spec().same_as(direct->y_spec()));
  const Tensor dy = tensor_from_plain(wino->y_spec(), centred_values(numel(wino->y_spec().shape), 4));
  Tensor dx_w(x_spec), dx_d(x_spec), dw_w(plain_spec(g.weight_shape())), dw_d(plain_spec(g.weight_shape()));
  Tensor db_w(plain_spec({g.out_channels})), db_d(plain_spec({g.out_channels}));
  wino->backward_data(dy, wt, dx_w);
  direct->backward_data(dy, wt, dx_d);
  wino->backward_weights(xt, dy, dw_w, &db_w);
  direct->backward_weights(xt, dy, dw_d, &db_d);
  EXPECT_LE(relative_error(dx_w, as_double(dx_d)), 1e-5) << "backward data";
  EXPECT_LE(relative_error(dw_w, as_double(dw_d)), 1e-5) << "backward weights";
  EXPECT_LE(relative_error(db_w, as_double(db_d)), 1e-5) << "bias gradient";
}

// Channel counts in multiples of 16 (the blocked layout); sizes not multiples of the 4x4 tile.
INSTANTIATE_TEST_SUITE_P(Shapes, WinogradConv,
                         ::testing::Values(Case{2, 16, 32, 9}, Case{3, 32, 16, 14}, Case{1, 64, 64, 7}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return str_cat("b", c.batch, "_c", c.in_channels, "_k", c.out_channels, "_", c.size, "px");
                         });

TEST(WinogradConvFallback, ShapesWithoutAWinogradKernelRunDirect) {
  const TensorSpec x = blocked_spec({2, 16, 12, 12});
  const PlanContext winograd{.conv_algorithm = ConvAlgorithm::kWinograd};
  EXPECT_EQ(make_conv2d(Conv2dGeometry::square(16, 16, 3, 2, 1), x, true, winograd)->algorithm(),
            ConvAlgorithm::kDirect)
      << "stride 2";
  EXPECT_EQ(make_conv2d(Conv2dGeometry::square(16, 16, 1), x, true, winograd)->algorithm(), ConvAlgorithm::kDirect)
      << "1x1";
  Conv2dGeometry grouped = Conv2dGeometry::square(16, 16, 3, 1, 1);
  grouped.groups = 4;
  EXPECT_EQ(make_conv2d(grouped, x, true, winograd)->algorithm(), ConvAlgorithm::kDirect) << "grouped";
}

}  // namespace
}  // namespace rt::testing
