#include "dist/cuda/device_collective.h"

#include <nccl.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "base/check.h"
#include "dist/cuda/exchange_primitives.cuh"
#include "dist/cuda/nccl_comm.cuh"
#include "dist/ring_schedule.h"
#include "dist/stall_watch.h"
#include "dist/ring_executor.h"
#include "dist/two_level_collective.h"
#include "dist/two_level_ring.h"
#include "nn/cuda/runtime.h"

namespace rt {
namespace {

class NcclExchange final : public NcclComm<DeviceExchange> {
 public:
  using NcclComm::NcclComm;
  std::string describe() const override { return "NCCL point-to-point"; }
  void warm_up(void* stream) override {
    warm_.grow_to(8);
    warm_up_ring(warm_.as<char>(), warm_.as<char>() + 4, stream);
  }
  void exchange(const void* send, size_t send_bytes, int next, void* recv, size_t recv_bytes, int prev,
                void* stream) override {
    // One group: NCCL runs the send and the receive together, so no rank's send waits for a
    // receive its neighbour has not reached. A chunk is empty on both of its ends or on neither.
    // ncclGroupEnd is where NCCL connects to a peer it has not met, waiting for it.
    const auto s = static_cast<cudaStream_t>(stream);
    RT_NCCL_GATED(gate(), kEnqueues, ncclGroupStart());
    if (send_bytes > 0) RT_NCCL_GATED(gate(), kEnqueues, ncclSend(send, send_bytes, ncclUint8, next, comm_, s));
    if (recv_bytes > 0) RT_NCCL_GATED(gate(), kEnqueues, ncclRecv(recv, recv_bytes, ncclUint8, prev, comm_, s));
    RT_NCCL_GATED(gate(), kMayBlock, ncclGroupEnd());
  }
};

// The communication stream and the events that order it against the compute stream (Note
// [Device collectives]), and the watchdog over its work (Note [GPU watchdog]).
class DeviceCollective : public Collective, public StreamOrder {
 public:
  explicit DeviceCollective(StallPolicy stall) : stall_(std::move(stall)) {
    const cuda::Context& c = cuda::context();
    device_ = c.device;
    compute_ = c.stream;
    RT_CU(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    RT_CU(cudaEventCreateWithFlags(&joined_, cudaEventDisableTiming));
    RT_CU(cudaEventCreateWithFlags(&now_, cudaEventDisableTiming));
  }
  ~DeviceCollective() override {
    watch_.reset();
    cudaStreamSynchronize(stream_);
    for (cudaEvent_t e : ready_) cudaEventDestroy(e);
    for (cudaEvent_t e : done_) cudaEventDestroy(e);
    cudaEventDestroy(joined_);
    cudaEventDestroy(now_);
    cudaStreamDestroy(stream_);
  }
  void prepare(size_t buckets, int64_t largest_bucket_floats) override {
    while (ready_.size() < buckets) {
      ready_.emplace_back();
      RT_CU(cudaEventCreateWithFlags(&ready_.back(), cudaEventDisableTiming));
    }
    reserve(largest_bucket_floats);
  }
  void mark_ready(int bucket) override { RT_CU(cudaEventRecord(ready_.at(static_cast<size_t>(bucket)), compute_)); }
  void join_compute() override {
    RT_CU(cudaEventRecord(joined_, stream_));
    RT_CU(cudaStreamWaitEvent(compute_, joined_, 0));
  }
  StreamOrder* stream_order() override { return this; }
  void* communication_stream(const WaitContext& context) override {
    wait_for_gradients(context);
    return stream_;
  }

 protected:
  // The phases of a bucket's work, at most (the two-level ring's three).
  static constexpr int kPhases = 3;

  // Buffers for buckets of up to `floats`, allocated before the step loop.
  virtual void reserve(int64_t floats) { (void)floats; }
  // On the communication thread, before a bucket's work: this thread works on the rank's GPU, and
  // the communication stream waits for the bucket's gradients (mark_ready), or, for a caller that
  // marks nothing, for everything enqueued on the compute stream so far.
  void wait_for_gradients(const WaitContext& context) {
    RT_CU(cudaSetDevice(device_));
    const auto b = static_cast<size_t>(context.bucket);
    if (b < ready_.size()) {
      RT_CU(cudaStreamWaitEvent(stream_, ready_[b], 0));
    } else {
      RT_CU(cudaEventRecord(now_, compute_));
      RT_CU(cudaStreamWaitEvent(stream_, now_, 0));
    }
  }

  // Starts the watchdog over the subclass's communicators, then warms their connections up
  // (DeviceWatch::warm_up). Call last in the subclass's constructor, and stop_watching() first in
  // its destructor: the watchdog may abort the communicators, and asks them for errors, until it
  // stops. A warm-up that throws stops it here, since the subclass's destructor then never runs
  // and its members, the communicators, are destroyed before this class's destructor would stop
  // it.
  void start_watching(std::vector<DeviceWatch::Ring> rings) {
    watch_ = std::make_unique<DeviceWatch>(stall_, std::move(rings),
                                           [this](int bucket, int phase) { return mark_done(bucket, phase); });
    try {
      cudaError_t synced = cudaSuccess;
      watch_->warm_up(stream_, [&] { synced = cudaStreamSynchronize(stream_); });
      RT_CU(synced);
    } catch (...) {
      stop_watching();
      throw;
    }
  }
  void stop_watching() { watch_.reset(); }
  // On the communication thread: a bucket's work, phase by phase, each registered with the
  // watchdog before NCCL is called (it may block there, connecting).
  void run_watched(const WaitContext& context, const std::vector<DeviceWatch::Phase>& phases) {
    watch_->run(context, phases);
  }
  const StallPolicy& stall() const { return stall_; }
  // A sharded update's kernels go to the communication stream (Note [Second stream]), between
  // the reduce-scatter that finishes their part and the all-gather that sends it.
  void run_watched_updating(const WaitContext& context, const std::vector<DeviceWatch::Phase>& phases) {
    cuda::StreamScope on_communication_stream(stream_);
    run_watched(context, phases);
  }

  int device_ = 0;
  cudaStream_t compute_ = nullptr, stream_ = nullptr;

 private:
  // After the work of a phase of a bucket (bucket -1: the set-up's) is enqueued: an event records
  // its end, and the watchdog's thread queries it.
  std::function<bool()> mark_done(int bucket, int phase) {
    const auto i = static_cast<size_t>((bucket + 1) * kPhases + phase);
    while (done_.size() <= i) {
      done_.emplace_back();
      RT_CU(cudaEventCreateWithFlags(&done_.back(), cudaEventDisableTiming));
    }
    const cudaEvent_t done = done_[i];
    RT_CU(cudaEventRecord(done, stream_));
    return [done, device = device_] {
      cudaSetDevice(device);  // the watchdog's thread
      return cudaEventQuery(done) != cudaErrorNotReady;
    };
  }

  StallPolicy stall_;
  std::vector<cudaEvent_t> done_;   // per bucket and phase: its work has finished
  std::vector<cudaEvent_t> ready_;  // per bucket
  cudaEvent_t joined_ = nullptr, now_ = nullptr;
  std::unique_ptr<DeviceWatch> watch_;
};

// Note [Ring schedule] on the GPU: the ring executor over ExchangePrimitives on the
// communication stream.
class DeviceRing final : public DeviceCollective {
 public:
  DeviceRing(std::unique_ptr<DeviceExchange> exchange, Wire wire, StallPolicy stall)
      : DeviceCollective(std::move(stall)),
        x_(std::move(exchange)),
        wire_(wire),
        primitives_(new GpuExchangePrimitives(*x_, stream_)),
        ring_(std::unique_ptr<RingPrimitives>(primitives_), wire) {
    start_watching({DeviceWatch::Ring{x_.get(), "the ring's exchange"}});
  }
  ~DeviceRing() override { stop_watching(); }
  std::string describe() const override {
    return "ringtrain's ring over " + x_->describe() +
           (wire_ == Wire::kFp32 ? "" : str_cat(", ", name_of(wire_), " on the wire"));
  }
  std::optional<std::vector<int64_t>> shard_cuts(int64_t count) const override {
    std::vector<int64_t> cuts;
    chunk_cuts(count, x_->world(), 0, cuts);
    return cuts;
  }
  void gather_updated(float* data, int64_t count, const WaitContext& context) override {
    wait_for_gradients(context);
    run_watched(context, {{0, [&] { ring_.gather(data, count, context); }}});
  }

