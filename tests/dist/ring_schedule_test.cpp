// The ring schedule simulated in one process: world copies of a buffer exchange chunks exactly as
// the schedule says, and every copy must end equal to the naive average. Also the schedule's own
// invariants: each step's sends match the neighbour's receives, each chunk is finished once.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "dist/ring_schedule.h"

namespace rt {
namespace {

// Runs the schedule on `world` simulated ranks; returns each rank's buffer afterwards.
std::vector<std::vector<double>> simulate(const std::vector<std::vector<double>>& input) {
  const int world = static_cast<int>(input.size());
  std::vector<std::vector<double>> buf = input;
  if (world == 1) return buf;
  const int64_t count = static_cast<int64_t>(input[0].size());
  for (int step = 0; step < ring_step_count(world); ++step) {
    // Every rank sends at once: snapshot what is sent before anyone receives.
    std::vector<std::vector<double>> sent(world);
    for (int r = 0; r < world; ++r) {
      const ChunkRange c = chunk_range(count, world, ring_step(r, world, step).send_chunk);
      sent[r].assign(buf[r].begin() + c.begin, buf[r].begin() + c.begin + c.count);
    }
    for (int r = 0; r < world; ++r) {
      const RingStep s = ring_step(r, world, step);
      const int from = ring_prev(r, world);
      const ChunkRange c = chunk_range(count, world, s.recv_chunk);
      EXPECT_EQ(ring_step(from, world, step).send_chunk, s.recv_chunk) << "rank " << r << " step " << step;
      for (int64_t i = 0; i < c.count; ++i) {
        double& v = buf[r][c.begin + i];
        v = s.reduce ? v + sent[from][i] : sent[from][i];
        if (s.final_reduce) v /= world;
      }
    }
  }
  return buf;
}

TEST(RingSchedule, EveryRankEndsWithTheAverageForAwkwardCounts) {
  for (int world = 1; world <= 8; ++world) {
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{world - 1}, int64_t{world + 3}, int64_t{7 * world + 5},
                          int64_t{1000}, int64_t{100003}}) {
      std::vector<std::vector<double>> in(world, std::vector<double>(static_cast<size_t>(count)));
      std::vector<double> expect(static_cast<size_t>(count), 0.0);
      for (int r = 0; r < world; ++r)
        for (int64_t i = 0; i < count; ++i) {
          in[r][i] = std::sin(0.37 * static_cast<double>(i) + r) * (r + 1);
          expect[i] += in[r][i] / world;
        }
      const auto out = simulate(in);
      for (int r = 0; r < world; ++r)
        for (int64_t i = 0; i < count; ++i)
          ASSERT_NEAR(out[r][i], expect[i], 1e-12)
              << "world " << world << " count " << count << " rank " << r << " element " << i;
    }
  }
}

TEST(RingSchedule, ChunksTileTheBufferWithSizesDifferingByAtMostOne) {
  for (int world = 1; world <= 8; ++world)
    for (int64_t count : {0, 1, 5, 8, 9, 1001}) {
      int64_t next = 0, lo = count, hi = 0;
      for (int c = 0; c < world; ++c) {
        const ChunkRange r = chunk_range(count, world, c);
        EXPECT_EQ(r.begin, next);
        next += r.count;
        lo = std::min(lo, r.count);
        hi = std::max(hi, r.count);
      }
      EXPECT_EQ(next, count);
      EXPECT_LE(hi - lo, 1);
    }
}

TEST(RingSchedule, EachRankFinishesEveryChunkExactlyOnce) {
  for (int world = 2; world <= 8; ++world)
    for (int r = 0; r < world; ++r) {
      std::vector<int> finished(world, 0);  // chunk -> times it became final on rank r
      for (int step = 0; step < ring_step_count(world); ++step) {
        const RingStep s = ring_step(r, world, step);
        if (s.final_reduce || !s.reduce) ++finished[s.recv_chunk];
      }
      for (int c = 0; c < world; ++c) EXPECT_EQ(finished[c], 1) << "world " << world << " rank " << r << " chunk " << c;
    }
}

TEST(RingSchedule, EachRankSendsTwoWorldMinusOneOverWorldOfTheBuffer) {
  const int64_t count = 840;  // divisible by 1..8
  for (int world = 2; world <= 8; ++world) {
    int64_t sent = 0;
    for (int step = 0; step < ring_step_count(world); ++step)
      sent += chunk_range(count, world, ring_step(0, world, step).send_chunk).count;
    EXPECT_EQ(sent, 2 * (world - 1) * count / world);
  }
}

// Note [Ring primitives] in dist/ring_schedule.h: a send, then one receive per step in NCCL's
// runRing shape, each receive's chunk the one the schedule gives and, where it forwards, the one
// the next step sends.
TEST(RingSchedule, OperationsAreASendThenOneReceivePerStepInNcclsShape) {
  using K = RingOpKind;
  for (int world = 2; world <= 8; ++world)
    for (int r = 0; r < world; ++r) {
      const int steps = ring_step_count(world);
      const std::vector<RingOp> ops = ring_ops(r, world, 0, steps);
      ASSERT_EQ(ops.size(), static_cast<size_t>(steps + 1));
      EXPECT_EQ(ops[0].kind, K::kSend);
      EXPECT_TRUE(ops[0].partial);
      EXPECT_EQ(ops[0].chunk, ring_step(r, world, 0).send_chunk);
      for (int s = 0; s < steps; ++s) {
        const RingOp& op = ops[static_cast<size_t>(s + 1)];
        const K want = s < world - 2    ? K::kRecvReduceSend
                       : s == world - 2 ? K::kRecvReduceCopySend
                       : s < steps - 1  ? K::kRecvCopySend
                                        : K::kRecv;
        EXPECT_EQ(op.kind, want) << "world " << world << " rank " << r << " step " << s;
        EXPECT_EQ(op.chunk, ring_step(r, world, s).recv_chunk);
        EXPECT_EQ(op.forward, s + 1 < steps);
        EXPECT_EQ(op.partial, want == K::kRecvReduceSend);
        if (op.forward) {
          EXPECT_EQ(op.chunk, ring_step(r, world, s + 1).send_chunk);
        }
      }
      // The phases alone: the reduce-scatter keeps its last chunk; the all-gather opens with it.
      const std::vector<RingOp> rs = ring_ops(r, world, 0, world - 1), ag = ring_ops(r, world, world - 1, steps);
      EXPECT_EQ(rs.back().kind, K::kRecvReduceCopySend);
      EXPECT_FALSE(rs.back().forward);
      EXPECT_EQ(rs.back().chunk, owned_chunk(r, world));
      EXPECT_EQ(ag.front().kind, K::kSend);
      EXPECT_FALSE(ag.front().partial);
      EXPECT_EQ(ag.front().chunk, owned_chunk(r, world));
      EXPECT_EQ(ag.back().kind, K::kRecv);
    }
}

}  // namespace
}  // namespace rt
