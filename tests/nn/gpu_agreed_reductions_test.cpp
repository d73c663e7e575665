// The agreed reductions (Note [Agreed reductions]) on the GPU: the same bits on every call, the
// sum of squares against the CPU's, and the fingerprint changed by any one flipped bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"
#include "nn/device.h"
#include "nn/ops/agreed_reductions.h"
#include "tests/nn/gpu_parity.h"

namespace rt {
namespace {

using testing::GpuParity;

TEST_F(GpuParity, AgreedReductionsRepeatExactlyAndMatchTheCpu) {
  const int64_t n = 3 * kAgreedChunk + 777;
  std::vector<float> x(static_cast<size_t>(n));
  Rng rng(3, 0);
  for (float& v : x) v = static_cast<float>(rng.uniform() * 2 - 1);
  const size_t bytes = sizeof(float) * x.size();
  std::shared_ptr<void> gpu = allocate_zeroed(Device::kCuda, bytes);
  float* g = static_cast<float*>(gpu.get());
  copy_bytes(g, Device::kCuda, x.data(), Device::kCpu, bytes);
  const double sum = sum_of_squares(Device::kCuda, g, n);
  EXPECT_EQ(sum_of_squares(Device::kCuda, g, n), sum);
  EXPECT_NEAR(sum, sum_of_squares(Device::kCpu, x.data(), n), 1e-12 * sum);
  const uint64_t print = fingerprint(Device::kCuda, g, n);
  EXPECT_EQ(fingerprint(Device::kCuda, g, n), print);
  for (int trial = 0; trial < 64; ++trial) {
    const auto i = static_cast<size_t>(rng.uniform() * static_cast<double>(n));
    std::vector<float> flipped = x;
    uint32_t bits = 0;
    std::memcpy(&bits, &flipped[i], 4);
    bits ^= 1u << (trial % 32);
    std::memcpy(&flipped[i], &bits, 4);
    copy_bytes(g, Device::kCuda, flipped.data(), Device::kCpu, bytes);
    EXPECT_NE(fingerprint(Device::kCuda, g, n), print) << "float " << i << ", bit " << trial % 32;
  }
}

}  // namespace
}  // namespace rt