 protected:
  PhaseSwitch reduce(float* data, int64_t count, const WaitContext& context, const ShardUpdate* update) override {
    wait_for_gradients(context);
    if (!update) {
      run_watched(context, {{0, [&] { ring_.run(data, count, context); }}});
    } else {
      run_watched_updating(context, {{0, [&] { ring_.run(data, count, context, *update); }}});
    }
    return std::nullopt;  // enqueued, not done: the GPU's phases are not the host's to time
  }
  void reserve(int64_t floats) override { primitives_->reserve(floats, wire_); }

 private:
  std::unique_ptr<DeviceExchange> x_;
  Wire wire_;
  GpuExchangePrimitives* primitives_;  // owned by ring_
  RingExecutor ring_;
};

// Note [Two-level ring] on the GPU: the composition of two_level_ring.h over two exchanges, NCCL
// inside a host (NVLink) and NCCL across hosts (the network), all on the communication stream.
class DeviceTwoLevelRing final : public DeviceCollective {
 public:
  DeviceTwoLevelRing(std::unique_ptr<DeviceExchange> local, std::unique_ptr<DeviceExchange> cross, TwoLevelPlace place,
                     Wire wire, StallPolicy stall)
      : DeviceCollective(std::move(stall)),
        local_(std::move(local)),
        cross_(std::move(cross)),
        wire_(wire),
        inside_p_(new GpuExchangePrimitives(*local_, stream_)),
        across_p_(new GpuExchangePrimitives(*cross_, stream_)),
        inside_(std::unique_ptr<RingPrimitives>(inside_p_), Wire::kFp32, 1.0f),
        across_(std::unique_ptr<RingPrimitives>(across_p_), wire,
                1.0f / static_cast<float>(place.local_ring.size() * place.cross_ring.size())),
        two_(inside_, across_, place) {
    RT_CHECK(local_->world() == static_cast<int>(place.local_ring.size()) &&
                 cross_->world() == static_cast<int>(place.cross_ring.size()),
             "the two-level ring's exchanges do not match its place in the host layout");
    // Each ring names its own neighbours as world ranks. The ring across hosts waits longer, so
    // that the host with a stuck rank reports first (Note [GPU watchdog]).
    const std::string host = str_cat(" inside host ", place.cross, " (ranks ", place.local_ring.front(), " to ",
                                     place.local_ring.back(), ")");
    start_watching({DeviceWatch::Ring{local_.get(), "the two-level ring's exchange" + host, place.local_ring},
                    DeviceWatch::Ring{cross_.get(), "the two-level ring's exchange across hosts", place.cross_ring,
                                      true, across_hosts_abort_s(this->stall().abort_s)}});
  }
  ~DeviceTwoLevelRing() override { stop_watching(); }
  std::string describe() const override {
    const TwoLevelPlace& place = two_.place();
    return str_cat("ringtrain's two-level ring (", place.cross_ring.size(), " hosts of ", place.local_ring.size(), ": ",
                   local_->describe(), " inside a host, ", cross_->describe(), " between hosts",
                   wire_ == Wire::kFp32 ? "" : str_cat(", ", name_of(wire_), " on the wire between them"), ")");
  }
  std::optional<std::vector<int64_t>> shard_cuts(int64_t count) const override { return two_.shard_cuts(count); }
  void gather_updated(float* data, int64_t count, const WaitContext& context) override {
    wait_for_gradients(context);
    run_watched(context, watched(two_.gather_updated(data, count, context)));
  }

