// The collectives on GPU memory (CTest labels gpu and mpi), under mpirun -np 1 and -np 3:
// - ringtrain's device ring at every wire type against the CPU ring (a second implementation of
//   the same schedule and arithmetic) on the same inputs: bit for bit, at awkward sizes; and the
//   two-level ring on the GPU against the CPU's over the same fake host splits. The ring
//   runs over a host-staged exchange here, because NCCL refuses two ranks on one GPU and a test
//   machine has one; its steps and kernels are what this checks.
// - the ring over NCCL point-to-point and ncclAllReduce against the closed form, where each rank
//   has a GPU of its own (else they skip, saying so), and NCCL's exchange with itself at 1 rank.
// - the sharded update (Note [Sharded update]) on the flat and two-level device rings against the
//   CPU's, its kernels on the communication stream, with and without norms across ranks.
// - the trainer's wiring, a GradReducer over the device ring: a bucket waits on the GPU for the
//   compute stream's writes, and finish() makes later compute work wait for the averages.
// - the trainer's own sharded update on the GPU: a model planned on the GPU, a GradReducer over the
//   device ring with the real SGD and LARS through make_sharded_update (LARS's PartUpdate and
//   ShardNorms), against the same over the CPU ring.
// Without a usable GPU every test skips, saying why.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "app/gradient_buckets.h"
#include "app/sharded_update.h"
#include "dist/collective.h"
#include "dist/cuda/device_collective.h"
#include "dist/grad_reducer.h"
#include "dist/mpi_transport.h"
#include "dist/transport_primitives.h"
#include "dist/two_level_collective.h"
#include "dist/world.h"
#include "models/registry.h"
#include "nn/cuda/runtime.h"
#include "nn/device.h"
#include "nn/ops/agreed_reductions.h"
#include "nn/ops/sgd_update.h"
#include "nn/optim/optimizer.h"
#include "tests/dist/fake_hosts.h"
#include "tests/dist/ring_inputs.h"
#include "tests/dist/test_stall.h"

namespace rt {
namespace {

#define CUDA_OK(call) ASSERT_EQ((call), cudaSuccess) << #call

class DeviceRingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_usable(&why)) GTEST_SKIP() << "no usable GPU: " << why;
    int gpus = 0;
    cudaGetDeviceCount(&gpus);
    gpus_ = gpus;
    // Ranks beyond the GPU count share them (the staged-exchange tests allow it; NCCL does not).
    select_cuda_device(World::get().local_rank() % gpus);
  }
  // NCCL takes one GPU per rank: true when this job has that.
  bool one_gpu_per_rank() const { return World::get().local_size() <= gpus_; }
  int gpus_ = 0;
};

// Moves each step's bytes through host memory with MPI on comm (the world's by default):
// synchronous, slow, and independent of NCCL, so several ranks can share one GPU.
class StagedExchange final : public DeviceExchange {
 public:
  explicit StagedExchange(MPI_Comm comm = World::get().comm()) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &world_);
  }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string describe() const override { return "a host-staged MPI exchange"; }
  void warm_up(void*) override {
    if (world_ == 1) return;
    int out = rank_, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, (rank_ + 1) % world_, 12, &in, 1, MPI_INT, (rank_ + world_ - 1) % world_, 12, comm_,
                 MPI_STATUS_IGNORE);
  }
  void exchange(const void* send, size_t send_bytes, int next, void* recv, size_t recv_bytes, int prev,
                void* stream) override {
    const auto s = static_cast<cudaStream_t>(stream);
    std::vector<char> out(send_bytes), in(recv_bytes);
    RT_CHECK(cudaMemcpyAsync(out.data(), send, send_bytes, cudaMemcpyDeviceToHost, s) == cudaSuccess, "copy out");
    RT_CHECK(cudaStreamSynchronize(s) == cudaSuccess, "sync");
    MPI_Sendrecv(out.data(), static_cast<int>(send_bytes), MPI_BYTE, next, 11, in.data(), static_cast<int>(recv_bytes),
                 MPI_BYTE, prev, 11, comm_, MPI_STATUS_IGNORE);
    RT_CHECK(cudaMemcpyAsync(recv, in.data(), recv_bytes, cudaMemcpyHostToDevice, s) == cudaSuccess, "copy in");
    RT_CHECK(cudaStreamSynchronize(s) == cudaSuccess, "sync");
  }

 private:
  MPI_Comm comm_;
  int rank_ = 0, world_ = 1;
};

