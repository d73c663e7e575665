#include "dist/cuda/device_collective.h"

#include <nccl.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <utility>
#include <vector>

#include "base/check.h"
#include "dist/ring_schedule.h"
#include "dist/stall_watch.h"
#include "nn/cuda/runtime.h"

namespace rt {
namespace {

void check_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  if (r != ncclSuccess) cuda::fail("NCCL", ncclGetErrorString(r), call, file, line);
}
#define RT_NCCL(call) check_nccl((call), #call, __FILE__, __LINE__)

// The ring's per-element work, the same RT_HD conversions as the CPU ring's (wire_format.h).
__global__ void scale_kernel(float* x, int64_t n, float s) { RT_FOR_EACH_ELEMENT(i, n) x[i] *= s; }
__global__ void add_kernel(float* dst, const float* src, int64_t n, float scale) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] = (dst[i] + src[i]) * scale;
}
__global__ void add_wire_kernel(float* dst, const uint16_t* src, int64_t n, Wire wire) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] += from_wire(src[i], wire);
}
__global__ void narrow_kernel(const float* src, uint16_t* dst, int64_t n, Wire wire) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] = to_wire(src[i], wire);
}
__global__ void widen_kernel(const uint16_t* src, float* dst, int64_t n, Wire wire) {
  RT_FOR_EACH_ELEMENT(i, n) dst[i] = from_wire(src[i], wire);
}

// Device memory that only grows; freed with its owner.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t bytes = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() { cudaFree(ptr); }
  void grow_to(size_t wanted) {
    if (wanted <= bytes) return;
    if (ptr) RT_CU(cudaFree(ptr));  // synchronises the device: nothing still reads the old buffer
    ptr = nullptr;
    RT_CU(cudaMalloc(&ptr, wanted));
    bytes = wanted;
  }
  template <typename T>
  T* as() const {
    return static_cast<T*>(ptr);
  }
};

// Rank 0 makes NCCL's unique id; MPI hands it to the others; every rank then joins.
ncclComm_t make_nccl_comm(MPI_Comm comm) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  cuda::context();  // the GPU select_cuda_device chose, current on this thread
  ncclUniqueId id{};
  if (rank == 0) RT_NCCL(ncclGetUniqueId(&id));
  RT_CHECK(MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm) == MPI_SUCCESS, "MPI_Bcast of the NCCL id failed");
  ncclComm_t c = nullptr;
  RT_NCCL(ncclCommInitRank(&c, world, id, rank));
  return c;
}

class NcclExchange final : public DeviceExchange {
 public:
  explicit NcclExchange(MPI_Comm comm) : comm_(make_nccl_comm(comm)) {
    RT_NCCL(ncclCommUserRank(comm_, &rank_));
    RT_NCCL(ncclCommCount(comm_, &world_));
  }
  ~NcclExchange() override { ncclCommDestroy(comm_); }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string describe() const override { return "NCCL point-to-point"; }
  void abort() override { ncclCommAbort(comm_); }
  void exchange(const void* send, size_t send_bytes, int next, void* recv, size_t recv_bytes, int prev,
                void* stream) override {
    // One group: NCCL runs the send and the receive together, so no rank's send waits for a
    // receive its neighbour has not reached. A chunk is empty on both of its ends or on neither.
    const auto s = static_cast<cudaStream_t>(stream);
    RT_NCCL(ncclGroupStart());
    if (send_bytes > 0) RT_NCCL(ncclSend(send, send_bytes, ncclUint8, next, comm_, s));
    if (recv_bytes > 0) RT_NCCL(ncclRecv(recv, recv_bytes, ncclUint8, prev, comm_, s));
    RT_NCCL(ncclGroupEnd());
  }

 private:
  ncclComm_t comm_;
  int rank_ = 0, world_ = 1;
};

// The communication stream and the events that order it against the compute stream (Note
// [Device collectives]), and the watchdog over its work (Note [GPU watchdog]).
class DeviceCollective : public Collective {
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
  void average_and_update(float*, int64_t, const ShardUpdate&, const WaitContext&) override {
    RT_CHECK(false,
             "the sharded update (dist.sharded_update) runs on the CPU only; on the GPU, SGD follows the allreduce");
  }

