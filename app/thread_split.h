// How a rank's CPUs are shared between computing and decoding images (train.threads,
// data.workers). On the CPU the compute threads do the training, so by default they take the
// rank's whole share and decoding what is left, at least one thread. On the GPU the compute
// threads only issue the device's work and the few host-side ops, so by default they keep
// kGpuComputeThreads and decoding takes the rest: one decoding thread per GPU decodes about 480
// ImageNet images a second, a third of what an H100 trains ResNet-101 at.
#pragma once

#include <cstdint>
#include <string>

#include "nn/device.h"

namespace rt {

inline constexpr int kGpuComputeThreads = 2;

struct ThreadSplit {
  int compute = 1;
  int decoding = 1;
  // Why: "train.threads", "at most 2 on the GPU", "" (the rank's share); "data.workers", "the
  // rest of the rank's 8 CPUs", "at least one".
  std::string compute_how, decoding_how;
};

// cpus: the rank's share (World::cpu_share); threads and workers: the keys, 0 = by default.
ThreadSplit split_threads(int cpus, Device device, int64_t threads, int64_t workers);

}  // namespace rt
