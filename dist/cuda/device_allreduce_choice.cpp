// Which dist settings can move GPU memory: one check, made by the trainer at start on any number
// of ranks and by make_device_collective for its direct callers.
#include "base/check.h"
#include "dist/cuda/device_collective.h"

namespace rt {

void check_device_allreduce(const std::string& algorithm, Wire wire) {
  RT_CHECK(algorithm == "ring" || algorithm == "nccl", "dist.allreduce = \"", algorithm,
           "\" moves host memory; with "
           "device = \"cuda\" use ring (ours, over NCCL point-to-point) or nccl (ncclAllReduce)");
  RT_CHECK(algorithm != "nccl" || wire == Wire::kFp32, "dist.wire = \"", wire_name(wire),
           "\" applies to ringtrain's "
           "ring; ncclAllReduce (dist.allreduce = \"nccl\") moves float32");
}

}  // namespace rt
