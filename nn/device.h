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
// True when a GPU can run this build's kernels; otherwise false, with the driver's own words (or
// "built without CUDA") in *why.
bool cuda_usable(std::string* why);
// Makes GPU `index` the one this process uses; must come before any other CUDA call. rt::Error
// when there is no such GPU.
void select_cuda_device(int index);
// Whether CUDA convolutions and matrix products may round float32 inputs to TF32 on tensor cores
// (train.precision = "tf32"); off by default. Applies to ops planned afterwards.
void set_cuda_tf32(bool allowed);

// Zero-filled memory on `device`, 64-byte aligned; released when the last owner goes.
std::shared_ptr<void> allocate_zeroed(Device device, size_t bytes);
// Copies between any two devices; returns when the copy is done, after the GPU's earlier work.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void zero_bytes(void* dst, Device device, size_t bytes);
// Waits for the device's queued work (the CPU's is never queued).
void synchronize(Device device);

}  // namespace rt
