// Which allreduce settings a GPU run accepts, checked without a GPU: the trainer refuses the rest
// at start, on any number of ranks.
#include <gtest/gtest.h>

#include <string>

#include "base/check.h"
#include "dist/cuda/device_collective.h"

namespace rt::testing {
namespace {

std::string refusal(const std::string& algorithm, Wire wire) {
  try {
    check_device_allreduce(algorithm, wire);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(DeviceAllreduceChoice, RingTakesEveryWireNcclOnlyFloat32AndMpiNothing) {
  for (const Wire w : {Wire::kFp32, Wire::kFp16, Wire::kBf16}) EXPECT_EQ(refusal("ring", w), "") << wire_name(w);
  EXPECT_EQ(refusal("nccl", Wire::kFp32), "");
  EXPECT_NE(refusal("nccl", Wire::kBf16).find("dist.wire = \"bf16\" applies to ringtrain's ring"), std::string::npos)
      << refusal("nccl", Wire::kBf16);
  EXPECT_NE(refusal("mpi", Wire::kFp32).find("dist.allreduce = \"mpi\" moves host memory"), std::string::npos)
      << refusal("mpi", Wire::kFp32);
}

}  // namespace
}  // namespace rt::testing
