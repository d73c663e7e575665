// Transport over MPI point-to-point (Isend/Irecv) on a communicator of its own, so the ring's
// messages never match anyone else's. Waiting polls MPI_Test (see stall_wait.h).
#pragma once

#include <mpi.h>

#include <memory>
#include <vector>

#include "dist/stall_wait.h"
#include "dist/transport.h"

namespace rt {

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, StallPolicy policy);
  ~MpiTransport() override;
  int rank() const override { return rank_; }
  int world() const override { return world_; }
  Handle post_send(const void* data, size_t bytes, int peer) override;
  Handle post_recv(void* data, size_t bytes, int peer) override;
  // Receives into a staging buffer of its own; the sum is done when wait() sees it arrive.
  Handle post_recv_reduce(float* dst, size_t count, int peer, float scale) override;
  void wait(Handle handle, const WaitContext& context) override;
  void reset() override;

 private:
  MPI_Comm comm_;
  int rank_ = 0, world_ = 1;
  StallPolicy policy_;
  // One per handle.
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    int peer = 0;
    bool is_send = false;
    float* reduce_into = nullptr;  // post_recv_reduce: add the staged floats here
    const float* staged = nullptr;
    size_t count = 0;
    float scale = 1;
  };
  Handle post(const void* data, size_t bytes, int peer, bool is_send);
  std::vector<Pending> pending_;
  std::vector<std::unique_ptr<std::vector<float>>> staging_;  // reused run after run
  size_t staging_used_ = 0;
};

}  // namespace rt