// data on the GPU, averaged by c, back on the host.
std::vector<float> average_on_gpu(Collective& c, const std::vector<float>& data) {
  const size_t bytes = sizeof(float) * data.size();
  std::shared_ptr<void> gpu = allocate_zeroed(Device::kCuda, bytes);
  copy_bytes(gpu.get(), Device::kCuda, data.data(), Device::kCpu, bytes);
  c.average(static_cast<float*>(gpu.get()), static_cast<int64_t>(data.size()), {});
  c.stream_order()->join_compute();
  std::vector<float> out(data.size());
  copy_bytes(out.data(), Device::kCpu, gpu.get(), Device::kCuda, bytes);  // on the compute stream
  return out;
}

size_t first_difference(const std::vector<float>& a, const std::vector<float>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(&a[i], &b[i], sizeof(float)) != 0) return i;
  return a.size();
}

TEST_F(DeviceRingTest, MatchesTheCpuRingBitForBitAtEveryWireType) {
  const World& w = World::get();
  for (Wire wire : {Wire::kFp32, Wire::kFp16, Wire::kBf16}) {
    auto gpu_ring = make_device_ring(std::make_unique<StagedExchange>(), wire, test_stall());
    MpiTransport transport(w.comm(), test_stall());
    RingExecutor cpu_ring = transport_ring(transport, wire);
    for (int64_t count : {int64_t{1}, int64_t{w.size() + 1}, int64_t{1000}, int64_t{(1 << 18) + 3}}) {
      std::vector<float> on_cpu = contribution(count, w.rank());
      const std::vector<float> on_gpu = average_on_gpu(*gpu_ring, on_cpu);
      cpu_ring.run(on_cpu.data(), count, {});
      const size_t at = first_difference(on_gpu, on_cpu);
      EXPECT_EQ(at, on_cpu.size()) << gpu_ring->describe() << ", count " << count << ": element " << at << " is "
                                   << on_gpu[at] << " on the GPU, " << on_cpu[at] << " on the CPU";
    }
  }
}

// Note [Two-level ring] on the GPU against the CPU's two-level ring over the same fake host splits
// (fake_hosts.h): bit for bit at every wire type. Both exchanges are host-staged, over the
// communicators the trainer's would join.
TEST_F(DeviceRingTest, TwoLevelMatchesTheCpuTwoLevelRingBitForBit) {
  const World& w = World::get();
  for (int k : fake_host_sizes(w.size()))
    for (Wire wire : {Wire::kFp32, Wire::kFp16, Wire::kBf16}) {
      auto cpu_ring = make_fake_two_level(k, "mpi", wire);
      const TwoLevelComms comms = split_two_level(w.comm(), block_layout(w.size(), k));
      auto gpu_ring =
          make_device_two_level_ring(std::make_unique<StagedExchange>(comms.local),
                                     std::make_unique<StagedExchange>(comms.cross), comms.place, wire, test_stall());
      for (int64_t count : {int64_t{1}, int64_t{w.size() + 1}, int64_t{1000}, int64_t{(1 << 18) + 3}}) {
        std::vector<float> on_cpu = contribution(count, w.rank());
        const std::vector<float> on_gpu = average_on_gpu(*gpu_ring, on_cpu);
        cpu_ring->average(on_cpu.data(), count, {});
        const size_t at = first_difference(on_gpu, on_cpu);
        EXPECT_EQ(at, on_cpu.size()) << gpu_ring->describe() << ", count " << count << ": element " << at << " is "
                                     << on_gpu[at] << " on the GPU, " << on_cpu[at] << " on the CPU";
      }
      gpu_ring.reset();
      MPI_Comm local = comms.local, cross = comms.cross;
      MPI_Comm_free(&local);
      MPI_Comm_free(&cross);
    }
}

