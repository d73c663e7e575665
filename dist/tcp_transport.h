// Transport over the ring's own TCP connections (tcp_links.h), for rings that cross hosts. Each
// rank streams to its successor on one socket and from its predecessor on another; transfers go
// in posting order, each behind an 8-byte length, so ranks that run different schedules are told
// so instead of reading each other's bytes as floats. A receive lands where it belongs straight
// from the socket; a reducing receive goes through a small staging buffer that stays in cache
// and is added into place as it fills, so the sum overlaps the transfer. Against Open MPI's TCP
// path this skips its fragmenting and matching: see docs/results/2026-11-22-allreduce-bandwidth.md.
#pragma once

#include <mpi.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

#include "dist/stall_wait.h"
#include "dist/tcp_links.h"
#include "dist/transport.h"

namespace rt {

class TcpTransport final : public Transport {
 public:
  // Collective over comm. interface as for open_ring_links.
  TcpTransport(MPI_Comm comm, StallPolicy policy, const std::string& interface = "");
  ~TcpTransport() override;

  int rank() const override { return rank_; }
  int world() const override { return world_; }
  Handle post_send(const void* data, size_t bytes, int peer) override;
  Handle post_recv(void* data, size_t bytes, int peer) override;
  Handle post_recv_reduce(float* dst, size_t count, int peer, float scale) override;
  void wait(Handle handle, const WaitContext& context) override;
  void reset() override;
  Links links() const override { return {-1, -1, received_, broken_links()}; }

 private:
  struct Transfer {
    char* data;
    uint64_t bytes;
    Handle handle;
    bool reduce = false;
    float scale = 1;
    uint64_t header = 0;  // the length as it goes over the wire
    size_t header_done = 0;
    uint64_t done = 0;  // payload bytes sent, or received and in place
    uint64_t got = 0;   // reducing receive: payload bytes received (staged ones included)
    std::chrono::steady_clock::time_point first_byte{};  // receive: when its first bytes were read
  };
  Handle enqueue(std::deque<Transfer>& queue, Transfer t, int peer, int expected_peer, const char* what);
  bool progress();  // true when bytes moved
  bool send_some();
  bool receive_some();
  bool receive_payload(Transfer& t);
  void complete_front(std::deque<Transfer>& queue);
  [[noreturn]] void fail(bool sending, const std::string& why) const;
  std::string broken_links() const;      // Links::broken
  int socket_error(bool sending) const;  // the connection's first error, 0 while none

  int rank_ = 0, world_ = 1, next_ = 0, prev_ = 0;
  StallPolicy policy_;
  RingLinks links_;
  std::deque<Transfer> sends_, recvs_;
  std::vector<bool> done_, is_send_;
  std::vector<float> staging_;  // reducing receives: bytes read but not yet added
  ReceiveTimes received_;
  mutable std::atomic<int> socket_errors_[2] = {0, 0};  // from prev, to next: the first read
};

}  // namespace rt
