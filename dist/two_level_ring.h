// Note [Two-level ring] (host_layout.h) composed once, over two ring executors: a reduce-scatter
// inside the host, a whole ring across hosts on the host's share, an all-gather inside the host.
// The CPU's collective (two_level_collective.h) runs the phases as they come; the GPU's
// (dist/cuda/device_collective.h) hands each to its watchdog, naming the ring it waits on.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "dist/host_layout.h"
#include "dist/ring_executor.h"

namespace rt {

// One piece of a bucket's work, on one of the two rings.
struct RingPhase {
  enum Ring { kInside = 0, kAcross = 1 };
  Ring ring;
  std::function<void()> run;
};

class TwoLevelRing {
 public:
  // inside: this rank's host's ranks in place.local_ring's order, scaling by 1; across: the ranks
  // of place.cross_ring, scaling to the whole world's average.
  TwoLevelRing(RingExecutor& inside, RingExecutor& across, TwoLevelPlace place)
      : inside_(inside), across_(across), place_(std::move(place)) {}
  // The phases that average data[0, count) (Collective::average); with an update, each rank
  // updates the part it finishes (finished_share) and the all-gathers share update.gathered().
  // They refer to the arguments: run them before those go.
  std::vector<RingPhase> average(float* data, int64_t count, const WaitContext& context, const ShardUpdate* update);
  // The phases of Collective::gather_updated.
  std::vector<RingPhase> gather_updated(float* data, int64_t count, const WaitContext& context);
  // Every host share's own cuts between the ranks across hosts (finished_share tiles the buffer).
  std::vector<int64_t> shard_cuts(int64_t count) const;
  const TwoLevelPlace& place() const { return place_; }
  // When the ring across hosts last switched phases.
  std::optional<std::chrono::steady_clock::time_point> last_phase_switch() const { return across_.last_phase_switch(); }

 private:
  RingExecutor& inside_;
  RingExecutor& across_;
  TwoLevelPlace place_;
  ShardUpdate within_;  // the update as the ring across hosts sees it, while average()'s phases run
};

}  // namespace rt
