#include "dist/host_layout.h"

#include <map>

#include "base/check.h"

namespace rt {

int HostLayout::ranks_per_host() const {
  if (ranks_of_host.empty()) return 0;
  const size_t n = ranks_of_host[0].size();
  for (const auto& h : ranks_of_host)
    if (h.size() != n) return 0;
  return static_cast<int>(n);
}

std::string HostLayout::describe() const {
  if (const int per = ranks_per_host(); per > 0)
    return str_cat(hosts(), hosts() == 1 ? " host x " : " hosts x ", per, per == 1 ? " rank" : " ranks");
  std::string counts;
  for (int h = 0; h < hosts(); ++h)
    counts += str_cat(h == 0 ? "" : h + 1 == hosts() ? " and " : ", ", ranks_of_host[h].size());
  return str_cat(hosts(), " hosts with ", counts, " ranks");
}

HostLayout layout_from_leaders(const std::vector<int>& leader_of_rank) {
  HostLayout l;
  const int world = static_cast<int>(leader_of_rank.size());
  std::map<int, int> host_of_leader;  // leaders ascending = hosts in order of their lowest rank
  for (int r = 0; r < world; ++r) {
    const int leader = leader_of_rank[r];
    RT_CHECK(leader >= 0 && leader <= r && leader_of_rank[leader] == leader, "rank ", r, " names rank ", leader,
             " as the lowest rank of its host, which is not a rank of that host");
    host_of_leader.emplace(leader, 0);
  }
  int next = 0;
  for (auto& [leader, host] : host_of_leader) host = next++;
  l.ranks_of_host.resize(host_of_leader.size());
  for (int r = 0; r < world; ++r) {
    const int h = host_of_leader[leader_of_rank[r]];
    l.host_of_rank.push_back(h);
    l.ranks_of_host[h].push_back(r);
  }
  return l;
}

HostLayout block_layout(int world, int ranks_per_host) {
  RT_CHECK(ranks_per_host >= 1, "ranks per host must be at least 1, got ", ranks_per_host);
  std::vector<int> leaders;
  for (int r = 0; r < world; ++r) leaders.push_back(r - r % ranks_per_host);
  return layout_from_leaders(leaders);
}

TwoLevelPlace two_level_place(const HostLayout& layout, int rank) {
  RT_CHECK(layout.ranks_per_host() > 0, "the two-level ring needs as many ranks on every host; this job has ",
           layout.describe());
  RT_ASSERT(rank >= 0 && rank < layout.world());
  TwoLevelPlace p;
  p.cross = layout.host_of_rank[rank];
  p.local_ring = layout.ranks_of_host[p.cross];
  for (size_t i = 0; i < p.local_ring.size(); ++i)
    if (p.local_ring[i] == rank) p.local = static_cast<int>(i);
  for (const auto& host : layout.ranks_of_host) p.cross_ring.push_back(host[p.local]);
  return p;
}

ChunkRange host_share(int64_t count, const TwoLevelPlace& place) {
  const int L = static_cast<int>(place.local_ring.size());
  return chunk_range(count, L, owned_chunk(place.local, L));
}

ChunkRange finished_share(int64_t count, const TwoLevelPlace& place) {
  const ChunkRange share = host_share(count, place);
  const int H = static_cast<int>(place.cross_ring.size());
  const ChunkRange part = chunk_range(share.count, H, owned_chunk(place.cross, H));
  return {share.begin + part.begin, part.count};
}

Hierarchy resolve_hierarchy(Hierarchy setting, const HostLayout& layout, std::string* why) {
  if (setting == Hierarchy::kFlat) return Hierarchy::kFlat;
  const int per = layout.ranks_per_host();
  if (setting == Hierarchy::kTwoLevel) {
    RT_CHECK(per > 0, "dist.hierarchy = \"two_level\" needs as many ranks on every host, and this job has ",
             layout.describe(),
             ": launch the same number per host (mpirun --map-by ppr:N:node), or set dist.hierarchy = \"flat\"");
    return Hierarchy::kTwoLevel;
  }
  if (layout.hosts() > 1 && per == 0 && why)
    *why = str_cat("the ranks span ", layout.describe(),
                   "; the two-level ring needs as many on every host, so the ring is flat (dist.hierarchy = "
                   "\"flat\" says so and keeps this quiet)");
  return layout.hosts() > 1 && per > 1 ? Hierarchy::kTwoLevel : Hierarchy::kFlat;
}

}  // namespace rt
