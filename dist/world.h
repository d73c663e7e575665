// The set of processes training together. Launched by mpirun (or any launcher that sets
// OMPI_COMM_WORLD_SIZE / PMI_SIZE / PMIX_RANK), it initialises MPI; started on its own it is a
// world of one and never touches MPI. Callers may rely on: rank 0 exists in every world; every
// rank sees the same size; local_rank/local_size count the ranks on this host.
#pragma once

#include <mpi.h>

#include <string>
#include <cstdint>
#include <vector>

#include "base/cpu_budget.h"
#include "dist/stall_wait.h"

namespace rt {

// Note [Watched collectives]: a rank that freezes or dies between the ring's steps, unnoticed by
// its launcher, leaves the others waiting in one of World's collectives: the save agreement after
// every step, the replica check, an epoch's figures, the evaluation's totals. A blocking MPI call
// would wait there for ever. So a collective given a stall policy starts MPI's non-blocking form
// and polls it as the ring polls a transfer (stall_wait.h): past dist.stall_warn_s it warns, past
// dist.stall_abort_s it ends the job, naming what it waited for. MPI's collectives cannot say
// which rank has not joined; the frozen rank is the one that reports nothing.
struct CollectiveWatch {
  const StallPolicy* stall = nullptr;  // nullptr: wait as long as it takes
  std::string what;                    // "the replica check after step 20": named in a stall's report
};

class World {
 public:
  // Initialise once, at the start of main.
  static World& init(int* argc, char*** argv);
  static World& get();  // after init; a world of one if init was never called
  // A world of one that never touches MPI, whatever launched the process (tests use it for
  // single-rank references inside a multi-rank run).
  static World single();

  int rank() const { return rank_; }
  int size() const { return size_; }
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  const std::string& host() const { return host_; }
  // This rank's share of the CPUs it may use (base/cpu_budget.h), agreed with the ranks on its host.
  const CpuShare& cpu_share() const { return cpu_share_; }
  // More ranks on this rank's CPUs than there are CPUs: waiting ranks must not spin.
  bool oversubscribed() const { return cpu_share_.oversubscribed; }
  bool uses_mpi() const { return mpi_; }
  MPI_Comm comm() const { return comm_; }
  // "[rank 3] " on ranks other than 0, "" on rank 0: prefixes every log line.
  std::string tag() const;

  // Takes the whole job down after printing `message` (with rank and host) to stderr; the
  // process (and under MPI the launcher, as MPI_Abort's error code) exits with `status`.
  [[noreturn]] void abort(const std::string& message, int status = 1) const;
  static constexpr int kAbortGraceS = 5;  // how long MPI_Abort may take before the rank exits itself
  void finalize();

  // Collectives used outside the gradient ring (all ranks must call them, in the same order),
  // waiting as `watch` says (Note [Watched collectives]).
  void allreduce_sum(double* values, int count, const CollectiveWatch& watch = {}) const;
  void allreduce_sum(float* values, int64_t count, const CollectiveWatch& watch = {}) const;
  void allreduce_max(double* values, int count) const;
  // Every rank's `value`, indexed by rank, on every rank.
  std::vector<double> allgather(double value, const CollectiveWatch& watch = {}) const;
  std::vector<std::string> allgather(const std::string& value, const CollectiveWatch& watch = {}) const;
  // Every rank's `values` (the same count on every rank), rank after rank, on every rank.
  std::vector<uint64_t> allgather(const std::vector<uint64_t>& values, const CollectiveWatch& watch = {}) const;
  void broadcast(float* values, int64_t count, int root) const;
  // root's value, on every rank.
  void broadcast(std::string& value, int root, const CollectiveWatch& watch = {}) const;
  void broadcast(std::vector<double>& values, int root, const CollectiveWatch& watch = {}) const;
  void barrier() const;

 private:
  World() = default;
  // Throws where a launcher started several tasks but this one is a world of 1 (launcher_check.h).
  void refuse_lone_task() const;
  // Completes a collective that `call` (its MPI name) started, waiting as `watch` says.
  void complete(MPI_Request request, const char* call, const CollectiveWatch& watch) const;
  bool mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
  std::string host_;
  CpuShare cpu_share_;
  MPI_Comm comm_ = MPI_COMM_NULL;
};

// True when this process was started by an MPI launcher.
bool launched_by_mpi();
// The MPI library this binary runs on: the first line of MPI_Get_library_version.
std::string mpi_library_version();

}  // namespace rt
