#include "dist/two_level_collective.h"

#include <cstdlib>

#include "base/check.h"
#include "dist/ring_schedule.h"
#include "dist/shm_transport.h"
#include "dist/transport_choice.h"
#include "dist/transport_primitives.h"
#include "dist/two_level_ring.h"

namespace rt {
namespace {

// A communicator over `members` (world ranks of comm, in ring order); the caller is one of them.
// Collective over comm: every rank passes its own group's members, and the groups partition comm.
MPI_Comm group_comm(MPI_Comm comm, const std::vector<int>& members, int key_of_caller) {
  MPI_Comm sub = MPI_COMM_NULL;
  RT_CHECK(MPI_Comm_split(comm, members.front() + 1, key_of_caller, &sub) == MPI_SUCCESS,
           "MPI_Comm_split for the two-level ring failed");
  return sub;
}

// The ring across hosts with its waits announced in this rank's shared-memory inbox: a rank of
// this host stalled on this one then names the rank beyond the network that this one waits for,
// not this one (a dead link stalls both, and the ring inside a host gives up first).
class AnnouncedWaits final : public Transport {
 public:
  AnnouncedWaits(std::unique_ptr<Transport> across, ShmTransport& inside, int prev_world_rank)
      : across_(std::move(across)), inside_(inside), prev_(prev_world_rank) {}
  int rank() const override { return across_->rank(); }
  int world() const override { return across_->world(); }
  std::shared_ptr<float> allocate(size_t floats) override { return across_->allocate(floats); }
  Handle post_send(const void* data, size_t bytes, int peer) override { return across_->post_send(data, bytes, peer); }
  Handle post_recv(void* data, size_t bytes, int peer) override { return across_->post_recv(data, bytes, peer); }
  Handle post_recv_reduce(float* dst, size_t count, int peer, float scale) override {
    return across_->post_recv_reduce(dst, count, peer, scale);
  }
  void wait(Handle handle, const WaitContext& context) override {
    inside_.waiting_elsewhere(prev_);
    across_->wait(handle, context);
    inside_.waiting_elsewhere(-1);
  }
  void reset() override { across_->reset(); }
  Links links() const override { return across_->links(); }

 private:
  std::unique_ptr<Transport> across_;
  ShmTransport& inside_;
  int prev_;
};

class TwoLevelCollective final : public Collective {
 public:
  TwoLevelCollective(MPI_Comm comm, const HostLayout& layout, const StallPolicy& stall, const CollectiveSpec& spec,
                     size_t region_floats)
      : wire_(spec.wire), layout_words_(layout.describe()) {
    const TwoLevelComms comms = split_two_level(comm, layout);
    const TwoLevelPlace& place = comms.place;
    local_comm_ = comms.local;
    cross_comm_ = comms.cross;
    local_name_ = resolve_transport(TransportChoice::kAuto, local_comm_, region_floats, &stall);
    cross_name_ = spec.transport == TransportChoice::kAuto ? TransportChoice::kTcp : spec.transport;
    RT_CHECK(cross_name_ != TransportChoice::kShm || shares_memory(cross_comm_),
             "dist.transport = \"shm\" with the two-level ring: shared memory cannot join ranks on different "
             "hosts (leave dist.transport = \"auto\" for TCP across hosts)");
    // Messages name world ranks and the ring they come from.
    StallPolicy inside = stall, across = stall;
    inside.world_ranks = place.local_ring;
    inside.ring = str_cat(" in the ring inside host ", place.cross, " (ranks ", place.local_ring.front(), " to ",
                          place.local_ring.back(), ")");
    across.world_ranks = place.cross_ring;
    across.ring = " in the ring across hosts";
    // The stuck host's ranks name the stuck one (the shared-memory blame chain), so they are
    // given the first word.
    across.abort_s = across_hosts_abort_s(stall.abort_s);
    local_t_ = make_transport(local_name_, local_comm_, inside, spec.tcp_interface);
    cross_t_ = make_transport(cross_name_, cross_comm_, across, spec.tcp_interface);
    if (auto* shm = dynamic_cast<ShmTransport*>(local_t_.get()))
      cross_t_ = std::make_unique<AnnouncedWaits>(
          std::move(cross_t_), *shm,
          place.cross_ring[static_cast<size_t>(ring_prev(place.cross, static_cast<int>(place.cross_ring.size())))]);
    // Phases 1 and 3 in float32 with no scaling; phase 2 scales to the world's average.
    local_ = std::make_unique<RingExecutor>(transport_ring(*local_t_, Wire::kFp32, 1.0f));
    cross_ =
        std::make_unique<RingExecutor>(transport_ring(*cross_t_, wire_, 1.0f / static_cast<float>(layout.world())));
    two_ = std::make_unique<TwoLevelRing>(*local_, *cross_, place);
  }
  ~TwoLevelCollective() override {
    two_.reset();
    local_.reset();
    cross_.reset();
    local_t_.reset();
    cross_t_.reset();
    MPI_Comm_free(&local_comm_);
    MPI_Comm_free(&cross_comm_);
  }

