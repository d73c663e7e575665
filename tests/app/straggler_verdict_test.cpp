// judge_stragglers against Note [Naming the straggler]'s rule written out, on figures built as
// ranks build them (StragglerTally, one epoch of steps each): silent on what the cited runs
// without a straggler showed (+16% over the median, +40% of a 1.5 ms median, a link 4.5x slower
// costing 0.2 ms), and naming a slow rank or link just past each threshold, not just before it.
#include "app/run/straggler_report.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rt {
namespace {

// One rank's epoch: `steps` steps of `compute_ms`, each then waiting `wait_ms` for the averages,
// and its receives from the previous ring rank taking `link_ms` for `bytes` bytes a step.
struct RankEpoch {
  double compute_ms = 100, wait_ms = 10, link_ms = 1, bytes = 1e6;
  double first_ms = -1;  // the process's first step's compute, where it differs
};

StragglerVerdict judge(const std::vector<RankEpoch>& ranks, int steps = 50) {
  const int world = static_cast<int>(ranks.size());
  std::vector<double> all(static_cast<size_t>(world * StragglerTally::kFields), 0.0);
  std::vector<std::string> hosts;
  for (int r = 0; r < world; ++r) {
    const RankEpoch& e = ranks[static_cast<size_t>(r)];
    StragglerTally tally;
    tally.begin_epoch();
    Links waits;
    waits.prev = (r + world - 1) % world, waits.next = (r + 1) % world;
    for (int s = 0; s < steps; ++s) {
      waits.from_prev.seconds += e.link_ms * 1e-3;
      waits.from_prev.bytes += e.bytes;
      const double compute_ms = s == 0 && e.first_ms >= 0 ? e.first_ms : e.compute_ms;
      tally.add_step(compute_ms * 1e-3, e.wait_ms * 1e-3, waits);
    }
    std::vector<double> mine(all.size(), 0.0);
    tally.write(mine.data(), r);
    for (size_t i = 0; i < all.size(); ++i) all[i] += mine[i];  // the epoch's sum
    hosts.push_back("node" + std::to_string(r));
  }
  return judge_stragglers(all.data(), hosts);
}

std::vector<RankEpoch> four_alike() { return std::vector<RankEpoch>(4); }

TEST(StragglerVerdict, ChanceAsTheCitedRunsShowedItIsSilent) {
  std::vector<RankEpoch> r = four_alike();
  r[2].compute_ms = 116;  // +16%, and the others waited no more than it did
  EXPECT_EQ(judge(r).line, "");
  r = four_alike();
  for (RankEpoch& e : r) e.compute_ms = 1.5, e.wait_ms = 0.2;
  r[1].compute_ms = 2.1, r[1].wait_ms = 0.05;  // +40%, waited for, but 0.6 ms a step
  EXPECT_EQ(judge(r).line, "");
  r = four_alike();
  for (RankEpoch& e : r) e.bytes = 4.5e4, e.link_ms = 0.045;
  r[3].link_ms = 0.045 * 4.5;  // 4.5x the others' pace, 0.16 ms a step more
  const StragglerVerdict v = judge(r);
  EXPECT_EQ(v.line, "");
  EXPECT_EQ(v.worst_link, "2->3");
  EXPECT_NEAR(v.worst_link_ratio, 4.5, 1e-9);
}

TEST(StragglerVerdict, ARankPastTheMarginForWhichTheOthersWaitedIsNamed) {
  std::vector<RankEpoch> r = four_alike();
  r[2].compute_ms = 100 * (1 + kComputeMargin) + 1, r[2].wait_ms = 1;  // 21 ms over, it came last
  StragglerVerdict v = judge(r);
  EXPECT_EQ(v.line,
            "rank 2 (node2) computed 21 ms a step over the median (+21%); the ring waited on it in 0% of steps");
  EXPECT_EQ(v.worst_rank, 2);
  EXPECT_NEAR(v.compute_ms_median, 100, 1e-9);
  // Its wait under 1 ms and a tenth of its compute: each such step is one the others waited for.
  r[2].wait_ms = 0.5;
  EXPECT_NE(judge(r).line.find("waited on it in 100% of steps"), std::string::npos) << judge(r).line;
  // Just under the margin, or waiting more than half as long as the others did (it did not hold
  // them back): silent.
  r[2].compute_ms = 100 * (1 + kComputeMargin) - 0.1;
  EXPECT_EQ(judge(r).line, "");
  r[2].compute_ms = 130, r[2].wait_ms = 6;
  EXPECT_EQ(judge(r).line, "");
}

TEST(StragglerVerdict, ALinkPastItsFactorAndCostingMoreThanTheFloorIsNamed) {
  std::vector<RankEpoch> r = four_alike();
  r[1].link_ms = 1 + 1e3 * kFloorS + 1;  // 4x the others' pace, 3 ms a step more
  StragglerVerdict v = judge(r);
  EXPECT_EQ(v.line, "transfers from rank 0 (node0) to rank 1 (node1) took 4.0x the others' (3 ms a step more)");
  EXPECT_EQ(v.worst_link, "0->1");
  EXPECT_NEAR(v.worst_link_ms, 3, 1e-9);
  // 3.5 ms a step more, but under the factor (2.75x): silent.
  for (RankEpoch& e : r) e.link_ms = 2;
  r[1].link_ms = 5.5;
  EXPECT_EQ(judge(r).line, "");
  // 18x slower on small messages, under the floor a step (the 1 Gbit/s row of the link runs): silent.
  for (RankEpoch& e : r) e.link_ms = 0.05, e.bytes = 5e4;
  r[1].link_ms = 0.9;
  v = judge(r);
  EXPECT_NEAR(v.worst_link_ratio, 18, 1e-9);
  EXPECT_EQ(v.line, "");
}

TEST(StragglerVerdict, OneRankHasNothingToCompare) {
  const StragglerVerdict v = judge({RankEpoch{}});
  EXPECT_EQ(v.worst_rank, -1);
  EXPECT_EQ(v.on_demand(), "nothing to compare (one rank, or no step yet this epoch)");
}

TEST(StragglerVerdict, TheProcesssFirstStepIsLeftOut) {
  // LeNet's 4 ms steps, 40 ms added to rank 2's, 16 steps an epoch; rank 1's first step took
  // 1.5 s, its arenas touched for the first time: 97.5 ms a step over 16 steps, had it counted.
  std::vector<RankEpoch> r = four_alike();
  for (RankEpoch& e : r) e.compute_ms = 4, e.wait_ms = 40, e.first_ms = 300;
  r[2].compute_ms = 44, r[2].wait_ms = 0.5;
  r[1].first_ms = 1500;
  StragglerVerdict v = judge(r, 16);
  EXPECT_EQ(v.worst_rank, 2);
  EXPECT_EQ(v.line,
            "rank 2 (node2) computed 40 ms a step over the median (+1000%); the ring waited on it in 100% of steps");
  // A later epoch's first step counts as any other: the tally goes on past begin_epoch.
  StragglerTally tally;
  Links none;
  tally.add_step(9.0, 0, none);
  tally.begin_epoch();
  tally.add_step(1.0, 0, none);
  std::vector<double> all(StragglerTally::kFields, 0.0);
  tally.write(all.data(), 0);
  EXPECT_EQ(all[0], 1.0);  // compute
  EXPECT_EQ(all[1], 1.0);  // steps
}

}  // namespace
}  // namespace rt
