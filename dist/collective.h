// An averaging allreduce over all ranks: ringtrain's own ring, or the library's MPI_Allreduce
// for comparison (dist.allreduce = "ring" | "mpi").
#pragma once

#include <memory>
#include <string>

#include "dist/mpi_transport.h"
#include "dist/ring_allreduce.h"

namespace rt {

class Collective {
 public:
  virtual ~Collective() = default;
  // data[0, count) becomes the average over ranks, on every rank.
  virtual void average(float* data, int64_t count, const WaitContext& context) = 0;
};

std::unique_ptr<Collective> make_collective(const std::string& algorithm, MPI_Comm comm, const StallPolicy& stall);

}  // namespace rt