  std::string describe() const override {
    return str_cat("ringtrain's two-level ring (", layout_words_, ": ", transport_words(local_name_),
                   " inside a host, ", transport_words(cross_name_), " between hosts",
                   wire_ == Wire::kFp32 ? "" : str_cat(", ", name_of(wire_), " on the wire between them"), ")");
  }
  std::shared_ptr<float> allocate(size_t floats) override { return local_t_->allocate(floats); }
  void gather_updated(float* data, int64_t count, const WaitContext& context) override {
    for (const RingPhase& phase : two_->gather_updated(data, count, context)) phase.run();
  }
  std::optional<std::vector<int64_t>> shard_cuts(int64_t count) const override { return two_->shard_cuts(count); }
  Links links() const override {  // the ring across hosts: the network's links
    Links links = cross_t_->links();
    const std::vector<int>& ring = two_->place().cross_ring;
    const int at = two_->place().cross, n = static_cast<int>(ring.size());
    links.prev = ring[static_cast<size_t>(ring_prev(at, n))], links.next = ring[static_cast<size_t>(ring_next(at, n))];
    return links;
  }

 protected:
  PhaseSwitch reduce(float* data, int64_t count, const WaitContext& context, const ShardUpdate* update) override {
    for (const RingPhase& phase : two_->average(data, count, context, update)) phase.run();
    return two_->last_phase_switch();
  }

 private:
  Wire wire_;
  std::string layout_words_;  // "2 hosts x 4 ranks"
  MPI_Comm local_comm_ = MPI_COMM_NULL, cross_comm_ = MPI_COMM_NULL;
  TransportChoice local_name_ = TransportChoice::kShm, cross_name_ = TransportChoice::kTcp;
  std::unique_ptr<Transport> local_t_, cross_t_;
  std::unique_ptr<RingExecutor> local_, cross_;
  std::unique_ptr<TwoLevelRing> two_;
};

}  // namespace

HostLayout host_layout(MPI_Comm comm) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm node = MPI_COMM_NULL;
  RT_CHECK(MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &node) == MPI_SUCCESS,
           "MPI_Comm_split_type failed");
  int node_rank = 0, node_size = 1;
  MPI_Comm_rank(node, &node_rank);
  MPI_Comm_size(node, &node_size);
  std::vector<int> node_ranks(static_cast<size_t>(node_size));
  MPI_Allgather(&rank, 1, MPI_INT, node_ranks.data(), 1, MPI_INT, node);
  MPI_Comm_free(&node);
  int fake = 0;
  if (const char* v = std::getenv("RINGTRAIN_FAKE_HOST_RANKS")) {
    fake = std::atoi(v);
    RT_CHECK(fake >= 1, "RINGTRAIN_FAKE_HOST_RANKS = '", v, "': expected the number of ranks per fake host (>= 1)");
  }
  // Split by rank order within the host, so node_rank order is rank order (the key above).
  int leader = node_ranks.front();
  if (fake > 0) leader = node_ranks[static_cast<size_t>(node_rank - node_rank % fake)];
  int world = 1;
  MPI_Comm_size(comm, &world);
  std::vector<int> leaders(static_cast<size_t>(world));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  return layout_from_leaders(leaders);
}

TwoLevelComms split_two_level(MPI_Comm comm, const HostLayout& layout) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  TwoLevelComms c;
  c.place = two_level_place(layout, rank);
  // Split by the first member of each group: a host's lowest rank, or the ring across hosts'
  // first rank, which is the same for all its members.
  c.local = group_comm(comm, c.place.local_ring, c.place.local);
  c.cross = group_comm(comm, c.place.cross_ring, c.place.cross);
  return c;
}

std::unique_ptr<Collective> make_two_level_collective(MPI_Comm comm, const HostLayout& layout, const StallPolicy& stall,
                                                      const CollectiveSpec& spec, size_t region_floats) {
  return std::make_unique<TwoLevelCollective>(comm, layout, stall, spec, region_floats);
}

}  // namespace rt
