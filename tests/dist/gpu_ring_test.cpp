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
// - PowerSGD on the GPU (Note [PowerSGD on the GPU] in dist/powersgd_buckets.h): the kernels whose
//   bits every rank shares against the host loops, bit for bit; and a GradReducer over the device
//   ring with the GPU's compression against one over the CPU ring with the host's, three steps,
//   the replicas' bits compared across ranks.
// Without a usable GPU every test skips, saying why.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "app/gradient_buckets.h"
#include "app/sharded_update.h"
#include "dist/collective.h"
#include "dist/cuda/device_collective.h"
#include "dist/cuda/device_powersgd.h"
#include "dist/grad_reducer.h"
#include "dist/mpi_transport.h"
#include "dist/powersgd_buckets.h"
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

// Gradients that land late: `values` in page-locked memory (returned; the caller copies from it),
// behind a 200 ms sleep queued on the compute stream. From pageable memory a copy may wait on the
// host for the sleep, and the gradients would be in place before the reducer is told.
std::shared_ptr<void> stage_behind_a_sleep(const std::vector<float>& values) {
  const size_t bytes = sizeof(float) * values.size();
  std::shared_ptr<void> staged = allocate_host_staging(Device::kCuda, bytes);
  std::memcpy(staged.get(), values.data(), bytes);
  EXPECT_EQ(
      cudaLaunchHostFunc(
          cuda::context().stream, [](void*) { std::this_thread::sleep_for(std::chrono::milliseconds(200)); }, nullptr),
      cudaSuccess);
  return staged;
}

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
  const std::shared_ptr<void> staged = stage_behind_a_sleep(mine);
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamExtent& p = params[i];
    CUDA_OK(cudaMemcpyAsync(static_cast<float*>(arena.get()) + p.offset,
                            static_cast<const float*>(staged.get()) + p.offset,
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

// Float vectors on the GPU and back.
std::shared_ptr<void> on_gpu(const std::vector<float>& host) {
  const size_t bytes = sizeof(float) * host.size();
  std::shared_ptr<void> gpu = allocate_zeroed(Device::kCuda, bytes);
  copy_bytes(gpu.get(), Device::kCuda, host.data(), Device::kCpu, bytes);
  return gpu;
}
std::vector<float> on_host(const std::shared_ptr<void>& gpu, size_t floats) {
  std::vector<float> host(floats);
  copy_bytes(host.data(), Device::kCpu, gpu.get(), Device::kCuda, sizeof(float) * floats);
  return host;
}
std::vector<float> normal_floats(size_t count, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(count);
  for (float& x : v) x = normal(rng);
  return v;
}

// The orthonormalization and P Q^T decide what every rank applies: on the GPU they must give the
// host's bits on the same inputs, at sizes that cross agreed_sum's chunks and a column that is zero.
TEST_F(DeviceRingTest, PowerSgdAgreedKernelsMatchTheHostLoopsBitForBit) {
  for (const auto& [rows, k] : {std::pair<int64_t, int64_t>{1000, 4}, {(1 << 16) * 2 + 3, 3}, {5, 1}, {300, 2}}) {
    std::vector<float> a = normal_floats(static_cast<size_t>(rows * k), static_cast<unsigned>(rows));
    if (rows == 300) std::fill(a.begin() + rows, a.end(), 0.0f);  // the second column
    const std::shared_ptr<void> gpu = on_gpu(a);
    powersgd_kernels::orthonormalize_columns(static_cast<float*>(gpu.get()), rows, k);
    orthonormalize_columns(a.data(), rows, k);
    const std::vector<float> back = on_host(gpu, a.size());
    const size_t at = first_difference(back, a);
    EXPECT_EQ(at, a.size()) << rows << " x " << k << ": element " << at << " is " << back[at] << " on the GPU, "
                            << a[at] << " on the host";
  }
  const PowerSgdMatrix x{37, 1005, 4};
  const std::vector<float> p = normal_floats(static_cast<size_t>(x.k * x.n), 1),
                           q = normal_floats(static_cast<size_t>(x.k * x.m), 2);
  std::vector<float> error = normal_floats(static_cast<size_t>(x.n * x.m), 3), grad(error.size());
  const std::shared_ptr<void> p_gpu = on_gpu(p), q_gpu = on_gpu(q), error_gpu = on_gpu(error), grad_gpu = on_gpu(grad);
  const auto [gpu_error_squares, gpu_m_squares] =
      powersgd_kernels::decompress(x, static_cast<const float*>(p_gpu.get()), static_cast<const float*>(q_gpu.get()),
                                   static_cast<float*>(grad_gpu.get()), static_cast<float*>(error_gpu.get()));
  const auto [error_squares, m_squares] = x.decompress(p.data(), q.data(), grad.data(), error.data());
  EXPECT_EQ(first_difference(on_host(grad_gpu, grad.size()), grad), grad.size()) << "P Q^T";
  EXPECT_EQ(first_difference(on_host(error_gpu, error.size()), error), error.size()) << "the error";
  EXPECT_NEAR(gpu_error_squares, error_squares, 1e-5 * error_squares);  // a metric: any order
  EXPECT_NEAR(gpu_m_squares, m_squares, 1e-5 * m_squares);
}

// One side of the PowerSGD comparison: a GradReducer over `collective` with `compression`, on an
// arena on `device`.
struct CompressedSide {
  Device device;
  int64_t floats;
  std::shared_ptr<void> arena;
  std::unique_ptr<GradReducer> reducer;

  CompressedSide(Device d, const std::vector<ParamExtent>& params, const std::vector<Bucket>& buckets,
                 std::unique_ptr<Collective> collective, std::unique_ptr<PowerSgdBuckets> compression)
      : device(d), floats(params.back().offset + params.back().count) {
    arena = allocate_zeroed(device, sizeof(float) * static_cast<size_t>(floats));
    synchronize(device);
    reducer = std::make_unique<GradReducer>(static_cast<float*>(arena.get()), params, buckets, std::move(collective),
                                            /*overlap=*/true, nullptr, std::nullopt, std::move(compression));
  }
  // On the GPU the gradients land late (as in GradReducerBucketsWaitForTheComputeStream): the
  // compression's first kernel must wait for them on the GPU.
  std::vector<float> step(int64_t step, const std::vector<float>& grads) {
    reducer->begin_step(step);
    const size_t bytes = sizeof(float) * grads.size();
    std::shared_ptr<void> staged;  // held past the copy out below, which waits for the copy from it
    if (device == Device::kCuda) {
      staged = stage_behind_a_sleep(grads);
      EXPECT_EQ(cudaMemcpyAsync(arena.get(), staged.get(), bytes, cudaMemcpyHostToDevice, cuda::context().stream),
                cudaSuccess);
    } else {
      copy_bytes(arena.get(), device, grads.data(), Device::kCpu, bytes);
    }
    for (size_t i = 0; i < reducer->buckets().back().end_param; ++i) reducer->on_grad_ready(i);
    reducer->finish();
    std::vector<float> out(grads.size());
    copy_bytes(out.data(), Device::kCpu, arena.get(), device, sizeof(float) * out.size());
    return out;
  }
};

// PowerSGD through the trainer's GradReducer on the GPU (cuBLAS's local products, the kernels on
// the communication stream) against the host's over the CPU ring: three steps from the same first
// Q's, with error feedback and warm start. The local products sum in another order, so the two
// agree to float32 rounding, not bit for bit; across ranks the GPU's results must be identical.
TEST_F(DeviceRingTest, PowerSgdOnTheGpuAveragesAsTheHostDoes) {
  const World& w = World::get();
  // Two compressed weights (64 x 300 and 32 x 64) with uncompressed biases, in two buckets.
  const std::vector<ParamExtent> params = {{0, 64 * 300}, {19200, 64}, {19264, 32 * 64}, {21312, 32}};
  const std::vector<std::vector<int64_t>> shapes = {{64, 3, 10, 10}, {64}, {32, 64}, {32}};
  const std::vector<Bucket> buckets = plan_buckets(params, 20000, 20000);
  ASSERT_EQ(buckets.size(), 2u);
  const PowerSgdOptions options{4, 2, 0, 7};
  CompressedSide gpu(Device::kCuda, params, buckets,
                     make_device_ring(std::make_unique<StagedExchange>(), Wire::kFp32, test_stall()),
                     make_device_powersgd(params, shapes, buckets, options));
  CompressedSide cpu(Device::kCpu, params, buckets, make_collective(CollectiveSpec{}, w.comm(), test_stall()),
                     std::make_unique<PowerSgdBuckets>(params, shapes, buckets, options));
  for (int64_t s = 0; s < 3; ++s) {
    const std::vector<float> grads = normal_floats(static_cast<size_t>(gpu.floats), 100 + 10 * w.rank() + s);
    const std::vector<float> on_gpu_out = gpu.step(s, grads), on_cpu_out = cpu.step(s, grads);
    double scale = 0, worst = 0;
    for (size_t i = 0; i < grads.size(); ++i) {
      scale = std::max(scale, std::abs(double{on_cpu_out[i]}));
      worst = std::max(worst, std::abs(double{on_gpu_out[i]} - on_cpu_out[i]));
    }
    EXPECT_LT(worst, 1e-4 * scale) << "step " << s;
    // Every rank applies the same bits.
    uint64_t hash = 1469598103934665603ull;
    for (float x : on_gpu_out) {
      uint32_t bits;
      std::memcpy(&bits, &x, sizeof bits);
      hash = (hash ^ bits) * 1099511628211ull;
    }
    std::vector<uint64_t> all(static_cast<size_t>(w.size()));
    MPI_Allgather(&hash, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, w.comm());
    for (int r = 0; r < w.size(); ++r) EXPECT_EQ(all[static_cast<size_t>(r)], all[0]) << "rank " << r << ", step " << s;
  }
  // The state a save writes: the GPU's errors and Q's brought to the host, near the host's.
  dynamic_cast<PowerSgdBuckets&>(gpu.reducer->hook()).state_to_host();
  const auto& on_gpu_state = dynamic_cast<PowerSgdBuckets&>(gpu.reducer->hook()).tensors();
  const auto& on_cpu_state = dynamic_cast<PowerSgdBuckets&>(cpu.reducer->hook()).tensors();
  ASSERT_EQ(on_gpu_state.size(), 2u);
  for (size_t t = 0; t < on_gpu_state.size(); ++t)
    for (const auto& [a, b] :
         {std::pair{&on_gpu_state[t].q, &on_cpu_state[t].q}, {&on_gpu_state[t].error, &on_cpu_state[t].error}}) {
      ASSERT_EQ(a->size(), b->size());
      double scale = 0, worst = 0;
      for (size_t i = 0; i < a->size(); ++i) {
        scale = std::max(scale, std::abs(double{(*b)[i]}));
        worst = std::max(worst, std::abs(double{(*a)[i]} - (*b)[i]));
      }
      EXPECT_LT(worst, 1e-3 * scale) << "tensor " << t;
    }
  EXPECT_NEAR(dynamic_cast<PowerSgdBuckets&>(gpu.reducer->hook()).error_relative_norm(),
              dynamic_cast<PowerSgdBuckets&>(cpu.reducer->hook()).error_relative_norm(), 1e-4);
  // A resume: a fresh GPU compression given that state goes on with the same bits.
  std::unique_ptr<PowerSgdBuckets> fresh = make_device_powersgd(params, shapes, buckets, options);
  for (size_t t = 0; t < on_gpu_state.size(); ++t) {
    fresh->tensors()[t].q = on_gpu_state[t].q;
    fresh->tensors()[t].error = on_gpu_state[t].error;
  }
  fresh->state_from_host();
  CompressedSide resumed(Device::kCuda, params, buckets,
                         make_device_ring(std::make_unique<StagedExchange>(), Wire::kFp32, test_stall()),
                         std::move(fresh));
  const std::vector<float> grads = normal_floats(static_cast<size_t>(gpu.floats), 200 + w.rank());
  const std::vector<float> going_on = gpu.step(3, grads), after_resume = resumed.step(3, grads);
  const size_t at = first_difference(after_resume, going_on);
  EXPECT_EQ(at, going_on.size()) << "element " << at << " is " << after_resume[at] << " after the resume, "
                                 << going_on[at] << " without it";
}

}  // namespace
}  // namespace rt
