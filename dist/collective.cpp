#include "dist/collective.h"

#include "base/check.h"
#include "dist/two_level_collective.h"

namespace rt {
namespace {

class RingCollective final : public Collective {
 public:
  RingCollective(std::unique_ptr<Transport> transport, std::string transport_name, Wire wire)
      : transport_(std::move(transport)),
        ring_(*transport_, int64_t{1} << 17, wire),
        transport_name_(std::move(transport_name)),
        wire_(wire) {}
  std::string describe() const override {
    return "ringtrain's ring over " + transport_name_ +
           (wire_ == Wire::kFp32 ? "" : str_cat(", ", wire_name(wire_), " on the wire"));
  }
  std::optional<std::chrono::steady_clock::time_point> last_phase_switch() const override {
    return ring_.last_phase_switch();
  }
  void average(float* data, int64_t count, const WaitContext& context) override { ring_.run(data, count, context); }
  void average_and_update(float* data, int64_t count, const ShardUpdate& update, const WaitContext& context) override {
    ring_.run(data, count, context, update);
  }
  void gather_updated(float* data, int64_t count, const WaitContext& context) override {
    ring_.gather(data, count, context);
  }
  std::shared_ptr<float> allocate(size_t floats) override { return transport_->allocate(floats); }

 private:
  std::unique_ptr<Transport> transport_;
  RingAllreduce ring_;
  std::string transport_name_;
  Wire wire_;
};

class MpiCollective final : public Collective {
 public:
  explicit MpiCollective(MPI_Comm comm) {
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_size(comm_, &world_);
  }
  ~MpiCollective() override { MPI_Comm_free(&comm_); }
  std::string describe() const override { return "MPI_Allreduce"; }
  void average(float* data, int64_t count, const WaitContext& context) override {
    constexpr int64_t kMaxCount = int64_t{1} << 30;
    for (int64_t at = 0; at < count; at += kMaxCount)
      RT_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(kMaxCount, count - at)), MPI_FLOAT,
                             MPI_SUM, comm_) == MPI_SUCCESS,
               "MPI_Allreduce failed in step ", context.step, ", bucket ", context.bucket);
    const float scale = 1.0f / static_cast<float>(world_);
    for (int64_t i = 0; i < count; ++i) data[i] *= scale;
  }

 private:
  MPI_Comm comm_;
  int world_ = 1;
};

}  // namespace

std::string resolve_transport(const std::string& transport, MPI_Comm comm, size_t region_floats,
                              const StallPolicy* stall) {
  RT_CHECK(transport == "auto" || transport == "shm" || transport == "tcp" || transport == "mpi", "unknown transport '",
           transport, "': expected auto, shm, tcp or mpi");
  if (transport == "tcp" || transport == "mpi") return transport;
  // "shm" on several hosts: ShmTransport's constructor says so.
  if (transport == "auto" && !ShmTransport::available(comm)) return "tcp";
  const ShmTransport::Space space = ShmTransport::check_space(comm, region_floats);
  if (space.fits) return "shm";
  RT_CHECK(transport == "auto", "dist.transport = \"shm\": ", space.shortfall());
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (rank == 0 && stall && stall->warn)
    stall->warn(space.shortfall() +
                "; the ring runs over TCP on this host instead, which is slower (dist.transport = "
                "\"tcp\" says so and keeps this quiet)");
  return "tcp";
}

std::unique_ptr<Collective> make_collective(const std::string& algorithm, MPI_Comm comm, const StallPolicy& stall,
                                            const std::string& transport, const std::string& tcp_interface, Wire wire,
                                            size_t region_floats, const std::string& hierarchy) {
  if (algorithm == "ring") {
    RT_CHECK(transport == "auto" || transport == "shm" || transport == "tcp" || transport == "mpi",
             "unknown transport '", transport, "': expected auto, shm, tcp or mpi");
    if (hierarchy != "flat") {
      const HostLayout layout = host_layout(comm);
      std::string why;
      const Hierarchy h = resolve_hierarchy(hierarchy, layout, &why);
      int rank = 0;
      MPI_Comm_rank(comm, &rank);
      if (!why.empty() && rank == 0 && stall.warn) stall.warn(why);
      if (h == Hierarchy::kTwoLevel)
        return make_two_level_collective(comm, layout, stall, transport, tcp_interface, wire, region_floats);
    }
    const std::string how = resolve_transport(transport, comm, region_floats, &stall);
    if (how == "shm")
      return std::make_unique<RingCollective>(std::make_unique<ShmTransport>(comm, stall), "shared memory", wire);
    if (how == "tcp")
      return std::make_unique<RingCollective>(std::make_unique<TcpTransport>(comm, stall, tcp_interface), "TCP", wire);
    return std::make_unique<RingCollective>(std::make_unique<MpiTransport>(comm, stall), "MPI point-to-point", wire);
  }
  if (algorithm == "mpi") {
    RT_CHECK(hierarchy != "two_level",
             "dist.hierarchy = \"two_level\" applies to ringtrain's ring; MPI_Allreduce (dist.allreduce = \"mpi\") "
             "runs the MPI library's own algorithm");
    RT_CHECK(wire == Wire::kFp32, "dist.wire = \"", wire_name(wire),
             "\" applies to ringtrain's ring; MPI_Allreduce "
             "(dist.allreduce = \"mpi\") sums in float32 on the wire");
    return std::make_unique<MpiCollective>(comm);
  }
  RT_CHECK(false, "unknown allreduce algorithm '", algorithm, "': expected ring or mpi");
  return nullptr;
}

}  // namespace rt
