// Which transport carries the ring on host memory (dist.transport), and making it: shared memory
// (shm_transport.h), the ring's own TCP connections (tcp_transport.h) or MPI point-to-point
// (mpi_transport.h). The collectives ask here, so that they need none of the transports' headers.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "base/run_settings.h"
#include "dist/stall_wait.h"
#include "dist/transport.h"

namespace rt {

// The transport make_collective picks for the ring: kShm, kTcp or kMpi. With kAuto, shared
// memory where every rank is on one host and /dev/shm has room (ShmTransport::check_space), else
// TCP, saying why on rank 0 through stall.warn where it was for want of room; with kShm, too
// little room is an rt::Error. Collective over comm.
TransportChoice resolve_transport(TransportChoice transport, MPI_Comm comm, size_t region_floats = 0,
                                  const StallPolicy* stall = nullptr);
// The transport `how` (kShm, kTcp or kMpi, as resolve_transport returns) over comm, and its name in
// messages ("shared memory", "TCP", "MPI point-to-point").
std::unique_ptr<Transport> make_transport(TransportChoice how, MPI_Comm comm, const StallPolicy& stall,
                                          const std::string& tcp_interface);
const char* transport_words(TransportChoice how);
// Whether every rank of comm can reach the others' shared memory (one host). Collective over comm.
bool shares_memory(MPI_Comm comm);

}  // namespace rt
