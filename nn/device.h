// Where a tensor lives, and the explicit allocation calls for each place. There are no hidden
// copies between devices: moving data is always a named call by the caller.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace rt {

enum class Device { kCpu, kCuda };

std::string_view device_name(Device device);
Device parse_device(std::string_view name);  // "cpu" | "cuda", else rt::Error

// True when this binary was built with the CUDA backend.
bool cuda_built();
// Versions and GPUs as the CUDA runtime sees them, or why there are none ("not built" without CUDA).
std::string cuda_report();

// Zero-filled memory on `device`, 64-byte aligned; released when the last owner goes.
std::shared_ptr<void> allocate_zeroed(Device device, size_t bytes);

}  // namespace rt
