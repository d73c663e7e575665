// Opening the ring's two TCP connections: each rank listens on a port of its own, tells its ring
// predecessor where (its IPv4 addresses and the port, over MPI), and connects to its successor.
// A connection counts only after a handshake in which both ends name their rank and the job (a
// number rank 0 draws), so an address that leads somewhere else (a bridge every host has, say) is
// passed over for the next one.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace rt {

struct RingLinks {
  int to_next = -1;          // socket this rank sends on
  int from_prev = -1;        // socket this rank receives on
  std::string next_address;  // "10.213.0.2:41234", for messages
  std::string prev_address;
};

// Collective over comm (world >= 2). interface: only that network interface's addresses are
// offered ("" = every interface that is up; loopback only between ranks of one host). Throws
// with the ranks and addresses tried when a connection cannot be made within timeout_s; ranks
// are named world_ranks[r] where comm is a sub-communicator (empty: comm's own).
RingLinks open_ring_links(MPI_Comm comm, const std::string& interface, double timeout_s = 30,
                          const std::vector<int>& world_ranks = {});

}  // namespace rt