 protected:
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

  // Starts the watchdog; before_abort ends the subclass's transfers in flight. Call from the
  // subclass's constructor, and stop_watching() first in its destructor: the watchdog may call
  // before_abort until it stops.
  void start_watching(std::function<void()> before_abort) {
    watch_ = std::make_unique<StallWatch>(stall_, std::move(before_abort));
  }
  void stop_watching() { watch_.reset(); }
  // On the communication thread, after a bucket's work is enqueued: the watchdog waits for it.
  void watch_bucket(const WaitContext& context, std::string what, std::string blame) {
    if (!watch_) return;
    const auto b = static_cast<size_t>(std::max(context.bucket, 0));
    while (done_.size() <= b) {
      done_.emplace_back();
      RT_CU(cudaEventCreateWithFlags(&done_.back(), cudaEventDisableTiming));
    }
    const cudaEvent_t done = done_[b];
    RT_CU(cudaEventRecord(done, stream_));
    watch_->watch(
        [done, device = device_] {
          cudaSetDevice(device);  // the watchdog's thread
          return cudaEventQuery(done) != cudaErrorNotReady;
        },
        context, std::move(what), std::move(blame));
  }

  int device_ = 0;
  cudaStream_t compute_ = nullptr, stream_ = nullptr;

 private:
  StallPolicy stall_;
  std::vector<cudaEvent_t> done_;  // per bucket: its work has finished
  std::unique_ptr<StallWatch> watch_;
  std::vector<cudaEvent_t> ready_;  // per bucket
  cudaEvent_t joined_ = nullptr, now_ = nullptr;
};

// Note [Ring schedule] on the GPU. Each step is one exchange followed by one kernel, all on the
// communication stream, so a step's reduction follows its transfer and precedes the next step's
// without any host synchronisation. Unlike the CPU ring, the transfer of a step is not sliced to
// overlap the previous reduction: the kernel reads and writes GPU memory at several hundred GB/s,
// a small fraction of each step's time next to the link's.
class DeviceRing final : public DeviceCollective {
 public:
  DeviceRing(std::unique_ptr<DeviceExchange> exchange, Wire wire, StallPolicy stall)
      : DeviceCollective(std::move(stall)), x_(std::move(exchange)), wire_(wire) {
    start_watching([x = x_.get()] { x->abort(); });
  }
  ~DeviceRing() override { stop_watching(); }
  std::string describe() const override {
    return "ringtrain's ring over " + x_->describe() +
           (wire_ == Wire::kFp32 ? "" : str_cat(", ", wire_name(wire_), " on the wire"));
  }

