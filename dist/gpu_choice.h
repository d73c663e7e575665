// Which GPU a rank uses. mpirun starts ranks that each see every GPU of their host, and a rank
// takes the one its local rank names; srun --gpus-per-task=1 (or any launcher that sets
// CUDA_VISIBLE_DEVICES per rank) starts ranks that each see one, and a rank takes that one.
// Pure, so every case is tested without a GPU.
#pragma once

#include <string>
#include <vector>

namespace rt {

struct GpuChoice {
  int index = 0;    // among the GPUs this process sees
  std::string how;  // "GPU 1 of 4, by local rank", "the one GPU this process sees (CUDA_VISIBLE_DEVICES=3)"
};

// visible: the GPUs this process sees (cudaGetDeviceCount); cuda_visible_devices: the variable,
// or null. Throws rt::Error where the ranks on this host outnumber the GPUs they see.
GpuChoice choose_gpu(int local_rank, int local_size, int visible, const char* cuda_visible_devices);

// Where two ranks on one host chose the same physical GPU (by host and GPU UUID, indexed by
// rank), the message that refuses; else empty. Catches one GPU made visible to several ranks.
std::string shared_gpu(const std::vector<std::string>& host_of_rank, const std::vector<std::string>& gpu_of_rank);

}  // namespace rt
