// The ranks whose batch-norm statistics are pooled (train.bn_group; Note [Group batch norm] in
// nn/layers/group_batch_norm.h): G consecutive ranks of one host, averaging small vectors over a
// shared-memory ring of their own, apart from the gradients' ring and from MPI, so that the
// compute thread can average while the communication thread runs the gradients' ring.
#pragma once

#include <mpi.h>

#include <functional>
#include <memory>
#include <string>

#include "dist/host_layout.h"
#include "dist/stall_wait.h"

namespace rt {

class StatisticsGroup {
 public:
  virtual ~StatisticsGroup() = default;
  virtual int size() const = 0;
  // values[0, count), in the memory of the layer's device (host memory on the CPU, GPU memory for
  // the group over NCCL), becomes the average over the group's ranks: the same bits on every rank of
  // the group. Every rank of the group calls it at the same point of its schedule.
  virtual void average(float* values, int64_t count) = 0;
};

// "" when every host of `layout` holds a multiple of group_size ranks, else why not, naming the
// layout: "train.bn_group = 4 needs each host's ranks in groups of 4; this job has 2 hosts x 3
// ranks".
std::string statistics_group_refusal(int group_size, const HostLayout& layout);
// This rank's group of group_size ranks (its host's ranks in rank order, cut into groups) as a
// communicator, and `stall` naming its ranks. Collective over comm; rt::Error naming the layout
// where it does not divide into groups.
struct StatisticsGroupComm {
  MPI_Comm comm = MPI_COMM_NULL;  // freed with this
  StallPolicy stall;
  StatisticsGroupComm() = default;
  StatisticsGroupComm(StatisticsGroupComm&& other) noexcept : comm(other.comm), stall(std::move(other.stall)) {
    other.comm = MPI_COMM_NULL;
  }
  StatisticsGroupComm& operator=(StatisticsGroupComm&&) = delete;
  ~StatisticsGroupComm();
};
StatisticsGroupComm statistics_group_comm(int group_size, MPI_Comm comm, const StallPolicy& stall);
// That group on the CPU: a shared-memory ring over it, its waits watched by `stall` and reported
// at step(). Collective over comm. (On the GPU: make_device_statistics_group, dist/cuda.)
std::unique_ptr<StatisticsGroup> make_statistics_group(int group_size, MPI_Comm comm, const StallPolicy& stall,
                                                       std::function<int64_t()> step);

}  // namespace rt
