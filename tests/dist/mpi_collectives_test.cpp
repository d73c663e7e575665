// Real collectives under mpirun -np 2/3/4: the ring (over shared memory, its own TCP connections
// on loopback, and MPI point-to-point) and MPI_Allreduce against closed-form averages for awkward sizes, and the
// bucketed, overlapped GradReducer for several bucket caps.
#include <gtest/gtest.h>

#include <cmath>
#include <algorithm>
#include <chrono>
#include <iostream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "dist/collective.h"
#include "dist/grad_reducer.h"
#include "dist/mpi_transport.h"
#include "dist/shm_transport.h"
#include "dist/tcp_transport.h"
#include "dist/transport_primitives.h"
#include "dist/world.h"
#include "tests/dist/fake_hosts.h"
#include "tests/dist/test_stall.h"

namespace rt {
namespace {

// Rank r holds r * 1000 + (i % 97): the average is (world - 1) * 500 + (i % 97).
void fill(std::vector<float>& v, int rank) {
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(rank * 1000 + static_cast<int>(i % 97));
}

void expect_average(const std::vector<float>& v, int world, const std::string& what) {
  size_t bad = 0, first = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    const float want = static_cast<float>((world - 1) * 500.0 + static_cast<double>(i % 97));
    if (std::abs(v[i] - want) > 1e-3f * std::max(1.0f, std::abs(want)) && bad++ == 0) first = i;
  }
  EXPECT_EQ(bad, 0u) << what << ": " << bad << " wrong elements, first at " << first << " = "
                     << (v.empty() ? 0.0f : v[first]);
}

// The ring over every transport, the two-level ring over fake host splits (fake_hosts.h) with
// TCP and with MPI point-to-point across hosts, and MPI_Allreduce.
struct Variant {
  std::string algorithm, transport;
  int fake_host_ranks = 0;  // > 0: the two-level ring over hosts of this many ranks
};

std::vector<Variant> collectives() {
  std::vector<Variant> v = {{"ring", "shm"}, {"ring", "tcp"}, {"ring", "mpi"}};
  for (int k : fake_host_sizes(World::get().size()))
    for (const char* across : {"tcp", "mpi"}) v.push_back({"ring", across, k});
  v.push_back({"mpi", "auto"});
  return v;
}

std::unique_ptr<Collective> make(const Variant& v) {
  if (v.fake_host_ranks > 0) return make_fake_two_level(v.fake_host_ranks, v.transport);
  const CollectiveSpec spec{*enum_named<Allreduce>(v.algorithm), *enum_named<TransportChoice>(v.transport)};
  return make_collective(spec, World::get().comm(), test_stall());
}

TEST(Collectives, RingAndMpiAverageAwkwardSizesToTheClosedForm) {
  const World& w = World::get();
  ASSERT_TRUE(ShmTransport::available(w.comm())) << "the tests run every rank on one host";
  for (const Variant& variant : collectives()) {
    auto c = make(variant);
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{w.size() - 1}, int64_t{1000}, int64_t{131071 * 3 + 5},
                          int64_t{(1 << 22) + 7}}) {
      std::vector<float> v(static_cast<size_t>(count));
      fill(v, w.rank());
      c->average(v.data(), count, {});
      expect_average(v, w.size(), c->describe() + ", count " + std::to_string(count));
    }
  }
}

// Buffers from the collective's own memory: over shared memory the ring then hands neighbours
// places instead of bytes (Note [Zero-copy pieces]); run twice on the same buffer, so the second
// run shows no rank overwrote bytes a neighbour was still reading.
TEST(Collectives, RingAveragesBuffersInTheCollectivesOwnMemory) {
  const World& w = World::get();
  for (const Variant& variant : collectives()) {
    auto c = make(variant);
    const int64_t most = (1 << 21) + 7;
    std::shared_ptr<float> memory = c->allocate(static_cast<size_t>(most));
    for (int64_t count : {int64_t{1}, int64_t{w.size() + 1}, int64_t{131071 * 3 + 5}, most})
      for (int run = 0; run < 2; ++run) {
        std::vector<float> v(static_cast<size_t>(count));
        fill(v, w.rank());
        std::copy(v.begin(), v.end(), memory.get());
        c->average(memory.get(), count, {});
        std::copy(memory.get(), memory.get() + count, v.begin());
        expect_average(v, w.size(), c->describe() + " in its own memory, count " + std::to_string(count));
      }
  }
}

