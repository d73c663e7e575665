// What every NCCL communicator of ringtrain's shares: NCCL's errors as rt::Error, device memory
// that only grows, the communicator made over an MPI communicator's ranks, the gate every call
// passes (CommGate in dist/device_watch.h), and the watchdog's questions (Note [GPU watchdog]).
// For the CUDA sources of rt_dist_cuda only.
#pragma once

#include <mpi.h>
#include <nccl.h>

#include <string>

#include "base/check.h"
#include "dist/device_watch.h"
#include "nn/cuda/runtime.h"

namespace rt {

inline void check_nccl(ncclResult_t r, const char* call, const char* file, int line) {
  if (r != ncclSuccess) cuda::fail("NCCL", ncclGetErrorString(r), call, file, line);
}
#define RT_NCCL(call) check_nccl((call), #call, __FILE__, __LINE__)

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
inline ncclComm_t make_nccl_comm(MPI_Comm comm) {
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

// Calls into a communicator pass its gate (CommGate in dist/device_watch.h): once an abort is
// decided, the calling thread parks there instead.
#define RT_NCCL_GATED(gate, kind, call) \
  check_nccl((gate).pass((kind), [&] { return (call); }), #call, __FILE__, __LINE__)
inline constexpr CommGate::Call kEnqueues = CommGate::Call::kEnqueues, kMayBlock = CommGate::Call::kMayBlock;

// The communicator's asynchronous error in NCCL's words, "" while it has none; on the watchdog's
// thread, through the gate, so that a closed (aborted, freed) communicator is never asked.
inline std::string nccl_async_error(CommGate& gate, ncclComm_t comm) {
  std::string words;
  gate.attempt([&] {
    ncclResult_t error = ncclSuccess;
    if (ncclCommGetAsyncError(comm, &error) != ncclSuccess || error == ncclSuccess || error == ncclInProgress) return;
    // The last warning NCCL printed, process-wide: often the cause, as NCCL words it.
    const char* last = ncclGetLastError(comm);
    words = str_cat(ncclGetErrorString(error), last && *last ? str_cat(" (NCCL's last warning: ", last, ")") : "");
  });
  return words;
}

// What every NCCL communicator the watchdog sees shares (Comm: DeviceComm or a subclass): its
// making, rank and size, its asynchronous error, its abort and its end.
template <typename Comm>
class NcclComm : public Comm {
 public:
  explicit NcclComm(MPI_Comm comm) : comm_(make_nccl_comm(comm)) {
    RT_NCCL(ncclCommUserRank(comm_, &rank_));
    RT_NCCL(ncclCommCount(comm_, &world_));
  }
  // An aborted communicator was freed by ncclCommAbort.
  ~NcclComm() override {
    if (!this->aborted()) ncclCommDestroy(comm_);
  }
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  std::string async_error() override { return nccl_async_error(this->gate(), comm_); }

 protected:
  void end_transfers() override { ncclCommAbort(comm_); }

  ncclComm_t comm_;
  int rank_ = 0, world_ = 1;
  DeviceBuffer warm_;  // for warm_up
};

}  // namespace rt
