#include "nn/device.h"

#include <cstdlib>
#include <cstring>

#include "base/check.h"

namespace rt {

std::string_view device_name(Device device) { return device == Device::kCpu ? "cpu" : "cuda"; }

Device parse_device(std::string_view name) {
  if (name == "cpu") return Device::kCpu;
  if (name == "cuda") return Device::kCuda;
  RT_CHECK(false, "unknown device '", name, "': expected cpu or cuda");
  return Device::kCpu;
}

bool cuda_built() {
#ifdef RINGTRAIN_WITH_CUDA
  return true;
#else
  return false;
#endif
}

#ifndef RINGTRAIN_WITH_CUDA
std::string cuda_report() { return "not built (configure with -DRINGTRAIN_CUDA=ON on a machine with the CUDA toolkit)"; }
#endif

std::shared_ptr<void> allocate_zeroed(Device device, size_t bytes) {
  RT_CHECK(device == Device::kCpu,
           cuda_built() ? "CUDA tensors arrive with the CUDA backend's ops; this build has the device layer only"
                        : "this ringtrain was built without CUDA (configure with -DRINGTRAIN_CUDA=ON)");
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* p = std::aligned_alloc(64, rounded == 0 ? 64 : rounded);
  RT_CHECK(p != nullptr, "out of host memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded == 0 ? 64 : rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace rt