  void average(float* data, int64_t count, const WaitContext& context) override {
    wait_for_gradients(context);
    const int world = x_->world(), rank = x_->rank();
    if (world == 1 || count == 0) return;
    reserve(count);
    const int next = ring_next(rank, world), prev = ring_prev(rank, world);
    const bool narrow = wire_ != Wire::kFp32;
    const size_t eb = wire_bytes(wire_);
    const float inv_world = 1.0f / static_cast<float>(world);
    float* const incoming = recv_.as<float>();
    uint16_t* const ws = send_stage_.as<uint16_t>();  // with a narrow wire: what this rank sends
    uint16_t* const wr = recv_stage_.as<uint16_t>();  // ... and receives, at the data's offsets
    auto grid = [](int64_t n) { return cuda::blocks_for(n); };
    const cudaStream_t s = stream_;
    // Note [Wire scaling]: a 16-bit wire carries each rank's share of the average.
    if (narrow) scale_kernel<<<grid(count), 256, 0, s>>>(data, count, inv_world);
    for (int step = 0; step < ring_step_count(world); ++step) {
      const RingStep st = ring_step(rank, world, step);
      const ChunkRange out = chunk_range(count, world, st.send_chunk), in = chunk_range(count, world, st.recv_chunk);
      const auto out_n = static_cast<size_t>(out.count), in_n = static_cast<size_t>(in.count);
      if (st.reduce && !narrow) {
        x_->exchange(data + out.begin, 4 * out_n, next, incoming, 4 * in_n, prev, s);
        add_kernel<<<grid(in.count), 256, 0, s>>>(data + in.begin, incoming, in.count,
                                                  st.final_reduce ? inv_world : 1.0f);
      } else if (st.reduce) {
        if (step == 0)
          narrow_kernel<<<grid(out.count), 256, 0, s>>>(data + out.begin, ws + out.begin, out.count, wire_);
        x_->exchange(ws + out.begin, eb * out_n, next, wr + in.begin, eb * in_n, prev, s);
        add_wire_kernel<<<grid(in.count), 256, 0, s>>>(data + in.begin, wr + in.begin, in.count, wire_);
        // What the next step sends; after the last addition the owner keeps exactly what it sends,
        // so every rank ends with the same values.
        narrow_kernel<<<grid(in.count), 256, 0, s>>>(data + in.begin, ws + in.begin, in.count, wire_);
        if (st.final_reduce)
          widen_kernel<<<grid(in.count), 256, 0, s>>>(ws + in.begin, data + in.begin, in.count, wire_);
      } else if (!narrow) {
        x_->exchange(data + out.begin, 4 * out_n, next, data + in.begin, 4 * in_n, prev, s);
      } else {
        // All-gather on the wire: received chunks are forwarded as they came, from the send stage.
        x_->exchange(ws + out.begin, eb * out_n, next, ws + in.begin, eb * in_n, prev, s);
        widen_kernel<<<grid(in.count), 256, 0, s>>>(ws + in.begin, data + in.begin, in.count, wire_);
      }
      RT_CU_LAUNCHED();
    }
    watch_bucket(context,
                 str_cat("the ring's exchange over ", x_->describe(), ", receiving from rank ", prev,
                         " and sending to rank ", next),
                 str_cat(": rank ", prev, " or rank ", next, " is stuck, dead or running a different schedule"));
  }

 protected:
  void reserve(int64_t floats) override {
    const int world = x_->world();
    const auto n = static_cast<size_t>(std::max<int64_t>(floats, 1));
    recv_.grow_to(sizeof(float) * (n / static_cast<size_t>(world) + 1));  // one chunk
    if (wire_ != Wire::kFp32) {
      send_stage_.grow_to(wire_bytes(wire_) * n);
      recv_stage_.grow_to(wire_bytes(wire_) * n);
    }
  }

 private:
  std::unique_ptr<DeviceExchange> x_;
  Wire wire_;
  DeviceBuffer recv_, send_stage_, recv_stage_;
};

// NCCL's own allreduce, averaging in one call: the baseline the ring is measured against.
class NcclAllreduce final : public DeviceCollective {
 public:
  NcclAllreduce(MPI_Comm comm, StallPolicy stall) : DeviceCollective(std::move(stall)), comm_(make_nccl_comm(comm)) {
    start_watching([c = comm_] { ncclCommAbort(c); });
  }
  ~NcclAllreduce() override {
    stop_watching();
    cudaStreamSynchronize(stream_);
    ncclCommDestroy(comm_);
  }
  std::string describe() const override { return "ncclAllReduce"; }
  void average(float* data, int64_t count, const WaitContext& context) override {
    wait_for_gradients(context);
    if (count == 0) return;
    RT_NCCL(ncclAllReduce(data, data, static_cast<size_t>(count), ncclFloat, ncclAvg, comm_, stream_));
    watch_bucket(context, "ncclAllReduce",
                 ": a rank is stuck, dead or running a different schedule (NCCL does not say which)");
  }

 private:
  ncclComm_t comm_;
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

std::unique_ptr<Collective> make_device_collective(const std::string& algorithm, MPI_Comm comm, Wire wire,
                                                   const StallPolicy& stall) {
  check_device_allreduce(algorithm, wire);
  if (algorithm == "ring") return make_device_ring(make_nccl_exchange(comm), wire, stall);
  return std::make_unique<NcclAllreduce>(comm, stall);
}

}  // namespace rt