// Note [Sharded update] in dist/ring_schedule.h: the update sees each element's finished average
// exactly once across the ranks (every rank, for MPI_Allreduce), every rank ends with every
// element's update, and gather_updated then hands each rank's writes to the state of the others.
// Parameters and state live in the collective's own memory, as the trainer's arenas do (zero-copy
// over shared memory).
TEST(Collectives, ShardedUpdateAppliesEachFinishedAverageOnceAndSharesTheResult) {
  const World& w = World::get();
  for (const Variant& variant : collectives()) {
    auto c = make(variant);
    const bool sharded = variant.algorithm == "ring";
    const int64_t most = 131071 * 3 + 5;
    std::shared_ptr<float> memory = c->allocate(static_cast<size_t>(2 * most));
    for (int64_t count : {int64_t{0}, int64_t{1}, int64_t{w.size() - 1}, int64_t{w.size() + 1}, int64_t{1000}, most}) {
      const std::string what = c->describe() + ", count " + std::to_string(count);
      std::vector<float> grads(static_cast<size_t>(count)), state(static_cast<size_t>(count), -1.0f);
      fill(grads, w.rank());
      float* g = memory.get();
      float* params = memory.get() + most;
      std::copy(grads.begin(), grads.end(), g);
      std::fill(params, params + count, 0.0f);
      std::vector<float> applied(static_cast<size_t>(count), 0);  // by this rank
      // The "optimizer": parameter = 2 x average + 1; its state records who computed it.
      const ShardUpdate update{[&](int64_t begin, int64_t n) {
                                 for (int64_t i = begin; i < begin + n; ++i) {
                                   params[i] = 2 * g[i] + 1;
                                   state[static_cast<size_t>(i)] = static_cast<float>(w.rank());
                                   applied[static_cast<size_t>(i)] += 1;
                                 }
                               },
                               params,
                               {}};
      c->average(g, count, {}, update);
      std::vector<float> recovered(params, params + count);
      for (float& x : recovered) x = (x - 1) / 2;
      expect_average(recovered, w.size(), what + ", updated parameters");
      std::vector<float> times(applied);
      w.allreduce_sum(times.data(), count);
      const float want = sharded ? 1.0f : static_cast<float>(w.size());
      EXPECT_EQ(std::count(times.begin(), times.end(), want), count) << what << ": updates per element, want " << want;
      c->gather_updated(state.data(), count, {});
      // Exactly one rank updated each element (above); gather_updated leaves its own parts alone and
      // makes every rank agree, so every rank names that one. With MPI_Allreduce every rank updated
      // everything and keeps its own state.
      std::vector<float> sum(state);
      w.allreduce_sum(sum.data(), count);
      for (int64_t i = 0; i < count; ++i) {
        const size_t k = static_cast<size_t>(i);
        if (applied[k] > 0) {
          ASSERT_EQ(state[k], static_cast<float>(w.rank())) << what << ", element " << i;
        }
        if (sharded) {
          ASSERT_EQ(sum[k], state[k] * static_cast<float>(w.size())) << what << ": ranks disagree at " << i;
        }
      }
    }
  }
}

// Note [Norms across shards] in nn/optim/shard_norms.h: with a finish, every rank's applies come
// first, then finish once, before any all-gather lands; what each rank finishes is bounded by the
// collective's shard_cuts, the same on every rank, and the parts tile the buffer.
TEST(Collectives, ShardedUpdateWithFinishSeesItsWholePartBeforeTheAllGather) {
  const World& w = World::get();
  for (const Variant& variant : collectives()) {
    auto c = make(variant);
    const int64_t most = 131071 * 3 + 5;
    std::shared_ptr<float> memory = c->allocate(static_cast<size_t>(2 * most));
    for (int64_t count : {int64_t{1}, int64_t{w.size() + 1}, int64_t{1000}, most}) {
      const std::string what = c->describe() + ", count " + std::to_string(count);
      std::vector<float> grads(static_cast<size_t>(count));
      fill(grads, w.rank());
      float* g = memory.get();
      float* params = memory.get() + most;
      std::copy(grads.begin(), grads.end(), g);
      std::fill(params, params + count, 0.0f);
      int64_t lo = 0, hi = 0, finishes = 0;
      bool untouched_at_finish = true;
      const ShardUpdate update{[&](int64_t begin, int64_t n) {
                                 EXPECT_EQ(finishes, 0) << what << ": an apply after finish";
                                 if (hi == lo) lo = hi = begin;
                                 EXPECT_EQ(begin, hi) << what << ": the part is not contiguous";
                                 hi = begin + n;
                               },
                               params,
                               [&](int64_t begin, int64_t n) {
                                 ++finishes;
                                 EXPECT_EQ(begin, 0) << what;
                                 EXPECT_EQ(n, count) << what;
                                 for (int64_t i = 0; i < count; ++i) untouched_at_finish &= params[i] == 0.0f;
                                 for (int64_t i = lo; i < hi; ++i) params[i] = 2 * g[i] + 1;
                               }};
      c->average(g, count, {}, update);
      EXPECT_EQ(finishes, 1) << what;
      EXPECT_TRUE(untouched_at_finish) << what << ": the all-gather wrote before finish";
      std::vector<float> recovered(params, params + count);
      for (float& x : recovered) x = (x - 1) / 2;
      expect_average(recovered, w.size(), what + ", updated parameters");
      if (!c->shards_update()) {
        EXPECT_TRUE(lo == 0 && hi == count) << what << ": every rank updates everything";
        continue;
      }
      // The cuts are where the parts meet: every rank's bounds, and nothing else.
      std::vector<uint64_t> mine = {static_cast<uint64_t>(lo), static_cast<uint64_t>(hi)};
      const std::vector<uint64_t> bounds = w.allgather(mine);
      std::vector<int64_t> want;
      for (uint64_t b : bounds)
        if (b > 0 && b < static_cast<uint64_t>(count)) want.push_back(static_cast<int64_t>(b));
      std::sort(want.begin(), want.end());
      want.erase(std::unique(want.begin(), want.end()), want.end());
      EXPECT_EQ(c->shard_cuts(count).value(), want) << what;
    }
  }
}

