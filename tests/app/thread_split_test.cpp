// ThreadSplit against its rule written out: on the CPU, compute takes the rank's share and
// decoding the rest (at least 1); on the GPU compute keeps at most kGpuComputeThreads and
// decoding takes the rest; train.threads and data.workers override either side.
#include "app/thread_split.h"

#include <gtest/gtest.h>

namespace rt {
namespace {

TEST(ThreadSplit, TheCpuComputesOnItsWholeShareAndDecodesOnWhatIsLeft) {
  const ThreadSplit s = split_threads(8, Device::kCpu, 0, 0);
  EXPECT_EQ(s.compute, 8);
  EXPECT_EQ(s.decoding, 1);
  EXPECT_EQ(s.decoding_how, "at least one");
  const ThreadSplit t = split_threads(8, Device::kCpu, 6, 0);
  EXPECT_EQ(t.compute, 6);
  EXPECT_EQ(t.decoding, 2);
  EXPECT_EQ(t.decoding_how, "the rest of the rank's 8 CPUs");
}

TEST(ThreadSplit, TheGpuKeepsTwoComputeThreadsAndDecodesOnTheRest) {
  const ThreadSplit s = split_threads(16, Device::kCuda, 0, 0);
  EXPECT_EQ(s.compute, kGpuComputeThreads);
  EXPECT_EQ(s.decoding, 16 - kGpuComputeThreads);
  EXPECT_EQ(s.compute_how, "at most 2 on the GPU");
  const ThreadSplit one = split_threads(1, Device::kCuda, 0, 0);  // a single CPU: both get it
  EXPECT_EQ(one.compute, 1);
  EXPECT_EQ(one.decoding, 1);
}

TEST(ThreadSplit, TheKeysOverrideEitherSide) {
  const ThreadSplit s = split_threads(16, Device::kCuda, 4, 3);
  EXPECT_EQ(s.compute, 4);
  EXPECT_EQ(s.decoding, 3);
  EXPECT_EQ(s.compute_how, "train.threads");
  EXPECT_EQ(s.decoding_how, "data.workers");
  EXPECT_EQ(split_threads(16, Device::kCuda, 0, 5).decoding, 5);
  EXPECT_EQ(split_threads(16, Device::kCuda, 3, 0).decoding, 13);
}

}  // namespace
}  // namespace rt
