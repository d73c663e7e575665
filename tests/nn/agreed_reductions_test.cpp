// The agreed reductions (Note [Agreed reductions]) on the CPU: the same bits at every thread
// count, the sum of squares against an independent long-double sum, and the fingerprint changed
// by any one flipped bit.
#include "nn/ops/agreed_reductions.h"

#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "base/rng.h"

namespace rt {
namespace {

// Several chunks and a ragged tail; values of mixed magnitude, so that the order of additions
// shows in the last bits.
std::vector<float> mixed_values(int64_t n) {
  Rng rng(11, 0);
  std::vector<float> x(static_cast<size_t>(n));
  for (float& v : x) v = static_cast<float>((rng.uniform() * 2 - 1) * std::pow(10.0, rng.uniform() * 8 - 4));
  return x;
}

constexpr int64_t kFloats = 5 * kAgreedChunk + 12345;

TEST(AgreedReductions, SumOfSquaresIsTheSameAtEveryThreadCountAndCloseToALongDoubleSum) {
  const std::vector<float> x = mixed_values(kFloats);
  long double exact = 0;
  for (float v : x) exact += static_cast<long double>(v) * v;
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const double one = sum_of_squares(Device::kCpu, x.data(), kFloats);
  for (int t : {2, 3, 7}) {
    omp_set_num_threads(t);
    const double many = sum_of_squares(Device::kCpu, x.data(), kFloats);
    EXPECT_EQ(std::memcmp(&one, &many, sizeof one), 0) << t << " threads: " << many << " against " << one;
  }
  omp_set_num_threads(threads);
  EXPECT_NEAR(one, static_cast<double>(exact), 1e-13 * static_cast<double>(exact));
  EXPECT_EQ(sum_of_squares(Device::kCpu, x.data(), 0), 0.0);
}

TEST(AgreedReductions, FingerprintIsTheSameAtEveryThreadCountAndSeesEveryFlippedBit) {
  std::vector<float> x = mixed_values(kFloats);
  const int threads = omp_get_max_threads();
  omp_set_num_threads(1);
  const uint64_t one = fingerprint(Device::kCpu, x.data(), kFloats);
  omp_set_num_threads(3);
  EXPECT_EQ(fingerprint(Device::kCpu, x.data(), kFloats), one);
  omp_set_num_threads(threads);
  // One bit of one float at a time, in every chunk and every bit position: each changes the
  // fingerprint, and flipping it back restores it.
  Rng rng(5, 0);
  for (int trial = 0; trial < 256; ++trial) {
    const auto i = static_cast<size_t>(rng.uniform() * kFloats);
    const uint32_t bit = 1u << (trial % 32);
    uint32_t bits = 0;
    std::memcpy(&bits, &x[i], 4);
    bits ^= bit;
    std::memcpy(&x[i], &bits, 4);
    EXPECT_NE(fingerprint(Device::kCpu, x.data(), kFloats), one) << "float " << i << ", bit " << trial % 32;
    bits ^= bit;
    std::memcpy(&x[i], &bits, 4);
  }
  EXPECT_EQ(fingerprint(Device::kCpu, x.data(), kFloats), one);
  // Two chunks swapped hold the same values in another order: another model.
  std::swap_ranges(x.begin(), x.begin() + kAgreedChunk, x.begin() + kAgreedChunk);
  EXPECT_NE(fingerprint(Device::kCpu, x.data(), kFloats), one);
}

}  // namespace
}  // namespace rt
