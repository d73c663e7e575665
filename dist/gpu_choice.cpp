#include "dist/gpu_choice.h"

#include <map>
#include <utility>

#include "base/check.h"

namespace rt {

GpuChoice choose_gpu(int local_rank, int local_size, int visible, const char* cuda_visible_devices) {
  const std::string variable =
      cuda_visible_devices ? str_cat(" (CUDA_VISIBLE_DEVICES=", cuda_visible_devices, ")") : std::string();
  RT_CHECK(visible > 0, "device = \"cuda\" but this process sees no GPU", variable);
  if (visible == 1) return {0, "the one GPU this process sees" + variable};
  RT_CHECK(local_size <= visible, "this host runs ", local_size, " ranks but each sees ", visible, " GPUs", variable,
           ": run at most one rank per GPU on each host, or give each rank its own (srun --gpus-per-task=1)");
  return {local_rank, str_cat("GPU ", local_rank, " of ", visible, ", by local rank", variable)};
}

std::string shared_gpu(const std::vector<std::string>& host_of_rank, const std::vector<std::string>& gpu_of_rank) {
  RT_ASSERT(host_of_rank.size() == gpu_of_rank.size());
  std::map<std::pair<std::string, std::string>, int> first_user;
  for (size_t r = 0; r < gpu_of_rank.size(); ++r) {
    const auto [at, fresh] = first_user.emplace(std::make_pair(host_of_rank[r], gpu_of_rank[r]), static_cast<int>(r));
    if (!fresh)
      return str_cat("ranks ", at->second, " and ", r, " on host ", host_of_rank[r], " would share GPU ",
                     gpu_of_rank[r],
                     ": run at most one rank per GPU (each rank sees only one GPU, and it is the "
                     "same one)");
  }
  return "";
}

}  // namespace rt