// An update over `device` memory, as the trainer's optimizer would run it: SGD at rate 1/2 as the
// slices land; with norms, each rank notes its part and finish sums the squares of the parts
// across ranks, then updates at a rate of 2^-ceil(log2(1 + norm)), LARS's shape. Rates are powers
// of two, so the GPU's fused multiply-adds round as the CPU's separate ones do.
struct SgdHalves {
  Device device;
  float *params, *grads, *momentum;
  int64_t own_begin = -1, own_end = -1;
  void step(int64_t begin, int64_t end, float lr) {
    sgd_update(device, SgdStep{lr, 0, 0, false, 1, false}, params + begin, grads + begin, momentum + begin,
               end - begin);
  }
  ShardUpdate make(bool norms) {
    ShardUpdate u;
    u.gather = params;
    if (!norms) {
      u.apply = [this](int64_t b, int64_t n) { step(b, b + n, 0.5f); };
      return u;
    }
    u.apply = [this](int64_t b, int64_t n) {
      if (own_begin < 0) own_begin = b;
      own_end = b + n;
    };
    u.finish = [this](int64_t, int64_t) {
      double sq = own_begin < 0 ? 0 : sum_of_squares(device, grads + own_begin, own_end - own_begin);
      MPI_Allreduce(MPI_IN_PLACE, &sq, 1, MPI_DOUBLE, MPI_SUM, World::get().comm());
      if (own_begin >= 0)
        step(own_begin, own_end, std::ldexp(1.0f, -static_cast<int>(std::ceil(std::log2(1 + std::sqrt(sq))))));
      own_begin = own_end = -1;
    };
    return u;
  }
};

// Note [Sharded update] on the GPU: each rank's update runs as kernels on the communication
// stream (Note [Second stream]) between the reduce-scatter that finishes its part and the
// all-gather that shares the updated parameters. The flat and the two-level device rings against
// the CPU's over the same ranks, bit for bit, at every wire type.
TEST_F(DeviceRingTest, ShardedUpdateOnTheCommunicationStreamMatchesTheCpuRing) {
  const World& w = World::get();
  for (int k : fake_host_sizes(w.size()))
    for (Wire wire : {Wire::kFp32, Wire::kBf16})
      for (bool norms : {false, true}) {
        const bool flat = k == w.size();  // one "host": the flat ring instead
        std::unique_ptr<Collective> cpu, gpu;
        TwoLevelComms comms;
        if (flat) {
          cpu = make_collective({Allreduce::kRing, TransportChoice::kMpi, "", Hierarchy::kFlat, wire}, w.comm(),
                                test_stall());
          gpu = make_device_ring(std::make_unique<StagedExchange>(), wire, test_stall());
        } else {
          cpu = make_fake_two_level(k, "mpi", wire);
          comms = split_two_level(w.comm(), block_layout(w.size(), k));
          gpu = make_device_two_level_ring(std::make_unique<StagedExchange>(comms.local),
                                           std::make_unique<StagedExchange>(comms.cross), comms.place, wire,
                                           test_stall());
        }
        for (int64_t count : {int64_t{1}, int64_t{w.size() + 1}, int64_t{(1 << 18) + 3}}) {
          const std::string what = str_cat(gpu->describe(), ", count ", count, norms ? ", with norms" : "");
          const auto n = static_cast<size_t>(count), bytes = sizeof(float) * n;
          std::vector<float> grads = contribution(count, w.rank()), params(n, 1.0f), momentum(n, 0.0f);
          std::shared_ptr<void> g = allocate_zeroed(Device::kCuda, bytes), p = allocate_zeroed(Device::kCuda, bytes),
                                v = allocate_zeroed(Device::kCuda, bytes);
          copy_bytes(g.get(), Device::kCuda, grads.data(), Device::kCpu, bytes);
          copy_bytes(p.get(), Device::kCuda, params.data(), Device::kCpu, bytes);
          SgdHalves on_gpu{Device::kCuda, static_cast<float*>(p.get()), static_cast<float*>(g.get()),
                           static_cast<float*>(v.get())};
          gpu->average(on_gpu.grads, count, {}, on_gpu.make(norms));
          gpu->stream_order()->join_compute();
          std::vector<float> from_gpu(n);
          copy_bytes(from_gpu.data(), Device::kCpu, p.get(), Device::kCuda, bytes);  // on the compute stream
          SgdHalves on_cpu{Device::kCpu, params.data(), grads.data(), momentum.data()};
          cpu->average(grads.data(), count, {}, on_cpu.make(norms));
          const size_t at = first_difference(from_gpu, params);
          EXPECT_EQ(at, n) << what << ": parameter " << at << " is " << from_gpu[at] << " on the GPU, " << params[at]
                           << " on the CPU";
        }
        gpu.reset();
        if (!flat) {
          MPI_Comm local = comms.local, cross = comms.cross;
          MPI_Comm_free(&local);
          MPI_Comm_free(&cross);
        }
      }
}

