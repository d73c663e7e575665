#include "dist/tcp_links.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <random>
#include <vector>

#include "base/check.h"

namespace rt {
namespace {

constexpr int kMaxAddresses = 16;
constexpr uint32_t kMagic = 0x52544c4b;  // "RTLK"

// What a rank tells its predecessor so that it can connect.
struct Offer {
  char host[64] = {};
  uint16_t port = 0;
  int32_t count = 0;
  uint32_t addresses[kMaxAddresses] = {};  // IPv4, network byte order
};

struct Hello {
  uint32_t magic = kMagic;
  uint32_t job = 0;
  int32_t from = -1, to = -1;
};

std::string errno_text() { return std::strerror(errno); }

std::string address_text(uint32_t address, uint16_t port) {
  char buf[INET_ADDRSTRLEN] = {};
  in_addr a{};
  a.s_addr = address;
  inet_ntop(AF_INET, &a, buf, sizeof buf);
  return str_cat(buf, ":", port);
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// Waits for events on fd; false on timeout.
bool wait_for(int fd, short events, double timeout_s) {
  pollfd p{fd, events, 0};
  for (;;) {
    const int n = ::poll(&p, 1, static_cast<int>(timeout_s * 1000));
    if (n >= 0) return n > 0;
    if (errno != EINTR) return false;
  }
}

void set_blocking(int fd, bool blocking) {
  const int flags = fcntl(fd, F_GETFL, 0);
  fcntl(fd, F_SETFL, blocking ? flags & ~O_NONBLOCK : flags | O_NONBLOCK);
}

// Reads or writes exactly n bytes within the deadline; false otherwise.
bool exchange_all(int fd, void* data, size_t n, bool write, double timeout_s) {
  char* p = static_cast<char*>(data);
  const auto start = std::chrono::steady_clock::now();
  while (n > 0) {
    if (!wait_for(fd, write ? POLLOUT : POLLIN, timeout_s - seconds_since(start))) return false;
    const ssize_t k = write ? ::send(fd, p, n, MSG_NOSIGNAL) : ::recv(fd, p, n, 0);
    if (k < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (k <= 0) return false;
    p += k;
    n -= static_cast<size_t>(k);
  }
  return true;
}

Offer make_offer(int listener, const std::string& interface) {
  Offer offer;
  gethostname(offer.host, sizeof offer.host - 1);
  sockaddr_in bound{};
  socklen_t len = sizeof bound;
  getsockname(listener, reinterpret_cast<sockaddr*>(&bound), &len);
  offer.port = ntohs(bound.sin_port);
  ifaddrs* list = nullptr;
  RT_CHECK(getifaddrs(&list) == 0, "getifaddrs failed: ", errno_text());
  for (ifaddrs* i = list; i && offer.count < kMaxAddresses; i = i->ifa_next) {
    if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP)) continue;
    if (i->ifa_flags & IFF_LOOPBACK) continue;  // offered separately, to ranks of this host only
    if (!interface.empty() && interface != i->ifa_name) continue;
    offer.addresses[offer.count++] = reinterpret_cast<sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
  }
  freeifaddrs(list);
  RT_CHECK(offer.count > 0 || interface.empty(), "dist.tcp_interface = \"", interface,
           "\": this host has no IPv4 address on an interface of that name that is up");
  return offer;
}

// Connects to the first of the offered addresses that answers; -1 if none does.
int connect_any(const std::vector<uint32_t>& addresses, uint16_t port, double timeout_s, std::string* used,
                std::string* tried) {
  for (uint32_t address : addresses) {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    RT_CHECK(fd >= 0, "socket() failed: ", errno_text());
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_port = htons(port);
    to.sin_addr.s_addr = address;
    set_blocking(fd, false);
    int rc = ::connect(fd, reinterpret_cast<sockaddr*>(&to), sizeof to);
    if (rc != 0 && errno == EINPROGRESS && wait_for(fd, POLLOUT, timeout_s)) {
      socklen_t len = sizeof rc;
      getsockopt(fd, SOL_SOCKET, SO_ERROR, &rc, &len);
    }
    *tried += (tried->empty() ? "" : ", ") + address_text(address, port);
    if (rc == 0) {
      set_blocking(fd, true);
      *used = address_text(address, port);
      return fd;
    }
    ::close(fd);
  }
  return -1;
}

}  // namespace

RingLinks open_ring_links(MPI_Comm comm, const std::string& interface, double timeout_s,
                          const std::vector<int>& world_ranks) {
  int rank = 0, world = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &world);
  RT_CHECK(world >= 2, "a TCP ring needs at least 2 ranks");
  const int next = (rank + 1) % world, prev = (rank + world - 1) % world;
  // Messages name the world's ranks; the handshake uses comm's.
  const auto named = [&](int r) { return world_ranks.empty() ? r : world_ranks[static_cast<size_t>(r)]; };
  uint32_t job = 0;
  if (rank == 0) job = std::random_device{}();
  MPI_Bcast(&job, 1, MPI_UINT32_T, 0, comm);

