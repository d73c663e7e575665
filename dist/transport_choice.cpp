#include "dist/transport_choice.h"

#include "base/check.h"
#include "dist/mpi_transport.h"
#include "dist/shm_transport.h"
#include "dist/tcp_transport.h"

namespace rt {

TransportChoice resolve_transport(TransportChoice transport, MPI_Comm comm, size_t region_floats,
                                  const StallPolicy* stall) {
  if (transport == TransportChoice::kTcp || transport == TransportChoice::kMpi) return transport;
  // kShm on several hosts: ShmTransport's constructor says so.
  if (transport == TransportChoice::kAuto && !ShmTransport::available(comm)) return TransportChoice::kTcp;
  const ShmTransport::Space space = ShmTransport::check_space(comm, region_floats);
  if (space.fits) return TransportChoice::kShm;
  RT_CHECK(transport == TransportChoice::kAuto, "dist.transport = \"shm\": ", space.shortfall());
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0 && stall && stall->warn)
    stall->warn(space.shortfall() +
                "; the ring runs over TCP on this host instead, which is slower (dist.transport = "
                "\"tcp\" says so and keeps this quiet)");
  return TransportChoice::kTcp;
}

std::unique_ptr<Transport> make_transport(TransportChoice how, MPI_Comm comm, const StallPolicy& stall,
                                          const std::string& tcp_interface) {
  if (how == TransportChoice::kShm) return std::make_unique<ShmTransport>(comm, stall);
  if (how == TransportChoice::kTcp) return std::make_unique<TcpTransport>(comm, stall, tcp_interface);
  RT_ASSERT(how == TransportChoice::kMpi);
  return std::make_unique<MpiTransport>(comm, stall);
}

const char* transport_words(TransportChoice how) {
  return how == TransportChoice::kShm ? "shared memory" : how == TransportChoice::kTcp ? "TCP" : "MPI point-to-point";
}

bool shares_memory(MPI_Comm comm) { return ShmTransport::available(comm); }

}  // namespace rt
