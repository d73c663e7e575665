// Transport over MPI point-to-point (Isend/Irecv) on a communicator of its own, so the ring's
// messages never match anyone else's. Waiting polls MPI_Test (see stall_wait.h).
#pragma once

#include <mpi.h>

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
  void wait(Handle handle, const WaitContext& context) override;
  void reset() override;

 private:
  MPI_Comm comm_;
  int rank_ = 0, world_ = 1;
  StallPolicy policy_;
  std::vector<MPI_Request> requests_;
  std::vector<int> peers_;
  std::vector<bool> is_send_;
};

}  // namespace rt
