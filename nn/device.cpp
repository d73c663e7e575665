#include "nn/device.h"

#include <cstring>

#include "base/check.h"
#include "nn/host_memory.h"
#ifdef RINGTRAIN_WITH_CUDA
#include "nn/cuda/device_api.h"
#endif

namespace rt {
namespace {

[[maybe_unused]] constexpr const char* kNotBuilt =
    "this ringtrain was built without CUDA (configure with -DRINGTRAIN_CUDA=ON on a machine with the CUDA toolkit)";

}  // namespace

#ifdef RINGTRAIN_WITH_CUDA
bool cuda_built() { return true; }
bool cuda_usable(std::string* why) { return cuda::usable(why); }
void select_cuda_device(int index) { cuda::select_device(index); }
int visible_cuda_devices() { return cuda::visible_devices(); }
std::string cuda_device_uuid() { return cuda::device_uuid(); }
#else
bool cuda_built() { return false; }
std::string cuda_report() {
  return "not built (configure with -DRINGTRAIN_CUDA=ON on a machine with the CUDA toolkit)";
}
bool cuda_usable(std::string* why) {
  if (why) *why = kNotBuilt;
  return false;
}
void select_cuda_device(int) { RT_CHECK(false, kNotBuilt); }
int visible_cuda_devices() {
  RT_CHECK(false, kNotBuilt);
  return 0;
}
std::string cuda_device_uuid() {
  RT_CHECK(false, kNotBuilt);
  return "";
}
#endif

std::shared_ptr<void> allocate_zeroed(Device device, size_t bytes) {
  if (device == Device::kCuda) {
#ifdef RINGTRAIN_WITH_CUDA
    return cuda::allocate_zeroed(bytes);
#else
    RT_CHECK(false, kNotBuilt);
#endif
  }
  return allocate_host_zeroed(bytes);
}

std::shared_ptr<void> allocate_host_staging([[maybe_unused]] Device bound_for, size_t bytes) {
#ifdef RINGTRAIN_WITH_CUDA
  if (bound_for == Device::kCuda) return cuda::allocate_pinned(bytes);
#endif
  return allocate_zeroed(Device::kCpu, bytes);
}

void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes) {
  if (bytes == 0) return;
  if (dst_device == Device::kCpu && src_device == Device::kCpu) {
    std::memcpy(dst, src, bytes);
    return;
  }
#ifdef RINGTRAIN_WITH_CUDA
  cuda::copy(dst, dst_device == Device::kCuda, src, src_device == Device::kCuda, bytes);
#else
  RT_CHECK(false, kNotBuilt);
#endif
}

void zero_bytes(void* dst, Device device, size_t bytes) {
  if (bytes == 0) return;
  if (device == Device::kCpu) {
    std::memset(dst, 0, bytes);
    return;
  }
#ifdef RINGTRAIN_WITH_CUDA
  cuda::zero(dst, bytes);
#else
  RT_CHECK(false, kNotBuilt);
#endif
}

void CudaGraph::record(const std::function<void()>& enqueue) {
#ifdef RINGTRAIN_WITH_CUDA
  recording_.reset();  // an earlier recording goes first: only one is ever held
  recording_ = cuda::record(enqueue);
#else
  (void)enqueue;
  RT_CHECK(false, kNotBuilt);
#endif
}

void CudaGraph::replay() const {
  RT_CHECK(recorded(), "replay before record");
#ifdef RINGTRAIN_WITH_CUDA
  cuda::replay(recording_.get());
#endif
}

void synchronize(Device device) {
#ifdef RINGTRAIN_WITH_CUDA
  if (device == Device::kCuda) cuda::synchronize();
#else
  (void)device;
#endif
}

}  // namespace rt