  const int listener = ::socket(AF_INET, SOCK_STREAM, 0);
  RT_CHECK(listener >= 0, "socket() failed: ", errno_text());
  sockaddr_in any{};
  any.sin_family = AF_INET;
  any.sin_addr.s_addr = htonl(INADDR_ANY);
  RT_CHECK(::bind(listener, reinterpret_cast<sockaddr*>(&any), sizeof any) == 0 && ::listen(listener, 4) == 0, "rank ",
           named(rank), ": cannot listen on a TCP port: ", errno_text());
  const Offer mine = make_offer(listener, interface);
  Offer theirs;  // the successor's
  MPI_Sendrecv(&mine, sizeof mine, MPI_BYTE, prev, 0, &theirs, sizeof theirs, MPI_BYTE, next, 0, comm,
               MPI_STATUS_IGNORE);

  RingLinks links;
  // Connect first, accept second, read the answer last: connecting and sending a hello never
  // wait for the other side, so no rank can wait on a rank that waits on it.
  std::vector<uint32_t> candidates;
  if (std::strncmp(mine.host, theirs.host, sizeof mine.host) == 0) candidates.push_back(htonl(INADDR_LOOPBACK));
  candidates.insert(candidates.end(), theirs.addresses, theirs.addresses + theirs.count);
  std::string tried;
  links.to_next = connect_any(candidates, theirs.port, timeout_s, &links.next_address, &tried);
  RT_CHECK(links.to_next >= 0, "rank ", named(rank), " cannot reach rank ", named(next), " (host ", theirs.host,
           ") over TCP at ", tried.empty() ? "no address" : tried,
           " (set dist.tcp_interface, or use dist.transport = \"mpi\")");
  Hello hello{kMagic, job, rank, next};
  RT_CHECK(exchange_all(links.to_next, &hello, sizeof hello, true, timeout_s), "rank ", named(rank),
           ": sending the TCP handshake to rank ", named(next), " at ", links.next_address, " failed");

  const auto start = std::chrono::steady_clock::now();
  while (links.from_prev < 0) {
    RT_CHECK(wait_for(listener, POLLIN, timeout_s - seconds_since(start)), "rank ", named(rank), ": rank ", named(prev),
             " did not connect over TCP within ", timeout_s, " s");
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const int fd = ::accept(listener, reinterpret_cast<sockaddr*>(&from), &len);
    if (fd < 0) continue;
    Hello h;
    if (exchange_all(fd, &h, sizeof h, false, 5) && h.magic == kMagic && h.job == job && h.from == prev &&
        h.to == rank) {
      Hello answer{kMagic, job, rank, prev};
      if (exchange_all(fd, &answer, sizeof answer, true, 5)) {
        links.from_prev = fd;
        links.prev_address = address_text(from.sin_addr.s_addr, ntohs(from.sin_port));
        break;
      }
    }
    ::close(fd);  // someone else's connection
  }
  ::close(listener);

  Hello answer;
  RT_CHECK(exchange_all(links.to_next, &answer, sizeof answer, false, timeout_s) && answer.magic == kMagic &&
               answer.job == job && answer.from == next && answer.to == rank,
           "rank ", named(rank), ": ", links.next_address, " did not answer as rank ", named(next), " of this job");
  for (int fd : {links.to_next, links.from_prev}) {
    const int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    set_blocking(fd, false);
  }
  return links;
}

}  // namespace rt
