// Which ranks share a host, and where each rank sits in the two-level ring (Note [Two-level ring]):
// pure functions of the ranks' hosts, so that the trainer, the tests' simulated layouts and
// `ring-demo --hosts` all place ranks the same way.
//
// Note [Two-level ring]
// With H hosts of L ranks each, an allreduce of `count` elements runs in three phases:
//   1. inside each host, a ring reduce-scatter over the L ranks (Note [Ring schedule]) on the
//      whole buffer: the rank at local position l then holds its host's sum of chunk
//      owned_chunk(l, L) of L, its host share;
//   2. across hosts, a full ring allreduce among the H ranks of equal local position, each ring on
//      its own host share, scaled to the average over all H L ranks: every rank's network link
//      carries 1/L of the buffer, and all L rings run at once;
//   3. inside each host, a ring all-gather of the L host shares.
// A rank sends 2(L - 1)/L of the buffer inside its host and 2(H - 1)/(H L) across hosts; a
// bucket pays 2(L - 1) + 2(H - 1) latency steps instead of the flat ring's 2(HL - 1). Every rank
// ends bit-identical: phase 2 ends identical across each cross ring (its owners round what they
// send), and phase 3 only copies. The 16-bit wire (dist.wire) applies to phase 2, where the bytes
// cross the network; phases 1 and 3 move float32 through shared memory. Under the sharded update
// (Note [Sharded update]) the rank that finishes a part in phase 2's reduce-scatter updates it,
// and phase 2's and phase 3's all-gathers share parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/run_settings.h"  // Hierarchy
#include "dist/ring_schedule.h"

namespace rt {

struct HostLayout {
  std::vector<int> host_of_rank;                // hosts numbered in order of their lowest rank
  std::vector<std::vector<int>> ranks_of_host;  // each host's ranks, ascending
  int hosts() const { return static_cast<int>(ranks_of_host.size()); }
  int world() const { return static_cast<int>(host_of_rank.size()); }
  // Every host has the same number of ranks: that number; else 0.
  int ranks_per_host() const;
  // "2 hosts x 2 ranks", "3 hosts with 3, 2 and 2 ranks".
  std::string describe() const;
};

// The layout in which rank r lives on the host whose lowest rank is leader_of_rank[r].
// rt::Error unless each leader is a rank of its own host.
HostLayout layout_from_leaders(const std::vector<int>& leader_of_rank);
// Hosts of ranks_per_host consecutive ranks (the last may have fewer): what the launcher's
// default block placement gives, and the fake split the tests use (RINGTRAIN_FAKE_HOST_RANKS).
HostLayout block_layout(int world, int ranks_per_host);

// Where a rank sits in the two-level ring; every entry is a rank of the world.
struct TwoLevelPlace {
  int local = 0;                // position in its host's ring
  int cross = 0;                // position in the ring across hosts (the host's index)
  std::vector<int> local_ring;  // its host's ranks, in ring order
  std::vector<int> cross_ring;  // the ranks at the same local position, one per host, in host order
};
// rt::Error when the hosts hold different numbers of ranks: the host shares would not line up.
TwoLevelPlace two_level_place(const HostLayout& layout, int rank);
// What phase 2 carries for this rank: its host share of a buffer of count elements.
ChunkRange host_share(int64_t count, const TwoLevelPlace& place);
// The part this rank alone finishes (phase 2's owned chunk of its host share), offsets in the
// whole buffer: the ranks' finished parts tile the buffer.
ChunkRange finished_share(int64_t count, const TwoLevelPlace& place);

// dist.hierarchy resolved for a layout: kFlat or kTwoLevel. kAuto is two-level when ranks span
// hosts with more than one rank on each and every host holds as many. rt::Error for kTwoLevel on
// uneven hosts, naming them. *why (may be null) gets a sentence when kAuto chose flat for uneven
// hosts.
Hierarchy resolve_hierarchy(Hierarchy setting, const HostLayout& layout, std::string* why = nullptr);

}  // namespace rt
