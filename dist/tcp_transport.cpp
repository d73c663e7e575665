#include "dist/tcp_transport.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "dist/reduce_kernel.h"

namespace rt {
namespace {
// socket_error's word for a connection its peer closed in good order (a FIN, where a dead process's
// kernel sends one), which sets no error on the socket.
constexpr int kClosedByPeer = -1;

// Why a connection broke: the peer's end closed it (the rank died or aborted), or keepalive probes
// and retransmissions went unanswered (the link or the peer's host is down).
std::string broken(int error) {
  if (error == kClosedByPeer) return "the connection was closed (the rank died or aborted)";
  return str_cat(std::strerror(error),
                 error == ETIMEDOUT ? " (the link or that host is down)" : " (the rank died or aborted)");
}

// 256 KiB: big enough that each recv() takes what the kernel has queued, small enough to stay in
// the core's cache between landing and being added.
constexpr size_t kStagingFloats = size_t{64} << 10;
}  // namespace

TcpTransport::TcpTransport(MPI_Comm comm, StallPolicy policy, const std::string& interface)
    : policy_(std::move(policy)), staging_(kStagingFloats) {
  MPI_Comm_rank(comm, &rank_);
  MPI_Comm_size(comm, &world_);
  next_ = (rank_ + 1) % world_;
  prev_ = (rank_ + world_ - 1) % world_;
  if (world_ > 1) links_ = open_ring_links(comm, interface, 30, policy_.world_ranks);
  // Keepalive probes find a neighbour cut off while the ring is idle (between steps, where the
  // ranks wait in MPI collectives that cannot say who is missing): after a sixth of the abort
  // time without traffic, 3 probes as far apart, so the connection has failed before the stall
  // abort and its message can say so (Links::broken). An outage shorter than two probe intervals
  // (a third of the abort time: 5 s at 15 s) is ridden out.
  const int idle_s = std::max(1, static_cast<int>(policy_.abort_s / 6)), probes = 3, on = 1;
  for (int fd : {links_.to_next, links_.from_prev}) {
    if (fd < 0) continue;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle_s, sizeof idle_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &idle_s, sizeof idle_s);
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes);
  }
}

// Reading SO_ERROR clears it, and a connection that timed out then reads as merely closed: the
// first error read is kept, for every later reader (the step's links(), a stall message, the
// transfer that then fails).
int TcpTransport::socket_error(bool sending) const {
  std::atomic<int>& kept = socket_errors_[sending ? 1 : 0];
  if (kept.load() != 0) return kept.load();
  const int fd = sending ? links_.to_next : links_.from_prev;
  int error = 0;
  socklen_t len = sizeof error;
  if (fd < 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &len) != 0) return kept.load();
  if (error == 0) {
    // A peer never shuts its end of a ring link while it runs: a hang-up is its process gone.
    pollfd p{fd, POLLRDHUP, 0};
    if (::poll(&p, 1, 0) != 1 || (p.revents & (POLLRDHUP | POLLHUP)) == 0) return kept.load();
    error = kClosedByPeer;
  }
  int none = 0;
  kept.compare_exchange_strong(none, error);
  return kept.load();
}

std::string TcpTransport::broken_links() const {
  std::string said;
  for (const bool sending : {false, true}) {
    const int error = socket_error(sending);
    if (error == 0) continue;
    said += str_cat("; the ring's TCP connection ", sending ? "to " : "from ",
                    policy_.who(policy_.world_rank(sending ? next_ : prev_)), " failed: ", broken(error));
  }
  return said;
}

TcpTransport::~TcpTransport() {
  for (int fd : {links_.to_next, links_.from_prev})
    if (fd >= 0) ::close(fd);
}

Transport::Handle TcpTransport::enqueue(std::deque<Transfer>& queue, Transfer t, int peer, int expected_peer,
                                        const char* what) {
  RT_CHECK(peer == expected_peer, "TCP transport: rank ", rank_, " can ", what, " only rank ", expected_peer, ", not ",
           peer);
  t.handle = static_cast<Handle>(done_.size());
  t.header = t.bytes;
  done_.push_back(false);
  is_send_.push_back(&queue == &sends_);
  queue.push_back(t);
  progress();
  return t.handle;
}

Transport::Handle TcpTransport::post_send(const void* data, size_t bytes, int peer) {
  return enqueue(sends_, {static_cast<char*>(const_cast<void*>(data)), bytes, 0}, peer, next_, "send to");
}

Transport::Handle TcpTransport::post_recv(void* data, size_t bytes, int peer) {
  return enqueue(recvs_, {static_cast<char*>(data), bytes, 0}, peer, prev_, "receive from");
}

Transport::Handle TcpTransport::post_recv_reduce(float* dst, size_t count, int peer, float scale) {
  return enqueue(recvs_, {reinterpret_cast<char*>(dst), count * sizeof(float), 0, true, scale}, peer, prev_,
                 "receive from");
}

void TcpTransport::fail(bool sending, const std::string& why) const {
  const int peer = sending ? next_ : prev_;
  RT_CHECK(false, "TCP transport: rank ", policy_.world_rank(rank_), sending ? " sending to " : " receiving from ",
           policy_.who(policy_.world_rank(peer)), policy_.ring, " at ",
           sending ? links_.next_address : links_.prev_address, ": ", why);
  __builtin_unreachable();
}

