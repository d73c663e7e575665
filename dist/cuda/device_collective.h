// The collectives of the CUDA backend, on GPU memory (Note [Device collectives] in
// dist/collective.h): ringtrain's ring, with NCCL point-to-point moving each step's chunk between
// neighbours and a kernel of ours adding it in (dist.allreduce = "ring"), and NCCL's own
// ncclAllReduce as the baseline to compare against (dist.allreduce = "nccl"). Plain C++: streams
// are passed as void* (a cudaStream_t), so the trainer includes this without the CUDA headers.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "dist/collective.h"
#include "dist/device_watch.h"
#include "dist/host_layout.h"
#include "dist/statistics_group.h"
#include "dist/stall_wait.h"
#include "dist/wire_format.h"

namespace rt {

// spec.allreduce kRing (ours over NCCL point-to-point) or kNccl (ncclAllReduce) over comm's ranks,
// one GPU each, on the GPU select_cuda_device chose; each bucket's work is watched with `stall`
// (Note [GPU watchdog] in dist/stall_watch.h), and so is the warm-up that makes NCCL's connections
// at set-up. spec.hierarchy as for make_collective: the ring is then two-level, NCCL inside each
// host and NCCL across; spec.transport is not asked (NCCL moves the bytes). Collective over comm.
// rt::Error in a build without CUDA.
std::unique_ptr<Collective> make_device_collective(const CollectiveSpec& spec, MPI_Comm comm, const StallPolicy& stall);
// NCCL point-to-point between comm's ranks (the ring's exchange). Collective over comm.
std::unique_ptr<DeviceExchange> make_nccl_exchange(MPI_Comm comm);
// Note [Group batch norm] on the GPU: averages over `group`'s ranks (one GPU each) with
// ncclAllReduce on the compute stream, each watched with `stall` (its world_ranks naming the
// group's ranks) and reported at step(). Collective over group. rt::Error in a build without CUDA.
std::unique_ptr<StatisticsGroup> make_device_statistics_group(MPI_Comm group, const StallPolicy& stall,
                                                              std::function<int64_t()> step);
// NCCL's version, "2.27.3"; "" in a build without CUDA.
std::string nccl_version();
// ringtrain's ring on GPU memory over any exchange, watched with `stall`.
std::unique_ptr<Collective> make_device_ring(std::unique_ptr<DeviceExchange> exchange, Wire wire,
                                             const StallPolicy& stall);
// The two-level ring (Note [Two-level ring]) on GPU memory: `local` joins this rank's host's ranks
// in place.local_ring's order, `cross` the ranks of place.cross_ring. Its phase across hosts is
// watched with across_hosts_abort_s(stall.abort_s).
std::unique_ptr<Collective> make_device_two_level_ring(std::unique_ptr<DeviceExchange> local,
                                                       std::unique_ptr<DeviceExchange> cross,
                                                       const TwoLevelPlace& place, Wire wire, const StallPolicy& stall);

}  // namespace rt
