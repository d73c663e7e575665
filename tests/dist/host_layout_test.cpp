// The two-level ring (Note [Two-level ring]) simulated in one process over host layouts with
// awkward shapes and counts: each phase exchanges exactly what ring_step says on its sub-ring, and
// every rank must end with the naive average, bit-identical to every other. Also the layout's own
// rules: hosts numbered by their lowest rank, uneven hosts refused, `auto`'s choice.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "base/check.h"
#include "dist/host_layout.h"

namespace rt {
namespace {

using Buffers = std::vector<std::vector<double>>;

// Steps [first, end) of the ring over `members` (world ranks) on buf[r][begin, begin + count) of
// each member r; final reduce-scatter steps multiply by `scale`.
void ring_phase(Buffers& buf, const std::vector<std::vector<int>>& rings, std::vector<ChunkRange> ranges, int first,
                int end, double scale) {
  for (size_t g = 0; g < rings.size(); ++g) {
    const std::vector<int>& ring = rings[g];
    const int p = static_cast<int>(ring.size());
    if (p == 1) {
      for (int64_t i = 0; i < ranges[g].count && first == 0; ++i) buf[ring[0]][ranges[g].begin + i] *= scale;
      continue;
    }
    const int64_t count = ranges[g].count, base = ranges[g].begin;
    for (int step = first; step < std::min(end, ring_step_count(p)); ++step) {
      std::vector<std::vector<double>> sent(static_cast<size_t>(p));
      for (int q = 0; q < p; ++q) {
        const ChunkRange c = chunk_range(count, p, ring_step(q, p, step).send_chunk);
        sent[q].assign(buf[ring[q]].begin() + base + c.begin, buf[ring[q]].begin() + base + c.begin + c.count);
      }
      for (int q = 0; q < p; ++q) {
        const RingStep s = ring_step(q, p, step);
        const int from = ring_prev(q, p);
        ASSERT_EQ(ring_step(from, p, step).send_chunk, s.recv_chunk);
        const ChunkRange c = chunk_range(count, p, s.recv_chunk);
        for (int64_t i = 0; i < c.count; ++i) {
          double& v = buf[ring[q]][base + c.begin + i];
          v = s.reduce ? v + sent[from][i] : sent[from][i];
          if (s.final_reduce) v *= scale;
        }
      }
    }
  }
}

// The three phases on every rank of `layout`, as TwoLevelCollective runs them.
Buffers simulate_two_level(const HostLayout& layout, Buffers buf) {
  const int world = layout.world();
  const int64_t count = static_cast<int64_t>(buf[0].size());
  std::vector<TwoLevelPlace> place;
  for (int r = 0; r < world; ++r) place.push_back(two_level_place(layout, r));
  std::vector<std::vector<int>> local_rings, cross_rings;
  std::vector<ChunkRange> whole, shares;
  for (int h = 0; h < layout.hosts(); ++h) {
    local_rings.push_back(layout.ranks_of_host[h]);
    whole.push_back({0, count});
  }
  for (int l = 0; l < layout.ranks_per_host(); ++l) {
    cross_rings.push_back(place[layout.ranks_of_host[0][l]].cross_ring);
    shares.push_back(host_share(count, place[cross_rings.back()[0]]));
    for (int r : cross_rings.back()) EXPECT_EQ(host_share(count, place[r]).begin, shares.back().begin);
  }
  ring_phase(buf, local_rings, whole, 0, layout.ranks_per_host() - 1, 1.0);        // 1: reduce-scatter in hosts
  ring_phase(buf, cross_rings, shares, 0, 1 << 30, 1.0 / world);                   // 2: allreduce across hosts
  ring_phase(buf, local_rings, whole, layout.ranks_per_host() - 1, 1 << 30, 1.0);  // 3: all-gather in hosts
  return buf;
}

std::vector<HostLayout> awkward_layouts() {
  std::vector<HostLayout> layouts;
  for (int hosts : {1, 2, 3, 5})
    for (int per : {1, 2, 3, 4}) {
      layouts.push_back(block_layout(hosts * per, per));
      // Round-robin placement (mpirun --map-by node): rank r on host r % hosts.
      std::vector<int> leaders;
      for (int r = 0; r < hosts * per; ++r) leaders.push_back(r % hosts);
      layouts.push_back(layout_from_leaders(leaders));
    }
  return layouts;
}

TEST(TwoLevelRing, EveryRankEndsWithTheAverageOverAwkwardLayoutsAndCounts) {
  for (const HostLayout& layout : awkward_layouts()) {
    const int world = layout.world();
    for (int64_t count :
         {int64_t{0}, int64_t{1}, int64_t{world - 1}, int64_t{world + 3}, int64_t{7 * world + 5}, int64_t{1009}}) {
      Buffers in(static_cast<size_t>(world), std::vector<double>(static_cast<size_t>(count)));
      std::vector<double> expect(static_cast<size_t>(count), 0.0);
      for (int r = 0; r < world; ++r)
        for (int64_t i = 0; i < count; ++i) {
          in[r][i] = std::sin(0.37 * static_cast<double>(i) + r) * (r + 1);
          expect[i] += in[r][i] / world;
        }
      const Buffers out = simulate_two_level(layout, in);
      for (int r = 0; r < world; ++r)
        for (int64_t i = 0; i < count; ++i) {
          ASSERT_NEAR(out[r][i], expect[i], 1e-12)
              << layout.describe() << ", count " << count << ", rank " << r << ", element " << i;
          ASSERT_EQ(out[r][i], out[0][i]) << "ranks differ: " << layout.describe() << ", rank " << r;
        }
    }
  }
}

TEST(TwoLevelRing, FinishedSharesTileTheBufferOncePerRank) {
  for (const HostLayout& layout : awkward_layouts())
    for (int64_t count : {int64_t{0}, int64_t{3}, int64_t{1009}}) {
      std::vector<int> owner(static_cast<size_t>(count), -1);
      for (int r = 0; r < layout.world(); ++r) {
        const ChunkRange f = finished_share(count, two_level_place(layout, r));
        const ChunkRange s = host_share(count, two_level_place(layout, r));
        EXPECT_TRUE(f.begin >= s.begin && f.begin + f.count <= s.begin + s.count);
        for (int64_t i = f.begin; i < f.begin + f.count; ++i) {
          EXPECT_EQ(owner[i], -1) << "element " << i << " finished by ranks " << owner[i] << " and " << r;
          owner[i] = r;
        }
      }
      for (int64_t i = 0; i < count; ++i) EXPECT_NE(owner[i], -1) << layout.describe() << ": element " << i;
    }
}

TEST(TwoLevelRing, EachRankSendsTheLinkShareItShould) {
  // 4 hosts x 3 ranks, count divisible by 12: 2(L-1)/L inside a host, 2(H-1)/(H L) across.
  const HostLayout layout = block_layout(12, 3);
  const int64_t count = 1200;
  for (int r = 0; r < 12; ++r) {
    const TwoLevelPlace p = two_level_place(layout, r);
    const int64_t share = host_share(count, p).count;
    int64_t inside = 0, across = 0;
    for (int s = 0; s < ring_step_count(3); ++s)
      inside += chunk_range(count, 3, ring_step(p.local, 3, s).send_chunk).count;
    for (int s = 0; s < ring_step_count(4); ++s)
      across += chunk_range(share, 4, ring_step(p.cross, 4, s).send_chunk).count;
    EXPECT_EQ(inside, 2 * 2 * count / 3);
    EXPECT_EQ(across, 2 * 3 * count / (4 * 3));
  }
}

TEST(HostLayout, NumbersHostsByTheirLowestRankAndRefusesUnevenHosts) {
  const HostLayout l = layout_from_leaders({0, 1, 0, 1, 4});
  EXPECT_EQ(l.host_of_rank, (std::vector<int>{0, 1, 0, 1, 2}));
  EXPECT_EQ(l.describe(), "3 hosts with 2, 2 and 1 ranks");
  EXPECT_EQ(l.ranks_per_host(), 0);
  EXPECT_THROW(two_level_place(l, 0), Error);
  EXPECT_THROW(resolve_hierarchy(Hierarchy::kTwoLevel, l), Error);
  std::string why;
  EXPECT_EQ(resolve_hierarchy(Hierarchy::kAuto, l, &why), Hierarchy::kFlat);
  EXPECT_NE(why.find("3 hosts with 2, 2 and 1 ranks"), std::string::npos) << why;
  EXPECT_THROW(layout_from_leaders({0, 2, 2}), Error);  // rank 1's leader is above it
  EXPECT_THROW(layout_from_leaders({0, 0, 1}), Error);  // rank 1 is not its own leader
}

TEST(HostLayout, AutoChoosesTwoLevelOnlyAcrossHostsWithSeveralRanksEach) {
  EXPECT_EQ(resolve_hierarchy(Hierarchy::kAuto, block_layout(8, 8)), Hierarchy::kFlat);  // one host
  EXPECT_EQ(resolve_hierarchy(Hierarchy::kAuto, block_layout(8, 1)), Hierarchy::kFlat);  // one rank per host
  EXPECT_EQ(resolve_hierarchy(Hierarchy::kAuto, block_layout(8, 4)), Hierarchy::kTwoLevel);
  EXPECT_EQ(resolve_hierarchy(Hierarchy::kFlat, block_layout(8, 4)), Hierarchy::kFlat);
  EXPECT_EQ(resolve_hierarchy(Hierarchy::kTwoLevel, block_layout(8, 8)), Hierarchy::kTwoLevel);
  EXPECT_EQ(block_layout(8, 4).describe(), "2 hosts x 4 ranks");
}

}  // namespace
}  // namespace rt