void TcpTransport::complete_front(std::deque<Transfer>& queue) {
  done_[static_cast<size_t>(queue.front().handle)] = true;
  queue.pop_front();
}

bool TcpTransport::send_some() {
  bool moved = false;
  while (!sends_.empty()) {
    Transfer& t = sends_.front();
    iovec iov[2];
    int parts = 0;
    if (t.header_done < sizeof t.header)
      iov[parts++] = {reinterpret_cast<char*>(&t.header) + t.header_done, sizeof t.header - t.header_done};
    if (t.done < t.bytes) iov[parts++] = {t.data + t.done, t.bytes - t.done};
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = static_cast<size_t>(parts);
    const ssize_t k = parts == 0 ? 0 : ::sendmsg(links_.to_next, &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k < 0) {
      if (errno == EINTR) continue;
      if (errno == EAGAIN || errno == EWOULDBLOCK) break;
      const int error = errno;
      const int kept = socket_error(true);
      fail(true, broken(kept != 0 ? kept : error));
    }
    size_t n = static_cast<size_t>(k);
    const size_t h = std::min(n, sizeof t.header - t.header_done);
    t.header_done += h;
    t.done += n - h;
    moved = moved || n > 0;
    if (t.header_done == sizeof t.header && t.done == t.bytes) complete_front(sends_);
  }
  return moved;
}

// Reads what the socket has for the front receive; true when bytes arrived.
bool TcpTransport::receive_payload(Transfer& t) {
  const int fd = links_.from_prev;
  char* into;
  size_t want;
  if (t.header_done < sizeof t.header) {
    into = reinterpret_cast<char*>(&t.header) + t.header_done;
    want = sizeof t.header - t.header_done;
  } else if (!t.reduce) {
    into = t.data + t.done;
    want = t.bytes - t.done;
  } else {
    const size_t staged = t.got - t.done;  // fewer than 4 bytes: a float split across reads
    into = reinterpret_cast<char*>(staging_.data()) + staged;
    want = std::min<uint64_t>(staging_.size() * sizeof(float) - staged, t.bytes - t.got);
  }
  const ssize_t k = ::recv(fd, into, want, MSG_DONTWAIT);
  if (k == 0) {
    const int kept = socket_error(false);
    fail(false, broken(kept != 0 ? kept : kClosedByPeer));
  }
  if (k < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return false;
    fail(false, broken(errno));
  }
  const size_t n = static_cast<size_t>(k);
  if (t.header_done < sizeof t.header) {
    if (t.header_done == 0) t.first_byte = std::chrono::steady_clock::now();
    t.header_done += n;
    if (t.header_done == sizeof t.header && t.header != t.bytes)
      fail(false, str_cat("expected a transfer of ", t.bytes, " bytes but the rank sent ", t.header,
                          " (the ranks run different schedules)"));
    return true;
  }
  if (!t.reduce) {
    t.done += n;
    return true;
  }
  t.got += n;
  const size_t staged = t.got - t.done, whole = staged / sizeof(float);
  add_into(reinterpret_cast<float*>(t.data + t.done), staging_.data(), whole, t.scale);
  t.done += whole * sizeof(float);
  std::memmove(staging_.data(), reinterpret_cast<char*>(staging_.data()) + whole * sizeof(float),
               staged - whole * sizeof(float));
  return true;
}

bool TcpTransport::receive_some() {
  bool moved = false;
  while (!recvs_.empty()) {
    Transfer& t = recvs_.front();
    if (t.header_done == sizeof t.header && t.done == t.bytes) {
      received_.seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - t.first_byte).count();
      received_.bytes += static_cast<double>(t.bytes + sizeof t.header);
      complete_front(recvs_);
      continue;
    }
    if (!receive_payload(t)) break;
    moved = true;
  }
  return moved;
}

bool TcpTransport::progress() {
  const bool sent = send_some();
  return receive_some() || sent;
}

void TcpTransport::wait(Handle h, const WaitContext& ctx) {
  const size_t i = static_cast<size_t>(h);
  RT_ASSERT(i < done_.size());
  const int peer = is_send_[i] ? next_ : prev_;
  wait_until(
      [&] {
        if (progress()) return done_[i] ? PollResult::kDone : PollResult::kMoved;
        if (done_[i]) return PollResult::kDone;
        // Nothing to do until a socket is ready: block in poll() rather than spin (1 ms at most,
        // so the stall clock keeps running).
        pollfd fds[2];
        nfds_t n = 0;
        if (!sends_.empty()) fds[n++] = {links_.to_next, POLLOUT, 0};
        if (!recvs_.empty()) fds[n++] = {links_.from_prev, POLLIN, 0};
        ::poll(fds, n, 1);
        return progress() ? (done_[i] ? PollResult::kDone : PollResult::kMoved)
                          : (done_[i] ? PollResult::kDone : PollResult::kIdle);
      },
      policy_,
      [&](double waited) { return stall_report(ctx, is_send_[i], policy_.world_rank(peer), waited) + policy_.ring; },
      [&] { return blame_rank(policy_, policy_.world_rank(peer)); });
}

void TcpTransport::reset() {
  RT_ASSERT(sends_.empty() && recvs_.empty());
  done_.clear();
  is_send_.clear();
}

}  // namespace rt
