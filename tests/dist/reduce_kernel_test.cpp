// The ring's byte kernels against plain loops: stream_copy at every source and destination
// misalignment and length around its 64-byte body, add_into with and without the final scale.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "dist/reduce_kernel.h"

namespace rt {
namespace {

TEST(StreamCopy, CopiesEveryAlignmentAndLengthExactly) {
  std::vector<unsigned char> src(400), dst(400);
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 37 + 11);
  for (size_t s_off : {0, 1, 4, 13, 16})
    for (size_t d_off = 0; d_off < 16; ++d_off)
      for (size_t n : {0, 1, 15, 16, 63, 64, 65, 127, 200, 320}) {
        std::fill(dst.begin(), dst.end(), 0xAB);
        stream_copy(dst.data() + d_off, src.data() + s_off, n);
        ASSERT_EQ(std::memcmp(dst.data() + d_off, src.data() + s_off, n), 0) << s_off << " " << d_off << " " << n;
        for (size_t i = 0; i < dst.size(); ++i)
          if (i < d_off || i >= d_off + n) {
            ASSERT_EQ(dst[i], 0xAB) << "wrote outside the range at " << i;
          }
      }
}

TEST(AddInto, SumsAndScalesInOnePass) {
  std::vector<float> a(37), b(37);
  for (size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(i), b[i] = 2.0f * static_cast<float>(i) + 1;
  std::vector<float> sum = a;
  add_into(sum.data(), b.data(), sum.size(), 1.0f);
  std::vector<float> avg = a;
  add_into(avg.data(), b.data(), avg.size(), 0.5f);
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(sum[i], 3.0f * static_cast<float>(i) + 1) << i;
    EXPECT_EQ(avg[i], (3.0f * static_cast<float>(i) + 1) * 0.5f) << i;
  }
}

}  // namespace
}  // namespace rt
