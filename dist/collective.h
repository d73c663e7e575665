// An averaging allreduce over all ranks: ringtrain's own ring, or the library's MPI_Allreduce
// for comparison (dist.allreduce = "ring" | "mpi"). The ring moves its bytes over shared memory,
// its own TCP connections or MPI point-to-point (dist.transport = "auto" | "shm" | "tcp" | "mpi";
// auto: shared memory when every rank is on one host, else TCP), its gradients in float32 or a
// 16-bit type (dist.wire).
#pragma once

#include <mpi.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/run_settings.h"
#include "dist/host_layout.h"
#include "dist/shard_update.h"
#include "dist/stall_wait.h"
#include "dist/transport.h"

namespace rt {

using PhaseSwitch = std::optional<std::chrono::steady_clock::time_point>;

// Note [Device collectives]: a collective on GPU memory (dist/cuda/device_collective.h) only
// enqueues its work: average() returns at once, its transfers and kernels run on a communication
// stream of their own. Its StreamOrder orders that stream against the compute stream without
// ever blocking the host; host collectives, which work on finished memory, have none.
class StreamOrder {
 public:
  virtual ~StreamOrder() = default;
  // At start: how many buckets there will be and the largest one, so buffers are sized once.
  virtual void prepare(size_t buckets, int64_t largest_bucket_floats) = 0;
  // Main thread: the compute stream has enqueued everything bucket `bucket`'s gradients depend on;
  // the bucket's average() will wait for that point on the GPU.
  virtual void mark_ready(int bucket) = 0;
  // Main thread, after every average() of the step has returned (and after gather_updated): work
  // enqueued on the compute stream from now on waits for the collective's.
  virtual void join_compute() = 0;
  // Communication thread, before work of the caller's own for bucket context.bucket (PowerSGD's
  // products, Note [PowerSGD on the GPU]): the communication stream, made to wait for the
  // bucket's gradients as average() would; a cudaStream_t.
  virtual void* communication_stream(const WaitContext& context) = 0;
};

class Collective {
 public:
  virtual ~Collective() = default;
  // data[0, count) becomes the average over ranks, on every rank. Returns where it switched from
  // reduce-scatter to all-gather, if it has such phases (for the timeline).
  PhaseSwitch average(float* data, int64_t count, const WaitContext& context) {
    return reduce(data, count, context, nullptr);
  }
  // data[0, count) is averaged and the optimizer applied where this rank finished the average
  // (Note [Sharded update]): every rank ends with all of update.gathered()[0, count) updated. A
  // collective that does not shard averages everything everywhere and updates the whole range, on
  // the host only: on GPU memory (stream_order() set) it refuses the update, which would run
  // outside its communication stream.
  PhaseSwitch average(float* data, int64_t count, const WaitContext& context, const ShardUpdate& update);
  // Where a sharded update passes from one rank's part of data[0, count) to the next's: offsets
  // inside (0, count), the same list on every rank, for Note [Norms across shards]. nullopt where
  // the collective does not share the update out.
  virtual std::optional<std::vector<int64_t>> shard_cuts(int64_t count) const {
    (void)count;
    return std::nullopt;
  }
  bool shards_update() const { return shard_cuts(0).has_value(); }
  // Shares what a sharded update wrote into data[0, count) (optimizer state) from the rank that
  // wrote each part to every rank. Nothing to do where every rank updated everything.
  virtual void gather_updated(float* data, int64_t count, const WaitContext& context) {
    (void)data, (void)count, (void)context;
  }
  // "ringtrain's ring over shared memory", "MPI_Allreduce": for logs and benchmark records.
  virtual std::string describe() const = 0;
  // Zeroed memory for the buffers average() will be given, in which it may move them without
  // copies (Transport::allocate). Collective.
  virtual std::shared_ptr<float> allocate(size_t floats) {
    return std::shared_ptr<float>(new float[floats](), std::default_delete<float[]>());
  }
  // A collective on GPU memory's ordering against the compute stream; null on the host.
  virtual StreamOrder* stream_order() { return nullptr; }
  // This rank's ring links (Note [Naming the straggler] in app/run/straggler_report.h): under the
  // two-level ring, those of the ring across hosts, the network's. The communication thread
  // writes their receive times: read them after the step's averages are done.
  virtual Links links() const { return {}; }

 protected:
  // average()'s work; `update` is given only where shard_cuts says the collective shards.
  virtual PhaseSwitch reduce(float* data, int64_t count, const WaitContext& context, const ShardUpdate* update) = 0;
};

// What a job asks of its gradient collective: the [dist] keys that choose it, as the config holds
// them (the config refuses combinations that cannot work before anything is built).
struct CollectiveSpec {
  Allreduce allreduce = Allreduce::kRing;
  TransportChoice transport = TransportChoice::kAuto;  // under the two-level ring: between hosts
  std::string tcp_interface = "";                      // "": any that reaches
  Hierarchy hierarchy = Hierarchy::kFlat;
  Wire wire = Wire::kFp32;
};

// Collective over comm. region_floats: what allocate() will be asked for (0: nothing), so that
// the shared-memory transport is chosen only where /dev/shm has room for it. The two-level ring of
// Note [Two-level ring] where choose_hierarchy says so.
std::unique_ptr<Collective> make_collective(const CollectiveSpec& spec, MPI_Comm comm, const StallPolicy& stall,
                                            size_t region_floats = 0);
// dist.hierarchy for comm's ranks as they sit on hosts (resolve_hierarchy in host_layout.h), with
// *layout where it was needed; where kAuto fell back to the flat ring for uneven hosts, rank 0
// says why through stall.warn. Collective over comm; the CPU's and the GPU's collectives both ask it.
Hierarchy choose_hierarchy(Hierarchy setting, MPI_Comm comm, const StallPolicy& stall, HostLayout* layout);

}  // namespace rt