 protected:
  // Three pieces for the watchdog: the reduce-scatter inside the host, the ring across hosts,
  // the all-gather inside the host.
  PhaseSwitch reduce(float* data, int64_t count, const WaitContext& context, const ShardUpdate* update) override {
    wait_for_gradients(context);
    if (count == 0 && !update) return std::nullopt;
    const std::vector<DeviceWatch::Phase> phases = watched(two_.average(data, count, context, update));
    if (update)
      run_watched_updating(context, phases);
    else
      run_watched(context, phases);
    return std::nullopt;
  }
  void reserve(int64_t floats) override {
    inside_p_->reserve(floats, Wire::kFp32);
    across_p_->reserve(floats / local_->world() + 1, wire_);
  }

 private:
  static std::vector<DeviceWatch::Phase> watched(std::vector<RingPhase> phases) {
    std::vector<DeviceWatch::Phase> out;
    for (RingPhase& p : phases) out.push_back({static_cast<size_t>(p.ring), std::move(p.run)});
    return out;
  }

  std::unique_ptr<DeviceExchange> local_, cross_;
  Wire wire_;
  GpuExchangePrimitives *inside_p_, *across_p_;  // owned by inside_ and across_
  RingExecutor inside_, across_;
  TwoLevelRing two_;
};

// ncclAllReduce's communicator, as the watchdog sees it.
class NcclAllreduceComm final : public NcclComm<DeviceComm> {
 public:
  using NcclComm::NcclComm;
  std::string describe() const override { return "ncclAllReduce"; }
  // One float: NCCL connects what its choice for small messages needs; a larger bucket may still
  // connect more at its first call, which the watchdog then times.
  void warm_up(void* stream) override {
    warm_.grow_to(4);
    average(warm_.as<float>(), 1, stream);
  }
  void average(float* data, size_t count, void* stream) {
    RT_NCCL_GATED(gate(), kMayBlock,
                  ncclAllReduce(data, data, count, ncclFloat, ncclAvg, comm_, static_cast<cudaStream_t>(stream)));
  }
};

// NCCL's own allreduce, averaging in one call: the baseline the ring is measured against.
class NcclAllreduce final : public DeviceCollective {
 public:
  NcclAllreduce(MPI_Comm comm, StallPolicy stall) : DeviceCollective(std::move(stall)), comm_(comm) {
    start_watching({DeviceWatch::Ring{&comm_, "ncclAllReduce", {}, /*names_neighbours=*/false}});
  }
  ~NcclAllreduce() override {
    stop_watching();
    cudaStreamSynchronize(stream_);
  }
  std::string describe() const override { return "ncclAllReduce"; }

