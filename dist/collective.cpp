#include "dist/collective.h"

#include "base/check.h"
#include "dist/host_layout.h"
#include "dist/ring_schedule.h"
#include "dist/transport_choice.h"
#include "dist/transport_primitives.h"
#include "dist/two_level_collective.h"

namespace rt {
namespace {

class RingCollective final : public Collective {
 public:
  RingCollective(std::unique_ptr<Transport> transport, std::string transport_name, Wire wire)
      : transport_(std::move(transport)),
        ring_(transport_ring(*transport_, wire)),
        transport_name_(std::move(transport_name)),
        wire_(wire) {}
  std::string describe() const override {
    return "ringtrain's ring over " + transport_name_ +
           (wire_ == Wire::kFp32 ? "" : str_cat(", ", name_of(wire_), " on the wire"));
  }
  void gather_updated(float* data, int64_t count, const WaitContext& context) override {
    ring_.gather(data, count, context);
  }
  std::optional<std::vector<int64_t>> shard_cuts(int64_t count) const override {
    std::vector<int64_t> cuts;
    chunk_cuts(count, transport_->world(), 0, cuts);
    return cuts;
  }
  std::shared_ptr<float> allocate(size_t floats) override { return transport_->allocate(floats); }
  Links links() const override {
    Links links = transport_->links();
    const int r = transport_->rank(), p = transport_->world();
    links.prev = ring_prev(r, p), links.next = ring_next(r, p);
    return links;
  }

 protected:
  PhaseSwitch reduce(float* data, int64_t count, const WaitContext& context, const ShardUpdate* update) override {
    if (update)
      ring_.run(data, count, context, *update);
    else
      ring_.run(data, count, context);
    return ring_.last_phase_switch();
  }

 private:
  std::unique_ptr<Transport> transport_;
  RingExecutor ring_;
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

 protected:
  PhaseSwitch reduce(float* data, int64_t count, const WaitContext& context, const ShardUpdate*) override {
    constexpr int64_t kMaxCount = int64_t{1} << 30;
    for (int64_t at = 0; at < count; at += kMaxCount)
      RT_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(kMaxCount, count - at)), MPI_FLOAT,
                             MPI_SUM, comm_) == MPI_SUCCESS,
               "MPI_Allreduce failed in step ", context.step, ", bucket ", context.bucket);
    const float scale = 1.0f / static_cast<float>(world_);
    for (int64_t i = 0; i < count; ++i) data[i] *= scale;
    return std::nullopt;
  }

 private:
  MPI_Comm comm_;
  int world_ = 1;
};

}  // namespace

PhaseSwitch Collective::average(float* data, int64_t count, const WaitContext& context, const ShardUpdate& update) {
  if (shards_update()) return reduce(data, count, context, &update);
  // Below, the update runs on the calling thread once reduce() has returned: on the host that is
  // after the average, but a collective on GPU memory has then only enqueued it, and the update's
  // kernels would not be ordered after it on the communication stream (Note [Device collectives]).
  RT_CHECK(stream_order() == nullptr, "Collective::average: ", describe(),
           " does not shard the update and works on GPU memory, where the update would run outside its "
           "communication stream; update after the average instead (make_sharded_update gives none here)");
  const PhaseSwitch at = reduce(data, count, context, nullptr);
  if (count > 0) update.apply_to(0, count);
  update.finish_for(0, count);
  return at;
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
