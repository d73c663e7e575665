#include "dist/collective.h"

#include "base/check.h"
#include "dist/host_layout.h"
#include "dist/ring_schedule.h"
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
           (wire_ == Wire::kFp32 ? "" : str_cat(", ", name_of(wire_), " on the wire"));
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
  bool shards_update() const override { return true; }
  std::vector<int64_t> shard_cuts(int64_t count) const override {
    std::vector<int64_t> cuts;
    chunk_cuts(count, transport_->world(), 0, cuts);
    return cuts;
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

Hierarchy choose_hierarchy(Hierarchy setting, MPI_Comm comm, const StallPolicy& stall, HostLayout* layout) {
  if (setting == Hierarchy::kFlat) return Hierarchy::kFlat;
  *layout = host_layout(comm);
  std::string why;
  const Hierarchy h = resolve_hierarchy(setting, *layout, &why);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  if (!why.empty() && rank == 0 && stall.warn) stall.warn(why);
  return h;
}

std::unique_ptr<Collective> make_collective(const CollectiveSpec& spec, MPI_Comm comm, const StallPolicy& stall,
                                            size_t region_floats) {
  if (spec.allreduce == Allreduce::kMpi) {
    // A loaded config never asks these (config/config.cpp refuses them); a caller in code may.
    RT_CHECK(spec.hierarchy != Hierarchy::kTwoLevel,
             "make_collective: the two-level ring applies to ringtrain's ring, not MPI_Allreduce");
    RT_CHECK(spec.wire == Wire::kFp32, "make_collective: dist.wire = \"", name_of(spec.wire),
             "\" applies to ringtrain's ring, not MPI_Allreduce");
    return std::make_unique<MpiCollective>(comm);
  }
  RT_CHECK(spec.allreduce == Allreduce::kRing, "make_collective: dist.allreduce = \"", name_of(spec.allreduce),
           "\" moves GPU memory (make_device_collective)");
  HostLayout layout;
  if (choose_hierarchy(spec.hierarchy, comm, stall, &layout) == Hierarchy::kTwoLevel)
    return make_two_level_collective(comm, layout, stall, spec, region_floats);
  const TransportChoice how = resolve_transport(spec.transport, comm, region_floats, &stall);
  return std::make_unique<RingCollective>(make_transport(how, comm, stall, spec.tcp_interface), transport_words(how),
                                          spec.wire);
}

}  // namespace rt
