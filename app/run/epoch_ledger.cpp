#include "app/run/epoch_ledger.h"

#include <algorithm>

namespace rt {

namespace {

// `head` (the same length on every rank), then every rank's straggler slots, summed over ranks.
std::vector<double> sum_over_ranks(const double* head, size_t head_count, const StragglerTally& stragglers,
                                   const World& world, const CollectiveWatch& watch) {
  std::vector<double> all(head_count + static_cast<size_t>(world.size() * StragglerTally::kFields), 0.0);
  std::copy(head, head + head_count, all.begin());
  stragglers.write(all.data() + head_count, world.rank());
  world.allreduce_sum(all.data(), static_cast<int>(all.size()), watch);
  return all;
}

}  // namespace

EpochTotals sum_epoch(const EpochSums& own, const StragglerTally& stragglers, const World& world,
                      const std::vector<std::string>& hosts, const CollectiveWatch& watch) {
  const std::vector<double> all = sum_over_ranks(own.data(), EpochSums::kCount, stragglers, world, watch);
  EpochTotals totals;
  std::copy(all.begin(), all.begin() + EpochSums::kCount, totals.sums.data());
  totals.stragglers = judge_stragglers(all.data() + EpochSums::kCount, hosts);
  return totals;
}

StragglerVerdict sum_stragglers(const StragglerTally& stragglers, const World& world,
                                const std::vector<std::string>& hosts, const CollectiveWatch& watch) {
  return judge_stragglers(sum_over_ranks(nullptr, 0, stragglers, world, watch).data(), hosts);
}

}  // namespace rt
