#include "app/epoch_ledger.h"

#include <algorithm>

namespace rt {

EpochTotals sum_epoch(const EpochSums& own, const StragglerTally& stragglers, const World& world,
                      const std::vector<std::string>& hosts, const CollectiveWatch& watch) {
  std::vector<double> all(EpochSums::kCount + static_cast<size_t>(world.size() * StragglerTally::kFields), 0.0);
  std::copy(own.data(), own.data() + EpochSums::kCount, all.begin());
  stragglers.write(all.data() + EpochSums::kCount, world.rank());
  world.allreduce_sum(all.data(), static_cast<int>(all.size()), watch);
  EpochTotals totals;
  std::copy(all.begin(), all.begin() + EpochSums::kCount, totals.sums.data());
  totals.stragglers = judge_stragglers(all.data() + EpochSums::kCount, hosts);
  return totals;
}

}  // namespace rt