// Two inbox slots and slices of 100 floats: zero-copy sends outnumber the slots many times over,
// so each must wait for its successor to take the earlier ones, without deadlock.
TEST(Collectives, SharedMemoryZeroCopyRingWithATinyInboxCompletes) {
  const World& w = World::get();
  ShmTransport t(w.comm(), test_stall(), /*slot_bytes=*/64, /*slots=*/2);
  RingExecutor ring = transport_ring(t, Wire::kFp32, 0, /*slice_floats=*/100);
  std::shared_ptr<float> memory = t.allocate(20011);
  std::vector<float> v(20011);
  fill(v, w.rank());
  std::copy(v.begin(), v.end(), memory.get());
  ring.run(memory.get(), 20011, {});
  std::copy(memory.get(), memory.get() + 20011, v.begin());
  expect_average(v, w.size(), "zero-copy, tiny inbox");
}

// Each rank expects one float more than its predecessor sends: every receive must fail naming the
// mismatch, not read the next transfer's bytes as its own.
TEST(Collectives, TcpTransportRefusesATransferOfTheWrongLength) {
  const World& w = World::get();
  TcpTransport t(w.comm(), test_stall());
  const int prev = (w.rank() + w.size() - 1) % w.size();
  std::vector<float> out(static_cast<size_t>(w.rank() + 1), 1.0f), in(static_cast<size_t>(prev + 2));
  t.wait(t.post_send(out.data(), out.size() * sizeof(float), (w.rank() + 1) % w.size()), {});
  try {  // the length may arrive while the receive is posted, or while it is awaited
    t.wait(t.post_recv(in.data(), in.size() * sizeof(float), prev), {});
    ADD_FAILURE() << "a transfer of the wrong length was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("different schedules"), std::string::npos) << e.what();
  }
  w.barrier();  // no rank closes its sockets before every rank has read its header
}

// A neighbour whose process closed the ring's connections (here rank 0's transport, destroyed) is
// named by links().broken on either side of it while the ring is idle, which ends a collective's
// wait (Note [A broken link ends the wait] in dist/stall_wait.h); ranks beyond see nothing.
TEST(Collectives, TcpTransportLinksNameTheNeighbourThatClosedThem) {
  const World& w = World::get();
  auto t = std::make_unique<TcpTransport>(w.comm(), test_stall());
  EXPECT_EQ(t->links().broken, "");
  w.barrier();  // every rank has looked before rank 0 closes
  if (w.rank() == 0) t.reset();
  w.barrier();
  if (w.rank() != 0) {
    const bool beside = w.rank() == 1 || w.rank() == w.size() - 1;
    std::string broken = t->links().broken;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
    while (beside && broken.empty() && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));  // rank 0's FIN is on its way
      broken = t->links().broken;
    }
    if (beside) {
      EXPECT_NE(broken.find("connection " + std::string(w.rank() == 1 ? "from" : "to") +
                            " rank 0 failed: the "
                            "connection was closed (the rank died or aborted)"),
                std::string::npos)
          << broken;
    } else {
      EXPECT_EQ(broken, "");
    }
  }
  w.barrier();
}

TEST(Collectives, RingWithTinySlicesPipelinesCorrectly) {
  const World& w = World::get();
  MpiTransport t(w.comm(), test_stall());
  RingExecutor ring = transport_ring(t, Wire::kFp32, 0, /*slice_floats=*/7);
  std::vector<float> v(1001);
  fill(v, w.rank());
  ring.run(v.data(), static_cast<int64_t>(v.size()), {});
  expect_average(v, w.size(), "slices of 7");
}