TEST_F(DeviceRingTest, RingOverNcclAndNcclAllReduceGiveTheAverage) {
  if (!one_gpu_per_rank())
    GTEST_SKIP() << "NCCL takes one GPU per rank; " << World::get().local_size() << " ranks share " << gpus_
                 << " GPU(s) on this host";
  const World& w = World::get();
  // The two-level ring over NCCL on each rank's own fake host (RINGTRAIN_FAKE_HOST_RANKS=1): NCCL
  // communicators inside each host and across, as the trainer makes them.
  setenv("RINGTRAIN_FAKE_HOST_RANKS", "1", 1);
  auto two_level = make_device_collective({.hierarchy = Hierarchy::kTwoLevel}, w.comm(), test_stall());
  unsetenv("RINGTRAIN_FAKE_HOST_RANKS");
  std::vector<std::unique_ptr<Collective>> collectives;
  for (const char* algorithm : {"ring", "nccl"})
    collectives.push_back(
        make_device_collective({.allreduce = *enum_named<Allreduce>(algorithm)}, w.comm(), test_stall()));
  collectives.push_back(std::move(two_level));
  for (const auto& c : collectives) {
    for (int64_t count : {int64_t{1}, int64_t{w.size() + 1}, int64_t{(1 << 20) + 5}}) {
      const std::vector<float> out = average_on_gpu(*c, contribution(count, w.rank()));
      // Rank r adds 0.37 (r + 1) to a pattern shared by all: the average adds 0.37 (world + 1) / 2.
      const std::vector<float> pattern = contribution(count, -1);
      const double offset = 0.37 * (w.size() + 1) / 2.0;
      size_t bad = 0;
      for (size_t i = 0; i < out.size(); ++i) {
        const double want = pattern[i] + offset;
        if (std::abs(out[i] - want) > 1e-5 * (1 + std::abs(want))) ++bad;
      }
      EXPECT_EQ(bad, 0u) << c->describe() << ", count " << count;
    }
  }
}

// At one rank the ring has no steps, so this is what exercises NCCL's send and receive: rank 0
// sends to and receives from itself.
TEST_F(DeviceRingTest, NcclExchangeMovesBytesToItsNeighbour) {
  if (!one_gpu_per_rank()) GTEST_SKIP() << "NCCL takes one GPU per rank";
  const World& w = World::get();
  auto x = make_nccl_exchange(w.comm());
  const std::vector<float> mine = contribution(4099, w.rank());
  const size_t bytes = sizeof(float) * mine.size();
  std::shared_ptr<void> send = allocate_zeroed(Device::kCuda, bytes), recv = allocate_zeroed(Device::kCuda, bytes);
  copy_bytes(send.get(), Device::kCuda, mine.data(), Device::kCpu, bytes);
  cudaStream_t s;
  CUDA_OK(cudaStreamCreate(&s));
  x->exchange(send.get(), bytes, (w.rank() + 1) % w.size(), recv.get(), bytes, (w.rank() + w.size() - 1) % w.size(), s);
  CUDA_OK(cudaStreamSynchronize(s));
  CUDA_OK(cudaStreamDestroy(s));
  std::vector<float> got(mine.size());
  copy_bytes(got.data(), Device::kCpu, recv.get(), Device::kCuda, bytes);
  EXPECT_EQ(got, contribution(4099, (w.rank() + w.size() - 1) % w.size()));
}

