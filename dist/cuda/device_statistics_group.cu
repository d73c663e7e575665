// Note [Group batch norm] on the GPU: the group's averages are ncclAllReduce with ncclAvg on the
// compute stream, so a layer's statistics reach its normalisation without the host waiting, over
// a communicator of the group's own (never interleaved with the gradients' rings, which run on
// the communication stream). Each average is a piece of a GPU watchdog of its own (Note [GPU
// watchdog]): a stalled group reports itself, naming the step and its ranks, and ends the job.
#include <nccl.h>

#include <array>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "dist/cuda/device_collective.h"
#include "dist/cuda/nccl_comm.cuh"

namespace rt {
namespace {

class NcclGroupComm final : public NcclComm<DeviceComm> {
 public:
  using NcclComm::NcclComm;
  std::string describe() const override { return "ncclAllReduce of the batch-norm group (train.bn_group)"; }
  void warm_up(void* stream) override {
    warm_.grow_to(sizeof(float));
    average(warm_.as<float>(), 1, stream);
  }
  // values[0, count) on the GPU becomes the group's average, in place, enqueued on stream.
  void average(float* values, int64_t count, void* stream) {
    RT_NCCL_GATED(gate(), kMayBlock,
                  ncclAllReduce(values, values, static_cast<size_t>(count), ncclFloat, ncclAvg, comm_,
                                static_cast<cudaStream_t>(stream)));
  }
};

class DeviceStatisticsGroup final : public StatisticsGroup {
 public:
  DeviceStatisticsGroup(MPI_Comm group, const StallPolicy& stall, std::function<int64_t()> step)
      : comm_(group), step_(std::move(step)) {
    const cuda::Context& c = cuda::context();
    device_ = c.device;
    stream_ = c.stream;
    for (cudaEvent_t& e : events_) RT_CU(cudaEventCreateWithFlags(&e, cudaEventDisableTiming));
    // The compute stream may wait behind the gradients' ring (join_compute), whose own watchdog
    // reports its stalls: this one gives it the time the ring across hosts has.
    std::vector<DeviceWatch::Ring> rings;
    rings.emplace_back(&comm_, "the batch-norm group's ncclAllReduce", stall.world_ranks, false,
                       across_hosts_abort_s(stall.abort_s));
    watch_ = std::make_unique<DeviceWatch>(stall, std::move(rings), [this](int, int) { return mark(); });
    try {
      cudaError_t synced = cudaSuccess;
      watch_->warm_up(stream_, [&] { synced = cudaStreamSynchronize(stream_); });
      RT_CU(synced);
    } catch (...) {
      watch_.reset();
      destroy_events();
      throw;
    }
  }
  ~DeviceStatisticsGroup() override {
    watch_.reset();
    cudaStreamSynchronize(stream_);
    destroy_events();
  }
  int size() const override { return comm_.world(); }
  void average(float* values, int64_t count) override {
    watch_->run(WaitContext{step_(), -1, ""}, {DeviceWatch::Phase{0, [&] { comm_.average(values, count, stream_); }}});
  }

 private:
  // An event recorded after the average, for the watchdog's thread to query. Reused round the pool:
  // the GPU never runs this many averages behind the host (each step waits for its loss).
  std::function<bool()> mark() {
    const cudaEvent_t done = events_[next_++ % events_.size()];
    RT_CU(cudaEventRecord(done, stream_));
    return [done, device = device_] {
      cudaSetDevice(device);  // the watchdog's thread
      return cudaEventQuery(done) != cudaErrorNotReady;
    };
  }
  void destroy_events() {
    for (cudaEvent_t& e : events_)
      if (e) cudaEventDestroy(e), e = nullptr;
  }

  NcclGroupComm comm_;
  std::function<int64_t()> step_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  std::array<cudaEvent_t, 1024> events_{};
  size_t next_ = 0;
  std::unique_ptr<DeviceWatch> watch_;
};

}  // namespace

std::unique_ptr<StatisticsGroup> make_device_statistics_group(MPI_Comm group, const StallPolicy& stall,
                                                              std::function<int64_t()> step) {
  return std::make_unique<DeviceStatisticsGroup>(group, stall, std::move(step));
}

}  // namespace rt
