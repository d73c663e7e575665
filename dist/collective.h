// An averaging allreduce over all ranks: ringtrain's own ring, or the library's MPI_Allreduce
// for comparison (dist.allreduce = "ring" | "mpi"). The ring moves its bytes over shared memory,
// its own TCP connections or MPI point-to-point (dist.transport = "auto" | "shm" | "tcp" | "mpi";
// auto: shared memory when every rank is on one host, else TCP), its gradients in float32 or a
// 16-bit type (dist.wire).
#pragma once

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/run_settings.h"
#include "dist/host_layout.h"
#include "dist/mpi_transport.h"
#include "dist/ring_allreduce.h"
#include "dist/shm_transport.h"
#include "dist/tcp_transport.h"

namespace rt {

class Collective {
 public:
  virtual ~Collective() = default;
  // data[0, count) becomes the average over ranks, on every rank.
  virtual void average(float* data, int64_t count, const WaitContext& context) = 0;
  // data[0, count) is averaged and the optimizer applied where this rank finished the average
  // (Note [Sharded update]): every rank ends with all of update.gather[0, count) updated. A
  // collective without phases averages everything everywhere and updates the whole range.
  virtual void average_and_update(float* data, int64_t count, const ShardUpdate& update, const WaitContext& context) {
    average(data, count, context);
    if (count > 0) update.apply(0, count);
    if (update.finish) update.finish(0, count);
  }
  // Whether average_and_update shares the update out (each rank updates only the part it
  // finished), and the offsets inside [0, count) where that part passes from one rank to the
  // next: the same list on every rank, for Note [Norms across shards]. None where it does not.
  virtual bool shards_update() const { return false; }
  virtual std::vector<int64_t> shard_cuts(int64_t count) const {
    (void)count;
    return {};
  }
  // Shares what average_and_update's update wrote into data[0, count) (optimizer state) from the
  // rank that wrote each part to every rank. Nothing to do where every rank updated everything.
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
  // Where the last average() switched from reduce-scatter to all-gather, if it has such phases.
  virtual std::optional<std::chrono::steady_clock::time_point> last_phase_switch() const { return std::nullopt; }

  // Note [Device collectives]: a collective on GPU memory (dist/cuda/device_collective.h) only
  // enqueues its work: average() returns at once, its transfers and kernels run on a
  // communication stream of their own. Three calls order that stream against the compute stream
  // without ever blocking the host; host collectives, which work on finished memory, ignore them.
  // At start: how many buckets there will be and the largest one, so buffers are sized once.
  virtual void prepare(size_t buckets, int64_t largest_bucket_floats) { (void)buckets, (void)largest_bucket_floats; }
  // Main thread: the compute stream has enqueued everything bucket `bucket`'s gradients depend on;
  // the bucket's average() will wait for that point on the GPU.
  virtual void mark_ready(int bucket) { (void)bucket; }
  // Main thread, after every average() of the step has returned: work enqueued on the compute
  // stream from now on waits for the collective's.
  virtual void join_compute() {}
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

}  // namespace rt