// Two slots of 64 bytes: every slice is split into pieces and the inbox wraps around hundreds of
// times, so a send posted ahead must wait for its successor to drain, without deadlock.
TEST(Collectives, SharedMemoryRingWithATinyInboxWrapsAroundCorrectly) {
  const World& w = World::get();
  ShmTransport t(w.comm(), test_stall(), /*slot_bytes=*/64, /*slots=*/2);
  RingExecutor ring = transport_ring(t, Wire::kFp32, 0, /*slice_floats=*/100);
  for (int64_t count : {int64_t{1}, int64_t{w.size() + 1}, int64_t{20011}}) {
    std::vector<float> v(static_cast<size_t>(count));
    fill(v, w.rank());
    ring.run(v.data(), count, {});
    expect_average(v, w.size(), "tiny inbox, count " + std::to_string(count));
  }
}

// A dead link between hosts stalls the two-level ring's rank waiting across hosts and, behind it,
// its host's ranks, whose ring inside the host gives up first. The rank across announces whom it
// waits for (ShmTransport::waiting_elsewhere), so rank 1, stalled on rank 0, names rank 0's peer
// beyond the network (world rank 99 here), not rank 0.
TEST(Collectives, SharedMemoryStallOnARankWaitingAcrossHostsNamesTheRankBeyond) {
  const World& w = World::get();
  StallPolicy policy = test_stall();
  policy.abort_s = 0.3;
  policy.abort = [](const std::string& m) { throw Error(m); };
  ShmTransport t(w.comm(), policy);
  float x = 1, y = 0;
  Transport::Handle pending = -1;
  if (w.rank() == 0) t.waiting_elsewhere(99);
  w.barrier();
  if (w.rank() == 1) {
    pending = t.post_recv(&y, sizeof y, 0);
    try {
      t.wait(pending, {});
      ADD_FAILURE() << "rank 0 sent nothing, yet the wait ended";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("; rank 0 is itself waiting for rank 99 across hosts: rank 99 is stuck"),
                std::string::npos)
          << e.what();
    }
  }
  w.barrier();
  if (w.rank() == 0) {
    t.waiting_elsewhere(-1);
    t.wait(t.post_send(&x, sizeof x, 1), {});
  }
  if (w.rank() == 1) t.wait(pending, {});
  w.barrier();
}

TEST(Collectives, SharedMemoryTransportRefusesPeersOutsideTheRing) {
  const World& w = World::get();
  ShmTransport t(w.comm(), test_stall());
  float x = 0;
  if (w.size() > 2) {
    EXPECT_THROW(t.post_send(&x, sizeof x, (w.rank() + 2) % w.size()), Error);  // not next
  }
  if (w.size() > 3) {
    EXPECT_THROW(t.post_recv(&x, sizeof x, (w.rank() + 2) % w.size()), Error);  // not prev
  }
  EXPECT_THROW(t.post_send(&x, sizeof x, w.rank()), Error);
  EXPECT_THROW(t.post_recv(&x, sizeof x, w.rank()), Error);
}

TEST(GradReducer, BucketsOfEverySizeAverageTheWholeArenaWithAndWithoutOverlap) {
  const World& w = World::get();
  // 40 "parameters" of awkward sizes laid out with 16-float alignment, as the graph does.
  std::vector<ParamExtent> params;
  int64_t at = 0;
  for (int i = 0; i < 40; ++i) {
    const int64_t n = 1 + (i * 7919) % 30011;
    params.push_back({at, n});
    at += (n + 15) / 16 * 16;
  }
  for (const Variant& variant : collectives())
    for (int64_t cap : {int64_t{0}, int64_t{1000}, int64_t{50000}, int64_t{1} << 30})
      for (bool overlap : {true, false}) {
        std::vector<float> arena(static_cast<size_t>(at), 0.0f);
        auto buckets = plan_buckets(params, 4000, cap);
        GradReducer reducer(arena.data(), params, buckets, make(variant), overlap, nullptr);
        for (int step = 0; step < 2; ++step) {
          reducer.begin_step(step);
          for (size_t p = 0; p < params.size(); ++p) {
            for (int64_t i = 0; i < params[p].count; ++i)
              arena[static_cast<size_t>(params[p].offset + i)] =
                  static_cast<float>(w.rank() * 10 + static_cast<int>(p) + step);
            reducer.on_grad_ready(p);
          }
          reducer.finish();
          size_t bad = 0;
          for (size_t p = 0; p < params.size(); ++p)
            for (int64_t i = 0; i < params[p].count; ++i)
              bad += std::abs(arena[static_cast<size_t>(params[p].offset + i)] -
                              static_cast<float>((w.size() - 1) * 5.0 + static_cast<double>(p) + step)) > 1e-4f;
          EXPECT_EQ(bad, 0u) << variant.algorithm << "/" << variant.transport << "/" << variant.fake_host_ranks
                             << " cap " << cap << " overlap " << overlap << " step " << step << " (" << buckets.size()
                             << " buckets)";
        }
      }
}

}  // namespace
}  // namespace rt
