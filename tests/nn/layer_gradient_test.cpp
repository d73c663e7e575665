// Every layer's backward against central finite differences, on small odd shapes, plain and
// blocked inputs, strides, padding, dilation, groups, and batch norm in both modes.
#include <gtest/gtest.h>

#include "nn/layers/add.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/concat.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dropout.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/pool2d.h"
#include "nn/layers/relu.h"
#include "tests/nn/gradcheck.h"

namespace rt::testing {
namespace {

void expect_ok(const GradcheckReport& r) {
  EXPECT_EQ(r.failures, 0) << r.failures << " probes out of tolerance; first: " << r.first_failure
                           << "; largest abs error " << r.max_abs_err << " at " << r.worst;
}

Conv2dGeometry conv_geometry(int64_t c, int64_t k, int64_t r, int64_t stride, int64_t pad, int64_t dil, int64_t groups,
                             bool bias) {
  Conv2dGeometry g = Conv2dGeometry::square(c, k, r, stride, pad);
  g.dilation_h = g.dilation_w = dil;
  g.groups = groups;
  g.bias = bias;
  return g;
}

// Keeps inputs at least `gap` away from 0 so ReLU's kink is not straddled by the difference.
float away_from_zero(size_t, int64_t, float u) { return u >= 0 ? 0.1f + u : -0.1f + u; }

TEST(Conv2dGradient, PlainInputOddSizeWithBias) {
  Conv2d layer(conv_geometry(3, 5, 3, 1, 1, 1, 1, true));
  expect_ok(gradcheck(layer, {plain_spec({2, 3, 7, 5})}));
}

TEST(Conv2dGradient, StrideTwoWithPaddingOnBlockedInput) {
  Conv2d layer(conv_geometry(16, 32, 3, 2, 1, 1, 1, false));
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 9, 9})}));
}

TEST(Conv2dGradient, StrideTwoWithoutPaddingDropsTheLastRow) {
  Conv2d layer(conv_geometry(4, 6, 3, 2, 0, 1, 1, true));
  expect_ok(gradcheck(layer, {plain_spec({1, 4, 8, 8})}));
}

TEST(Conv2dGradient, DilationTwo) {
  Conv2d layer(conv_geometry(3, 4, 3, 1, 2, 2, 1, true));
  expect_ok(gradcheck(layer, {plain_spec({2, 3, 7, 7})}));
}

TEST(Conv2dGradient, GroupsOfFourChannels) {
  Conv2d layer(conv_geometry(8, 12, 3, 1, 1, 1, 2, true));
  expect_ok(gradcheck(layer, {plain_spec({2, 8, 5, 6})}));
}

TEST(Conv2dGradient, OneByOneStrideTwoOnBlockedInput) {
  Conv2d layer(conv_geometry(16, 16, 1, 2, 0, 1, 1, false));
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 7, 7})}));
}

TEST(Conv2dGradient, RectangularKernelAsInceptionUses) {
  Conv2dGeometry g = conv_geometry(3, 4, 1, 1, 0, 1, 1, false);
  g.kernel_h = 1;
  g.kernel_w = 7;
  g.pad_w = 3;
  Conv2d layer(g);
  expect_ok(gradcheck(layer, {plain_spec({2, 3, 5, 9})}));
}

TEST(BatchNormGradient, TrainingModeOnBlockedInput) {
  BatchNorm2d layer(16);
  GradcheckOptions o;
  o.step = 3e-3;
  expect_ok(gradcheck(layer, {blocked_spec({3, 16, 5, 3})}, o));
}

TEST(BatchNormGradient, TrainingModeOnPlainInput) {
  BatchNorm2d layer(3);
  GradcheckOptions o;
  o.step = 3e-3;
  expect_ok(gradcheck(layer, {plain_spec({4, 3, 3, 5})}, o));
}

TEST(BatchNormGradient, InferenceModeUsesRunningStatistics) {
  BatchNorm2d layer(16, {1e-3, 0.1});
  GradcheckOptions o;
  o.training = false;
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 3, 3})}, o));
}

TEST(ReluGradient, BlockedInputAwayFromTheKink) {
  Relu layer;
  GradcheckOptions o;
  o.input_value = away_from_zero;
  o.step = 1e-2;
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 3, 5})}, o));
}

TEST(MaxPoolGradient, ThreeByThreeStrideTwoPaddingOne) {
  Pool2dGeometry g;
  g.kind = PoolKind::kMax;
  g.kernel_h = g.kernel_w = 3;
  g.stride_h = g.stride_w = 2;
  g.pad_h = g.pad_w = 1;
  Pool2d layer(g);
  GradcheckOptions o;
  // Distinct values spaced wider than the step, so the arg-max never changes under probing.
  o.input_value = [](size_t, int64_t i, float) { return static_cast<float>((i * 37) % 101) * 0.05f - 2.5f; };
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 7, 6})}, o));
}

TEST(AvgPoolGradient, CountIncludePadAndExcludePad) {
  for (bool include : {true, false}) {
    Pool2dGeometry g;
    g.kind = PoolKind::kAvg;
    g.kernel_h = g.kernel_w = 3;
    g.stride_h = g.stride_w = 1;
    g.pad_h = g.pad_w = 1;
    g.count_include_pad = include;
    Pool2d layer(g);
    expect_ok(gradcheck(layer, {plain_spec({2, 3, 5, 4})}));
  }
}

TEST(AdaptiveAvgPoolGradient, GlobalOnBlockedInput) {
  AdaptiveAvgPool2d layer(1, 1);
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 5, 3})}));
}

TEST(AdaptiveAvgPoolGradient, UnevenWindowsFiveToThree) {
  AdaptiveAvgPool2d layer(3, 2);
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 5, 7})}));
}

TEST(LinearGradient, WithAndWithoutBias) {
  for (bool bias : {true, false}) {
    Linear layer(7, 5, bias);
    expect_ok(gradcheck(layer, {plain_spec({3, 7})}));
  }
}

TEST(DropoutGradient, TrainingMaskIsFixedForAStep) {
  Dropout layer(0.3);
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 3, 3})}));
}

TEST(FlattenGradient, BlockedInputToPlainRows) {
  Flatten layer;
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 3, 2})}));
}

TEST(ConcatGradient, ChannelOffsetsOnAndOffTheBlockBoundary) {
  Concat aligned;
  expect_ok(gradcheck(aligned, {blocked_spec({2, 16, 3, 3}), blocked_spec({2, 32, 3, 3})}));
  Concat unaligned;
  expect_ok(gradcheck(unaligned, {plain_spec({2, 3, 3, 3}), plain_spec({2, 5, 3, 3}), plain_spec({2, 2, 3, 3})}));
}

TEST(AddGradient, MixedLayoutsReachBothInputs) {
  Add layer;
  expect_ok(gradcheck(layer, {blocked_spec({2, 16, 3, 3}), plain_spec({2, 16, 3, 3})}));
}

}  // namespace
}  // namespace rt::testing
