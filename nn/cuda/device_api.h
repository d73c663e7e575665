// The CUDA side of nn/device.h, in plain C++ so nn/device.cpp can call it. Built only with
// RINGTRAIN_CUDA; nn/device.h is the interface everyone else uses.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "nn/device.h"

namespace rt::cuda {

bool usable(std::string* why);
void select_device(int index);
int visible_devices();
std::string device_uuid();  // of the selected GPU
std::shared_ptr<void> allocate_zeroed(size_t bytes);
std::shared_ptr<void> allocate_pinned(size_t bytes);  // page-locked host memory, zero-filled
void copy(void* dst, bool dst_on_gpu, const void* src, bool src_on_gpu, size_t bytes);
void zero(void* dst, size_t bytes);
void synchronize();
// CudaGraph's: the recording of what `enqueue` put on the compute stream; its launch.
std::shared_ptr<void> record(const std::function<void()>& enqueue);
void replay(void* recording);

}  // namespace rt::cuda
