// Transport over MPI point-to-point (Isend/Irecv) on a communicator of its own, so the ring's
// messages never match anyone else's. Waiting polls MPI_Test, sleeping briefly between polls so a
// waiting communication thread does not take a core from the compute threads.
#pragma once

#include <mpi.h>

#include <functional>
#include <vector>

#include "dist/transport.h"

namespace rt {

struct StallPolicy {
  double warn_s = 60;
  double abort_s = 300;
  std::function<void(const std::string&)> warn;   // prints a warning
  std::function<void(const std::string&)> abort;  // must not return
};

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