// The trainer's wiring (Note [Device collectives]): a GradReducer over the device ring, its
// gradients written by the compute stream only after a host function has slept 200 ms, each
// parameter reported ready right after its write is enqueued, long before it lands. Every bucket
// must average the written values (its stream waited for the bucket's mark), and a copy on the
// compute stream after finish() must see the averages. At one rank the ring has no steps, so this
// needs several.
TEST_F(DeviceRingTest, GradReducerBucketsWaitForTheComputeStream) {
  const World& w = World::get();
  if (w.size() == 1) GTEST_SKIP() << "needs several ranks (mpirun -np 3 runs it)";
  const std::vector<ParamExtent> params = {{0, 1000}, {1024, 70001}, {71040, 5}, {71168, 30000}};
  const std::vector<Bucket> buckets = plan_buckets(params, 2000, 80000);
  ASSERT_GE(buckets.size(), 2u);
  const int64_t count = params.back().offset + params.back().count;
  const size_t bytes = sizeof(float) * static_cast<size_t>(count);
  std::shared_ptr<void> arena = allocate_zeroed(Device::kCuda, bytes);
  synchronize(Device::kCuda);
  GradReducer reducer(static_cast<float*>(arena.get()), params, buckets,
                      make_device_ring(std::make_unique<StagedExchange>(), Wire::kFp32, test_stall()), /*overlap=*/true,
                      nullptr);
  const std::vector<float> mine = contribution(count, w.rank());
  const cudaStream_t compute = cuda::context().stream;
  reducer.begin_step(0);
  CUDA_OK(cudaLaunchHostFunc(
      compute, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr));
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamExtent& p = params[i];
    CUDA_OK(cudaMemcpyAsync(static_cast<float*>(arena.get()) + p.offset, mine.data() + p.offset,
                            sizeof(float) * static_cast<size_t>(p.count), cudaMemcpyHostToDevice, compute));
    reducer.on_grad_ready(i);
  }
  reducer.finish();
  std::vector<float> out(mine.size());
  copy_bytes(out.data(), Device::kCpu, arena.get(), Device::kCuda, bytes);
  MpiTransport transport(w.comm(), test_stall());
  RingExecutor cpu_ring = transport_ring(transport);
  std::vector<float> want(mine.size(), 0.0f);  // gaps between parameters stay zero
  for (const ParamExtent& p : params)
    std::copy(mine.begin() + p.offset, mine.begin() + p.offset + p.count, want.begin() + p.offset);
  for (const Bucket& b : buckets) cpu_ring.run(want.data() + b.offset, b.count, {});
  const size_t at = first_difference(out, want);
  EXPECT_EQ(at, out.size()) << "element " << at << " is " << out[at] << ", the CPU ring says " << want[at];
}

// One side of the sharded-update comparison: LeNet planned on `device` with `weights`, the trainer's
// optimizer, and a GradReducer over `collective` with the sharded update make_sharded_update gives.
struct ShardedSide {
  std::unique_ptr<Graph> graph;
  std::unique_ptr<Optimizer> optimizer;
  std::unique_ptr<GradReducer> reducer;
  double lr = 0;
  int64_t step_under_way = 0;  // the sharded update names it in its messages

