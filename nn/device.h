// Where a tensor lives, and the explicit allocation calls for each place. There are no hidden
// copies between devices: moving data is always a named call by the caller.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/run_settings.h"  // Device

namespace rt {

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
// How many GPUs this process sees (after CUDA_VISIBLE_DEVICES); rt::Error where CUDA cannot run.
int visible_cuda_devices();
// The selected GPU's UUID ("GPU-3f..."), the same in every process that uses that GPU.
std::string cuda_device_uuid();

// Zero-filled memory on `device`, 64-byte aligned; released when the last owner goes. On the host,
// buffers of 2 MiB and more are advised as huge pages (Note [Huge pages for large buffers] in
// nn/host_memory.h).
std::shared_ptr<void> allocate_zeroed(Device device, size_t bytes);
// Zero-filled host memory for data on its way to `bound_for` (a batch of images): page-locked
// for the GPU, so copies to it run at the bus's full rate without a staging copy; ordinary
// memory for the CPU.
std::shared_ptr<void> allocate_host_staging(Device bound_for, size_t bytes);
// Copies between any two devices; returns when the copy is done, after the GPU's earlier work.
void copy_bytes(void* dst, Device dst_device, const void* src, Device src_device, size_t bytes);
void zero_bytes(void* dst, Device device, size_t bytes);
// Waits for the device's queued work (the CPU's is never queued).
void synchronize(Device device);

// Note [CUDA graph steps]: a training step on the GPU issues a thousand and more kernels and
// library calls, and each costs the host microseconds to issue; where the GPU's share of a layer
// is as short, the host sets the pace (`ringtrain bench --profile` times the host's share). The static graph makes the
// same calls at every step on the same memory, so its device work can be recorded once as a CUDA
// graph and replayed as one launch (train.cuda_graph). What must stay live is kept out of the
// recording: the batch's copy in (Graph::set_input), the labels' (StepLoss::set_targets), every
// layer's begin_forward (batch norm's counter on the host; dropout's step, which its kernels read
// from device memory that a kernel enqueued ahead of the replay writes), waiting for the loss
// (StepLoss::result) and, after the replay, fp16's finite check and the optimizer. A recording
// holds every argument as it was: the trainer records again when fp16's loss scale changes, and
// never records backward while a collective listens to it (several ranks: only forward and the
// loss are recorded). The first step of a run is never recorded, so lazy set-up (cuBLAS's,
// scratch's) happens outside any recording.
class CudaGraph {
 public:
  // Records the device work `enqueue` puts on the GPU's compute stream, without running it,
  // replacing any earlier recording. Work that cannot be recorded (a wait, an allocation, a copy
  // from pageable memory) is an rt::Error, the stream left usable.
  void record(const std::function<void()>& enqueue);
  bool recorded() const { return recording_ != nullptr; }
  // Enqueues the recorded work on the compute stream.
  void replay() const;

 private:
  std::shared_ptr<void> recording_;  // the CUDA graph, instantiated
};

}  // namespace rt
