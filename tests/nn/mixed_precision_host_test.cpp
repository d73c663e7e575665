// The host side of mixed precision (Note [Mixed precision] in nn/ops/cuda/gpu_layout.h), checked
// where no GPU is: the GPU layouts' sizes and index arithmetic against a direct transpose, the
// dynamic loss scale against its rule, and the finite check that decides which steps are skipped.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <vector>

#include "base/check.h"
#include "nn/ops/cuda/gpu_layout.h"
#include "nn/ops/sgd_update.h"
#include "nn/optim/loss_scale.h"

namespace rt::testing {
namespace {

using cuda::DType;
using cuda::Format;

TEST(GpuLayout, SizesNamesAndEquality) {
  const Shape s{2, 3, 4, 5};
  EXPECT_TRUE(cuda::gpu_spec(s, DType::kF32, Format::kNchw).is_plain());
  const TensorSpec bf = cuda::gpu_spec(s, DType::kBf16, Format::kNhwc);
  const TensorSpec f16 = cuda::gpu_spec(s, DType::kF16, Format::kNhwc);
  EXPECT_EQ(bf.bytes(), size_t{120 * 2});
  EXPECT_EQ(cuda::gpu_spec(s, DType::kF32, Format::kNhwc).bytes(), size_t{120 * 4});
  EXPECT_EQ(bf.describe(), "(2, 3, 4, 5) nhwc bf16 cuda");
  EXPECT_TRUE(bf.same_as(cuda::gpu_spec(s, DType::kBf16, Format::kNhwc)));
  EXPECT_FALSE(bf.same_as(f16));
  EXPECT_FALSE(bf.same_as(plain_spec(s, Device::kCuda)));
  EXPECT_EQ(cuda::dtype_of(bf), DType::kBf16);
  EXPECT_EQ(cuda::format_of(bf), Format::kNhwc);
  EXPECT_EQ(cuda::dtype_of(plain_spec({7, 3}, Device::kCuda)), DType::kF32);
  EXPECT_EQ(cuda::activation_dtype(Precision::kBf16), DType::kBf16);
  EXPECT_EQ(cuda::activation_dtype(Precision::kFp16), DType::kF16);
  EXPECT_EQ(cuda::activation_dtype(Precision::kTf32), DType::kF32);
  try {
    cuda::gpu_spec({6, 4}, DType::kBf16, Format::kNhwc);
    ADD_FAILURE() << "a 16-bit 2-D GPU spec was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("(6, 4)"), std::string::npos) << e.what();
  }
}

// element_offset in NHWC against a transpose written out by hand, and element_index as its
// inverse in both formats.
TEST(GpuLayout, ElementOffsetsAreTheNhwcTransposeAndInvert) {
  const int64_t N = 2, C = 3, H = 4, W = 5;
  std::vector<int64_t> nhwc_position(static_cast<size_t>(N * C * H * W));
  int64_t next = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t w = 0; w < W; ++w)
        for (int64_t c = 0; c < C; ++c) nhwc_position[static_cast<size_t>(((n * C + c) * H + h) * W + w)] = next++;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t w = 0; w < W; ++w) {
          const int64_t nchw = ((n * C + c) * H + h) * W + w;
          ASSERT_EQ(cuda::element_offset(Format::kNchw, C, H, W, n, c, h, w), nchw);
          ASSERT_EQ(cuda::element_offset(Format::kNhwc, C, H, W, n, c, h, w), nhwc_position[static_cast<size_t>(nchw)]);
        }
  for (const Format f : {Format::kNchw, Format::kNhwc})
    for (int64_t at = 0; at < N * C * H * W; ++at) {
      const cuda::Index4 i = cuda::element_index(f, C, H, W, at);
      ASSERT_EQ(cuda::element_offset(f, C, H, W, i.n, i.c, i.h, i.w), at) << "offset " << at;
      // The 32-bit indexing the pooling kernels use where a tensor allows it.
      const auto i32 = [](int64_t v) { return static_cast<int32_t>(v); };
      const cuda::BasicIndex4<int32_t> j = cuda::element_index(f, i32(C), i32(H), i32(W), i32(at));
      ASSERT_TRUE(j.n == i.n && j.c == i.c && j.h == i.h && j.w == i.w) << "offset " << at;
      ASSERT_EQ(cuda::element_offset(f, i32(C), i32(H), i32(W), j.n, j.c, j.h, j.w), at) << "offset " << at;
    }
}

