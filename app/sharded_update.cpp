#include "app/sharded_update.h"

#include <omp.h>

#include <memory>
#include <utility>

#include "base/check.h"

namespace rt {
namespace {

// On the communication thread, beside the compute threads: an OpenMP team there would take their
// cores, and the update is bound by memory anyway.
void on_one_thread() {
  static thread_local const bool once = (omp_set_num_threads(1), true);
  (void)once;
}

// An optimizer needing whole tensors: apply() only notes this rank's part of the bucket; finish()
// sums the norms across ranks and updates the part, waiting as the ring's transports wait beside
// the compute threads (asleep when idle).
class PartUpdate {
 public:
  PartUpdate(Optimizer& optimizer, const World& world, const StallPolicy& stall, const double* lr, const int64_t* step)
      : optimizer_(optimizer), world_(world), stall_(stall), lr_(lr), step_(step) {}
  void note(int64_t offset, int64_t count) {
    if (own_end_ == own_begin_) own_begin_ = own_end_ = offset;
    RT_ASSERT(own_end_ == offset);  // one contiguous part per bucket
    own_end_ = offset + count;
  }
  void finish(int64_t begin, int64_t count) {
    on_one_thread();
    const auto sum_over_ranks = [&](std::vector<double>& sums) {
      world_.allreduce_sum(sums.data(), static_cast<int>(sums.size()),
                           {&stall_, str_cat("step ", *step_, ": ", optimizer_.name(),
                                             "'s norms of the bucket at arena float ", begin, ", across ranks")});
    };
    optimizer_.update_part(*lr_, begin, begin + count, own_begin_, own_end_, sum_over_ranks);
    own_begin_ = own_end_ = 0;
  }

 private:
  Optimizer& optimizer_;
  const World& world_;
  StallPolicy stall_;
  const double* lr_;
  const int64_t* step_;
  int64_t own_begin_ = 0, own_end_ = 0;
};

}  // namespace

void cut_at_collective_parts(Optimizer& optimizer, const std::vector<Bucket>& buckets, const Collective& collective) {
  std::vector<int64_t> cuts;
  for (const Bucket& b : buckets)
    for (int64_t at : collective.shard_cuts(b.count).value_or(std::vector<int64_t>{})) cuts.push_back(b.offset + at);
  optimizer.set_part_cuts(std::move(cuts));
}

std::optional<ShardUpdate> make_sharded_update(Optimizer& optimizer, Graph& graph, const Collective& collective,
                                               bool whole_step_first, const World& world, const StallPolicy& stall,
                                               const double* lr, const int64_t* step) {
  if (whole_step_first || !collective.shards_update()) return std::nullopt;
  const std::string name = "sharded " + optimizer.name();
  if (!optimizer.needs_whole_tensors())
    return ShardUpdate{[&optimizer, lr](int64_t offset, int64_t count) {
                         on_one_thread();
                         optimizer.update(*lr, offset, offset + count);
                       },
                       graph.param_arena(),
                       {},
                       0,
                       name};
  auto part = std::make_shared<PartUpdate>(optimizer, world, stall, lr, step);
  return ShardUpdate{[part](int64_t offset, int64_t count) { part->note(offset, count); }, graph.param_arena(),
                     [part](int64_t begin, int64_t count) { part->finish(begin, count); }, 0, name};
}

}  // namespace rt
