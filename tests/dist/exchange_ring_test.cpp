// The GPU's ring logic without a GPU (CTest label mpi, at 2, 3 and 4 ranks): the ring executor
// over ExchangePrimitives (sends held until the step's receive goes with them, one exchange per
// step) and the two-level composition, on host memory through HostExchangePrimitives and an
// exchange of MPI_Sendrecv, against the CPU's ring over a Transport, a second implementation of
// the primitives: bit for bit at every wire type, awkward sizes, with and without a sharded update
// (one that writes as slices land, and one whose finish sums norms across ranks, as LARS's does).
// The GPU check runs the same logic on the GPU with kernels (gpu_ring_test.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "dist/exchange_primitives.h"
#include "dist/mpi_transport.h"
#include "dist/ring_executor.h"
#include "dist/transport_primitives.h"
#include "dist/two_level_collective.h"
#include "dist/two_level_ring.h"
#include "dist/world.h"
#include "tests/dist/fake_hosts.h"
#include "tests/dist/ring_inputs.h"
#include "tests/dist/test_stall.h"

namespace rt {
namespace {

// Host bytes through one MPI_Sendrecv per exchange, on a communicator of its own.
class SendrecvExchange final : public DeviceExchange {
 public:
  explicit SendrecvExchange(MPI_Comm comm) {
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &world_);
  }
  ~SendrecvExchange() override { MPI_Comm_free(&comm_); }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string describe() const override { return "MPI_Sendrecv"; }
  void warm_up(void*) override {}
  void exchange(const void* send, size_t send_bytes, int next, void* recv, size_t recv_bytes, int prev,
                void*) override {
    ++exchanges;
    MPI_Sendrecv(send, static_cast<int>(send_bytes), MPI_BYTE, next, 5, recv, static_cast<int>(recv_bytes), MPI_BYTE,
                 prev, 5, comm_, MPI_STATUS_IGNORE);
  }
  int64_t exchanges = 0;

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0, world_ = 1;
};

std::string first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0)
      return str_cat("element ", i, " is ", a[i], " through the exchange, ", b[i], " through the transport");
  return "";
}

const std::vector<int64_t> kCounts = {0, 1, 2, 3, 5, 1000, 100003};

// An update run by either ring: as the slices land, parameter = 1 - 0.5 x average; with `norms`,
// each rank notes its part and finish sums the squares of the parts across ranks, then writes
// parameter = 1 - average / (1 + norm).
struct Update {
  std::vector<float> params;
  int64_t own_begin = -1, own_end = -1;
  ShardUpdate make(const float* data, bool norms) {
    ShardUpdate u;
    u.gather = params.data();
    if (!norms) {
      u.apply = [this, data](int64_t b, int64_t n) {
        for (int64_t i = b; i < b + n; ++i) params[static_cast<size_t>(i)] = 1 - 0.5f * data[i];
      };
      return u;
    }
    u.apply = [this](int64_t b, int64_t n) {
      if (own_begin < 0) own_begin = b;
      own_end = b + n;
    };
    u.finish = [this, data](int64_t, int64_t) {
      double sq = 0;
      for (int64_t i = own_begin; i >= 0 && i < own_end; ++i) sq += static_cast<double>(data[i]) * data[i];
      MPI_Allreduce(MPI_IN_PLACE, &sq, 1, MPI_DOUBLE, MPI_SUM, World::get().comm());
      const float rate = static_cast<float>(1 / (1 + std::sqrt(sq)));
      for (int64_t i = own_begin; i >= 0 && i < own_end; ++i) params[static_cast<size_t>(i)] = 1 - rate * data[i];
      own_begin = own_end = -1;
    };
    return u;
  }
};

TEST(ExchangeRing, MatchesTheTransportRingBitForBitWithAndWithoutAShardedUpdate) {
  const World& w = World::get();
  for (Wire wire : {Wire::kFp32, Wire::kFp16, Wire::kBf16}) {
    SendrecvExchange exchange(w.comm());
    RingExecutor via_exchange(std::make_unique<HostExchangePrimitives>(exchange), wire);
    MpiTransport transport(w.comm(), test_stall());
    RingExecutor via_transport = transport_ring(transport, wire, 0, /*slice_floats=*/7);
    for (int64_t count : kCounts)
      for (int mode = 0; mode < 3; ++mode) {  // plain average, update, update with norms
        const std::string what = str_cat(name_of(wire), ", count ", count, ", mode ", mode);
        std::vector<float> a = contribution(count, w.rank()), b = a;
        if (mode == 0) {
          const int64_t before = exchange.exchanges;
          via_exchange.run(a.data(), count, {});
          via_transport.run(b.data(), count, {});
          EXPECT_EQ(first_difference(a, b), "") << what;
          if (count > 0) {
            EXPECT_EQ(exchange.exchanges - before, 2 * (w.size() - 1)) << what << ": one per step";
          }
          continue;
        }
        Update ua{std::vector<float>(static_cast<size_t>(count), -7)}, ub = ua;
        via_exchange.run(a.data(), count, {}, ua.make(a.data(), mode == 2));
        via_transport.run(b.data(), count, {}, ub.make(b.data(), mode == 2));
        EXPECT_EQ(first_difference(ua.params, ub.params), "") << what << ", the updated parameters";
        for (float p : ua.params) ASSERT_NE(p, -7.0f) << what << ": a parameter nobody updated";
      }
  }
}

// Note [Two-level ring] composed once (two_level_ring.h) over two exchange rings, as the GPU's
// two-level ring is, against the CPU's two-level collective over the same fake hosts.
TEST(ExchangeRing, TwoLevelCompositionMatchesTheCpuTwoLevelRingBitForBit) {
  const World& w = World::get();
  for (int k : fake_host_sizes(w.size()))
    for (Wire wire : {Wire::kFp32, Wire::kBf16}) {
      auto cpu = make_fake_two_level(k, "mpi", wire);
      const TwoLevelComms comms = split_two_level(w.comm(), block_layout(w.size(), k));
      SendrecvExchange local(comms.local), cross(comms.cross);
      RingExecutor inside(std::make_unique<HostExchangePrimitives>(local), Wire::kFp32, 1.0f);
      RingExecutor across(std::make_unique<HostExchangePrimitives>(cross), wire, 1.0f / static_cast<float>(w.size()));
      TwoLevelRing two(inside, across, comms.place);
      for (int64_t count : kCounts)
        for (int mode = 0; mode < 3; ++mode) {
          const std::string what = str_cat("hosts of ", k, ", ", name_of(wire), ", count ", count, ", mode ", mode);
          std::vector<float> a = contribution(count, w.rank()), b = a;
          Update ua{std::vector<float>(static_cast<size_t>(count), -7)}, ub = ua;
          const ShardUpdate update_a = ua.make(a.data(), mode == 2);
          for (const RingPhase& phase : two.average(a.data(), count, {}, mode == 0 ? nullptr : &update_a)) phase.run();
          if (mode == 0) {
            cpu->average(b.data(), count, {});
            EXPECT_EQ(first_difference(a, b), "") << what;
          } else {
            cpu->average(b.data(), count, {}, ub.make(b.data(), mode == 2));
            EXPECT_EQ(first_difference(ua.params, ub.params), "") << what << ", the updated parameters";
          }
        }
      MPI_Comm l = comms.local, c = comms.cross;
      MPI_Comm_free(&l);
      MPI_Comm_free(&c);
    }
}

}  // namespace
}  // namespace rt