// The per-channel walk (batch norm's constant-statistics kernel) visits each channel's
// elements in (n, h, w) order, through the same offsets as element_offset.
TEST(GpuLayout, ChannelWalksVisitEachChannelInOrder) {
  const int64_t N = 2, C = 3, H = 4, W = 5;
  for (const Format f : {Format::kNchw, Format::kNhwc})
    for (int64_t c = 0; c < C; ++c) {
      int64_t i = 0;
      for (int64_t n = 0; n < N; ++n)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w, ++i)
            ASSERT_EQ(cuda::channel_element(f, C, H * W, c, i), cuda::element_offset(f, C, H, W, n, c, h, w))
                << "channel " << c << ", element " << i;
    }
}

TEST(LossScale, HalvesAndSkipsOnOverflowAndGrowsAfterTheInterval) {
  LossScaleOptions o;
  o.growth_interval = 3;
  LossScaler s(o);
  EXPECT_EQ(s.scale(), 65536);
  EXPECT_FALSE(s.update(false, 0));
  EXPECT_FALSE(s.update(false, 1));
  EXPECT_EQ(s.scale(), 16384);
  EXPECT_EQ(s.skipped_steps(), 2);
  EXPECT_TRUE(s.update(true, 2));
  EXPECT_TRUE(s.update(true, 3));
  EXPECT_EQ(s.scale(), 16384);  // two finite steps: not yet
  EXPECT_TRUE(s.update(true, 4));
  EXPECT_EQ(s.scale(), 32768);  // the third in a row doubles it
  EXPECT_TRUE(s.update(true, 5));
  EXPECT_FALSE(s.update(false, 6));  // an overflow restarts the count
  EXPECT_TRUE(s.update(true, 7));
  EXPECT_TRUE(s.update(true, 8));
  EXPECT_EQ(s.scale(), 16384);
  EXPECT_TRUE(s.update(true, 9));
  EXPECT_EQ(s.scale(), 32768);
  EXPECT_EQ(s.skipped_steps(), 3);
}

TEST(LossScale, FailsWhenTheScaleCollapsesNamingTheStep) {
  LossScaleOptions o;
  o.initial = 4;
  o.smallest = 1;
  LossScaler s(o);
  EXPECT_FALSE(s.update(false, 10));
  EXPECT_FALSE(s.update(false, 11));
  try {
    s.update(false, 12);
    ADD_FAILURE() << "the loss scale fell below its floor without an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("step 13"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("inf or NaN 3 time(s)"), std::string::npos) << e.what();
  }
}

TEST(LossScale, FiniteCheckFindsInfinityAndNaNAnywhere) {
  std::vector<float> g(100001, 0.5f);
  EXPECT_TRUE(all_finite(Device::kCpu, g.data(), static_cast<int64_t>(g.size())));
  EXPECT_TRUE(all_finite(Device::kCpu, g.data(), 0));
  for (const float bad : {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                          std::numeric_limits<float>::quiet_NaN()})
    for (const size_t at : {size_t{0}, size_t{777}, g.size() - 1}) {
      g[at] = bad;
      EXPECT_FALSE(all_finite(Device::kCpu, g.data(), static_cast<int64_t>(g.size()))) << bad << " at " << at;
      g[at] = 0.5f;
    }
  g[5] = std::numeric_limits<float>::max();  // large is still finite
  EXPECT_TRUE(all_finite(Device::kCpu, g.data(), static_cast<int64_t>(g.size())));
}

}  // namespace
}  // namespace rt::testing
