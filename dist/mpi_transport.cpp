#include "dist/mpi_transport.h"

#include "base/check.h"
#include "dist/reduce_kernel.h"

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
  reduces_.emplace_back();
  return static_cast<Handle>(requests_.size() - 1);
}

Transport::Handle MpiTransport::post_recv(void* data, size_t bytes, int peer) {
  RT_ASSERT(bytes <= static_cast<size_t>(INT32_MAX));
  requests_.push_back(MPI_REQUEST_NULL);
  RT_CHECK(MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &requests_.back()) == MPI_SUCCESS,
           "MPI_Irecv from rank ", peer, " failed");
  peers_.push_back(peer);
  is_send_.push_back(false);
  reduces_.emplace_back();
  return static_cast<Handle>(requests_.size() - 1);
}

Transport::Handle MpiTransport::post_recv_reduce(float* dst, size_t count, int peer, float scale) {
  if (staging_used_ == staging_.size()) staging_.push_back(std::make_unique<std::vector<float>>());
  std::vector<float>& staged = *staging_[staging_used_++];
  staged.resize(count);
  const Handle h = post_recv(staged.data(), count * sizeof(float), peer);
  reduces_[static_cast<size_t>(h)] = {dst, staged.data(), count, scale};
  return h;
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
  PendingReduce& r = reduces_[static_cast<size_t>(h)];
  if (r.dst) add_into(r.dst, r.staged, r.count, r.scale);
  r.dst = nullptr;
}

void MpiTransport::reset() {
  requests_.clear();
  peers_.clear();
  is_send_.clear();
  reduces_.clear();
  staging_used_ = 0;
}

}  // namespace rt
