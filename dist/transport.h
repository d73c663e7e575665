// Moving bytes between ring neighbours. The ring's primitives on host memory
// (transport_primitives.h) post non-blocking sends and receives and wait on them; a transport
// implements that over MPI point-to-point (mpi_transport.h), shared memory (shm_transport.h) or the
// ring's own TCP connections (tcp_transport.h). The ring on GPU memory moves chunks through a
// DeviceExchange instead (NCCL point-to-point, exchange_primitives.h).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "base/check.h"

namespace rt {

// What a wait is for, so that a stall can be reported precisely.
struct WaitContext {
  int64_t step = 0;
  int bucket = 0;
  const char* what = "";  // "reduce-scatter receive", ...
};

// "step 12, bucket 3: reduce-scatter receive from rank 1 has waited 61 s": what a stalled wait reports.
inline std::string stall_report(const WaitContext& ctx, bool is_send, int peer, double waited_s) {
  return str_cat("step ", ctx.step, ", bucket ", ctx.bucket, ": ", ctx.what, is_send ? " to" : " from", " rank ", peer,
                 " has waited ", static_cast<int>(waited_s), " s");
}

// Receives so far, each timed from its first byte read to its last: the pace of the link into
// this rank, which upstream delays do not stretch (a late sender delays the first byte, not the
// rest). Zero bytes: the transport does not see bytes arrive (MPI, shared memory).
struct ReceiveTimes {
  double seconds = 0, bytes = 0;
};

// What is known of a ring's links into and out of this rank: its neighbours as world ranks (the
// collective's to say; -1 where there is no ring), how its receives from prev have gone so far,
// and what has broken: "; the ring's TCP connection from rank 2 (node03) failed: Connection timed
// out (...)", or "" while nothing has, for stall messages that cannot name a rank.
struct Links {
  int prev = -1, next = -1;
  ReceiveTimes from_prev;
  std::string broken;
};

class Transport {
 public:
  using Handle = int;
  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  // Zeroed memory for buffers the ring sends from and receives into (the gradient arena). A
  // transport whose neighbours can read this rank's memory in place hands out such memory and
  // moves buffers inside it without copying them; others hand out plain memory. Collective:
  // every rank calls it at the same point, with the same size.
  virtual std::shared_ptr<float> allocate(size_t floats) {
    return std::shared_ptr<float>(new float[floats](), std::default_delete<float[]>());
  }
  virtual Handle post_send(const void* data, size_t bytes, int peer) = 0;
  virtual Handle post_recv(void* data, size_t bytes, int peer) = 0;
  // Receives `count` floats and adds them into dst as add_into (reduce_kernel.h) does: done when
  // wait() returns. A transport that can read the bytes where they land adds them from there,
  // without copying them into a buffer first.
  virtual Handle post_recv_reduce(float* dst, size_t count, int peer, float scale) = 0;
  // Blocks until the transfer is done. Past the warn time it reports what it waits for; past the
  // abort time it takes the job down with that report.
  virtual void wait(Handle handle, const WaitContext& context) = 0;
  // Forgets completed handles (call when none is pending).
  virtual void reset() = 0;
  // Its receive times and broken connections (prev and next unset).
  virtual Links links() const { return {}; }
};

}  // namespace rt