  ShardedSide(Device device, const std::vector<float>* weights, OptimizerKind kind, double rate,
              std::unique_ptr<Collective> collective) {
    const World& w = World::get();
    graph = build_model("lenet", ModelOptions{});
    graph->plan(8, device);
    if (weights)
      copy_bytes(graph->param_arena(), device, weights->data(), Device::kCpu, sizeof(float) * weights->size());
    DistConfig dist;
    dist.bucket_mb = dist.first_bucket_mb = 0.05;  // several buckets, each cut between the ranks
    GradientBuckets plan = plan_gradient_buckets(*graph, dist);
    OptimizerOptions options;
    options.momentum = 0.9;
    options.weight_decay = 5e-4;
    optimizer = make_optimizer(kind, *graph, options);
    cut_at_collective_parts(*optimizer, plan.buckets, *collective);
    lr = rate;
    std::optional<ShardUpdate> update =
        make_sharded_update(*optimizer, *graph, *collective,
                            /*whole_step_first=*/false, w, test_stall(), &lr, &step_under_way);
    RT_CHECK(update.has_value(), "the ring shards the update");
    reducer = std::make_unique<GradReducer>(graph->grad_arena(), std::move(plan.params), std::move(plan.buckets),
                                            std::move(collective), /*overlap=*/true, nullptr, std::move(update));
  }
  // One step on these gradients: every parameter reported ready in arena order, then finish().
  void step(int64_t step, const std::vector<float>& grads) {
    copy_bytes(graph->grad_arena(), graph->device(), grads.data(), Device::kCpu, sizeof(float) * grads.size());
    step_under_way = step;
    reducer->begin_step(step);
    for (size_t i = 0; i < graph->params().size(); ++i) reducer->on_grad_ready(i);
    reducer->finish();
  }
  std::vector<float> parameters() const {
    std::vector<float> out(static_cast<size_t>(graph->arena_floats()));
    copy_bytes(out.data(), Device::kCpu, graph->param_arena(), graph->device(), sizeof(float) * out.size());
    return out;
  }
};

// Note [Sharded update] with the trainer's own pieces, where the tests above use a stand-in update:
// the real Sgd and Lars through make_sharded_update (LARS's PartUpdate summing ShardNorms' pieces
// across ranks on the communication thread), their kernels and LARS's agreed sums of squares on the
// communication stream, on parameters planned on the GPU; two steps against the same over the CPU
// ring. Their arithmetic differs from the CPU's by fused multiply-adds and summation order only.
TEST_F(DeviceRingTest, TrainersShardedSgdAndLarsOnTheGpuMatchTheCpu) {
  const World& w = World::get();
  for (OptimizerKind kind : {OptimizerKind::kSgd, OptimizerKind::kLars}) {
    const double rate = kind == OptimizerKind::kLars ? 2.0 : 0.01;
    ShardedSide cpu(Device::kCpu, nullptr, kind, rate,
                    make_collective({Allreduce::kRing, TransportChoice::kMpi, "", Hierarchy::kFlat, Wire::kFp32},
                                    w.comm(), test_stall()));
    const std::vector<float> start = cpu.parameters();
    ShardedSide gpu(Device::kCuda, &start, kind, rate,
                    make_device_ring(std::make_unique<StagedExchange>(), Wire::kFp32, test_stall()));
    EXPECT_GT(cpu.reducer->buckets().size(), 1u);
    for (int64_t s = 0; s < 2; ++s) {
      const std::vector<float> grads = contribution(cpu.graph->arena_floats(), w.rank() + static_cast<int>(s));
      cpu.step(s, grads);
      gpu.step(s, grads);
    }
    const std::vector<float> want = cpu.parameters(), got = gpu.parameters();
    double diff = 0, norm = 0, moved = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      diff += (double{got[i]} - want[i]) * (double{got[i]} - want[i]);
      norm += double{want[i]} * want[i];
      moved = std::max(moved, std::abs(double{want[i]} - start[i]));
    }
    const std::string what = kind == OptimizerKind::kLars ? "LARS" : "SGD";
    EXPECT_GT(moved, 1e-4) << what << ": the parameters did not move";
    EXPECT_LE(std::sqrt(diff / norm), 1e-6) << what << ": the GPU's parameters differ from the CPU's by "
                                            << std::sqrt(diff / norm) << " (relative L2) after 2 steps";
  }
}

}  // namespace
}  // namespace rt
