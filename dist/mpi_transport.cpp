#include "dist/mpi_transport.h"

#include <chrono>
#include <thread>

#include "base/check.h"

namespace rt {

MpiTransport::MpiTransport(MPI_Comm comm, StallPolicy policy) : policy_(std::move(policy)) {
  RT_CHECK(MPI_Comm_dup(comm, &comm_) == MPI_SUCCESS, "MPI_Comm_dup failed");
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &world_);
}

MpiTransport::~MpiTransport() { MPI_Comm_free(&comm_); }

Transport::Handle MpiTransport::post_send(const void* data, size_t bytes, int peer) {
  RT_ASSERT(bytes <= static_cast<size_t>(INT32_MAX));
  requests_.push_back(MPI_REQUEST_NULL);
  RT_CHECK(MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &requests_.back()) == MPI_SUCCESS,
           "MPI_Isend to rank ", peer, " failed");
  peers_.push_back(peer);
  is_send_.push_back(true);
  return static_cast<Handle>(requests_.size() - 1);
}

Transport::Handle MpiTransport::post_recv(void* data, size_t bytes, int peer) {
  RT_ASSERT(bytes <= static_cast<size_t>(INT32_MAX));
  requests_.push_back(MPI_REQUEST_NULL);
  RT_CHECK(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &requests_.back()) == MPI_SUCCESS,
           "MPI_Irecv from rank ", peer, " failed");
  peers_.push_back(peer);
  is_send_.push_back(false);
  return static_cast<Handle>(requests_.size() - 1);
}

void MpiTransport::wait(Handle h, const WaitContext& ctx) {
  using Clock = std::chrono::steady_clock;
  MPI_Request& req = requests_.at(static_cast<size_t>(h));
  const auto start = Clock::now();
  bool warned = false;
  for (int polls = 0;; ++polls) {
    int done = 0;
    RT_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test failed in step ", ctx.step,
             ", bucket ", ctx.bucket);
    if (done) return;
    // Spin for the first ~200 us (most waits end sooner, and sleeping would add latency to every
    // slice); after that poll every 20 us, so a long wait leaves the core to compute threads.
    if (polls > 2000) std::this_thread::sleep_for(std::chrono::microseconds(20));
    if ((polls & 1023) != 0) continue;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    auto report = [&] {
      return str_cat("step ", ctx.step, ", bucket ", ctx.bucket, ": ", ctx.what, (is_send_[h] ? " to" : " from"),
                     " rank ", peers_[h], " has waited ", static_cast<int>(waited), " s");
    };
    if (waited > policy_.abort_s) {
      policy_.abort(report() + str_cat(" (dist.stall_abort_s = ", policy_.abort_s, "); rank ", peers_[h],
                                       " is stuck, dead or running a different schedule"));
    } else if (!warned && waited > policy_.warn_s) {
      warned = true;
      policy_.warn(report() + str_cat(" (dist.stall_warn_s = ", policy_.warn_s, ")"));
    }
  }
}

void MpiTransport::reset() {
  requests_.clear();
  peers_.clear();
  is_send_.clear();
}

}  // namespace rt
