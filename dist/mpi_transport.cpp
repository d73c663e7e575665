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

Transport::Handle MpiTransport::post(const void* data, size_t bytes, int peer, bool is_send) {
  RT_ASSERT(bytes <= static_cast<size_t>(INT32_MAX));
  Pending& p = pending_.emplace_back();
  p.peer = peer;
  p.is_send = is_send;
  const int ok =
      is_send ? MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &p.request)
              : MPI_Irecv(const_cast<void*>(data), static_cast<int>(bytes), MPI_BYTE, peer, 0, comm_, &p.request);
  RT_CHECK(ok == MPI_SUCCESS, is_send ? "MPI_Isend to" : "MPI_Irecv from", " rank ", peer, " failed");
  return static_cast<Handle>(pending_.size() - 1);
}

Transport::Handle MpiTransport::post_send(const void* data, size_t bytes, int peer) {
  return post(data, bytes, peer, true);
}

Transport::Handle MpiTransport::post_recv(void* data, size_t bytes, int peer) { return post(data, bytes, peer, false); }

Transport::Handle MpiTransport::post_recv_reduce(float* dst, size_t count, int peer, float scale) {
  if (staging_used_ == staging_.size()) staging_.push_back(std::make_unique<std::vector<float>>());
  std::vector<float>& staged = *staging_[staging_used_++];
  staged.resize(count);
  const Handle h = post(staged.data(), count * sizeof(float), peer, false);
  Pending& p = pending_[static_cast<size_t>(h)];
  p.reduce_into = dst;
  p.staged = staged.data();
  p.count = count;
  p.scale = scale;
  return h;
}

void MpiTransport::wait(Handle h, const WaitContext& ctx) {
  Pending& p = pending_.at(static_cast<size_t>(h));
  wait_until(
      [&] {
        int done = 0;
        RT_CHECK(MPI_Test(&p.request, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS, "MPI_Test failed in step ", ctx.step,
                 ", bucket ", ctx.bucket);
        return done != 0 ? PollResult::kDone : PollResult::kIdle;
      },
      policy_,
      [&](double waited) { return stall_report(ctx, p.is_send, policy_.world_rank(p.peer), waited) + policy_.ring; },
      [&] { return blame_rank(policy_, policy_.world_rank(p.peer)); });
  if (p.reduce_into) add_into(p.reduce_into, p.staged, p.count, p.scale);
  p.reduce_into = nullptr;
}

void MpiTransport::reset() {
  pending_.clear();
  staging_used_ = 0;
}

}  // namespace rt