 protected:
  PhaseSwitch reduce(float* data, int64_t count, const WaitContext& context, const ShardUpdate*) override {
    wait_for_gradients(context);
    if (count > 0) run_watched(context, {{0, [&] { comm_.average(data, static_cast<size_t>(count), stream_); }}});
    return std::nullopt;
  }

 private:
  NcclAllreduceComm comm_;
};

}  // namespace

std::unique_ptr<DeviceExchange> make_nccl_exchange(MPI_Comm comm) { return std::make_unique<NcclExchange>(comm); }

std::string nccl_version() {
  int v = 0;  // major * 10000 + minor * 100 + patch
  ncclGetVersion(&v);
  return str_cat(v / 10000, ".", v % 10000 / 100, ".", v % 100);
}

std::unique_ptr<Collective> make_device_ring(std::unique_ptr<DeviceExchange> exchange, Wire wire,
                                             const StallPolicy& stall) {
  return std::make_unique<DeviceRing>(std::move(exchange), wire, stall);
}

std::unique_ptr<Collective> make_device_two_level_ring(std::unique_ptr<DeviceExchange> local,
                                                       std::unique_ptr<DeviceExchange> cross,
                                                       const TwoLevelPlace& place, Wire wire,
                                                       const StallPolicy& stall) {
  return std::make_unique<DeviceTwoLevelRing>(std::move(local), std::move(cross), place, wire, stall);
}

std::unique_ptr<Collective> make_device_collective(const CollectiveSpec& spec, MPI_Comm comm,
                                                   const StallPolicy& stall) {
  // A loaded config never asks the rest (config/config.cpp refuses them); a caller in code may.
  RT_CHECK(spec.allreduce == Allreduce::kRing || spec.allreduce == Allreduce::kNccl,
           "make_device_collective: dist.allreduce = \"", name_of(spec.allreduce), "\" moves host memory");
  if (spec.allreduce == Allreduce::kNccl) {
    RT_CHECK(spec.hierarchy != Hierarchy::kTwoLevel,
             "make_device_collective: the two-level ring applies to ringtrain's ring, not ncclAllReduce");
    RT_CHECK(spec.wire == Wire::kFp32, "make_device_collective: dist.wire = \"", name_of(spec.wire),
             "\" applies to ringtrain's ring, not ncclAllReduce");
    return std::make_unique<NcclAllreduce>(comm, stall);
  }
  HostLayout layout;
  if (choose_hierarchy(spec.hierarchy, comm, stall, &layout) == Hierarchy::kTwoLevel) {
    TwoLevelComms comms = split_two_level(comm, layout);
    auto local = make_nccl_exchange(comms.local);
    auto cross = make_nccl_exchange(comms.cross);
    MPI_Comm_free(&comms.local);  // NCCL keeps communicators of its own
    MPI_Comm_free(&comms.cross);
    return make_device_two_level_ring(std::move(local), std::move(cross), comms.place, spec.wire, stall);
  }
  return make_device_ring(make_nccl_exchange(comm), spec.wire, stall);
}

}  // namespace rt
