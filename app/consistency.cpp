#include "app/consistency.h"

#include <sstream>
#include <vector>

#include "base/check.h"

namespace rt {
namespace {

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
  return h;
}

}  // namespace

void require_same_on_all_ranks(const std::string& kind, const std::vector<std::pair<std::string, std::string>>& items,
                               const World& world) {
  if (world.size() == 1) return;
  // Item count first, then one hash per item: min == max everywhere means all agree.
  const int n = static_cast<int>(items.size());
  std::vector<uint64_t> lo(items.size() + 1), hi;
  lo[0] = static_cast<uint64_t>(n);
  for (size_t i = 0; i < items.size(); ++i) lo[i + 1] = fnv1a(items[i].first + "\n" + items[i].second);
  int counts[2] = {n, -n};
  MPI_Allreduce(MPI_IN_PLACE, counts, 2, MPI_INT, MPI_MAX, world.comm());
  // Note [Exit statuses] in base/check.h: ranks that disagree are a config's error, not a host's.
  if (counts[0] != -counts[1])
    throw ConfigError(str_cat("the ", kind, "s differ across ranks: this rank (", world.rank(), ") has ", n,
                              ", another has ", counts[0] == n ? -counts[1] : counts[0]));
  hi = lo;
  MPI_Allreduce(MPI_IN_PLACE, lo.data(), n + 1, MPI_UINT64_T, MPI_MIN, world.comm());
  MPI_Allreduce(MPI_IN_PLACE, hi.data(), n + 1, MPI_UINT64_T, MPI_MAX, world.comm());
  for (int i = 0; i < n; ++i) {
    if (lo[i + 1] == hi[i + 1]) continue;
    // Which ranks disagree with rank 0 on this item (the same answer on every rank).
    const uint64_t mine = fnv1a(items[i].first + "\n" + items[i].second);
    std::vector<uint64_t> all(static_cast<size_t>(world.size()));
    MPI_Allgather(&mine, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, world.comm());
    std::ostringstream ranks;
    for (int r = 1; r < world.size(); ++r)
      if (all[r] != all[0]) ranks << (ranks.tellp() > 0 ? ", " : "") << r;
    throw ConfigError(str_cat("refusing to start: ", kind, " '", items[i].first,
                              "' differs between rank 0 and rank(s) ", ranks.str(), "; on this rank (", world.rank(),
                              ") it is: ", items[i].second));
  }
}

std::vector<std::pair<std::string, std::string>> config_items(const std::string& resolved_toml) {
  std::vector<std::pair<std::string, std::string>> items;
  std::istringstream in(resolved_toml);
  std::string table, line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    if (line[0] == '[') {
      table = line.substr(1, line.find(']') - 1);
      continue;
    }
    const size_t eq = line.find(" = ");
    if (eq == std::string::npos) continue;
    const std::string key = table + "." + line.substr(0, eq);
    if (key == "train.threads") continue;
    items.emplace_back(key, line.substr(eq + 3));
  }
  return items;
}

std::vector<std::pair<std::string, std::string>> model_items(const Graph& graph) {
  std::vector<std::pair<std::string, std::string>> items;
  for (const ParamRef& p : graph.params()) items.emplace_back(p.name, shape_str(p.value.shape()));
  for (const BufferRef& b : graph.buffers()) items.emplace_back(b.name, shape_str(b.value.shape()));
  return items;
}

void on_host(float* data, int64_t n, Device device, const std::function<void(float*)>& fn) {
  if (device == Device::kCpu) return fn(data);
  std::vector<float> host(static_cast<size_t>(n));
  const size_t bytes = sizeof(float) * host.size();
  copy_bytes(host.data(), Device::kCpu, data, device, bytes);
  fn(host.data());
  copy_bytes(data, device, host.data(), Device::kCpu, bytes);
}

void broadcast_model_state(Graph& graph, const World& world) {
  auto broadcast = [&](float* data, int64_t n) {
    on_host(data, n, graph.device(), [&](float* v) { world.broadcast(v, n, 0); });
  };
  broadcast(graph.param_arena(), graph.arena_floats());
  for (const BufferRef& b : graph.buffers()) broadcast(const_cast<float*>(b.value.data()), b.value.numel());
}

}  // namespace rt
