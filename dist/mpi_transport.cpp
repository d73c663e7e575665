#include "dist/mpi_transport.h"

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
  MPI_Request& req = requests_.at(static_cast<size_t>(h));
  wait_until(
      [&] {
        int done = 0;
        RT_CHECK(MPI_Test(&req, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test failed in step ", ctx.step,
                 ", bucket ", ctx.bucket);
        return done != 0 ? PollResult::kDone : PollResult::kIdle;
      },
      policy_, [&](double waited) { return stall_report(ctx, is_send_[h], peers_[h], waited); },
      [&] { return blame_rank(peers_[h]); });
}

void MpiTransport::reset() {
  requests_.clear();
  peers_.clear();
  is_send_.clear();
}

}  // namespace rt
