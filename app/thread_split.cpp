#include "app/thread_split.h"

#include <algorithm>

#include "base/check.h"

namespace rt {

ThreadSplit split_threads(int cpus, Device device, int64_t threads, int64_t workers) {
  ThreadSplit s;
  const bool gpu = device == Device::kCuda;
  if (threads > 0) {
    s.compute = static_cast<int>(threads);
    s.compute_how = "train.threads";
  } else {
    s.compute = gpu ? std::min(cpus, kGpuComputeThreads) : cpus;
    if (gpu) s.compute_how = str_cat("at most ", kGpuComputeThreads, " on the GPU");
  }
  if (workers > 0) {
    s.decoding = static_cast<int>(workers);
    s.decoding_how = "data.workers";
  } else {
    s.decoding = std::max(1, cpus - s.compute);
    s.decoding_how = cpus > s.compute ? str_cat("the rest of the rank's ", cpus, " CPUs") : "at least one";
  }
  return s;
}

}  // namespace rt
