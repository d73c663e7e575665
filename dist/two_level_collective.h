// The two-level ring of Note [Two-level ring] (host_layout.h) on host memory: a ring inside each
// host over shared memory, and rings across hosts among the ranks of equal local position over
// TCP or MPI point-to-point, composed once in two_level_ring.h.
#pragma once

#include <mpi.h>

#include <memory>
#include <string>

#include "dist/collective.h"
#include "dist/host_layout.h"

namespace rt {

// Collective over comm: which ranks share a host (MPI_COMM_TYPE_SHARED). With the environment
// variable RINGTRAIN_FAKE_HOST_RANKS=K each host's ranks are further split, in rank order, into
// hosts of K: a test's stand-in for several hosts on one machine.
HostLayout host_layout(MPI_Comm comm);

// This rank's two rings as communicators: its host's ranks in ring order, and the ranks of equal
// local position across hosts in host order (two_level_place). Collective over comm; free both.
struct TwoLevelComms {
  TwoLevelPlace place;
  MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
};
TwoLevelComms split_two_level(MPI_Comm comm, const HostLayout& layout);

// Collective over comm. spec.transport names the rings across hosts (kAuto and kTcp: TCP; kMpi;
// kShm, possible only where the "hosts" share memory); inside a host the ring uses shared memory
// where /dev/shm has room for region_floats, else TCP. spec.wire applies across hosts.
std::unique_ptr<Collective> make_two_level_collective(MPI_Comm comm, const HostLayout& layout, const StallPolicy& stall,
                                                      const CollectiveSpec& spec, size_t region_floats);

}  // namespace rt
