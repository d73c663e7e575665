// An epoch's figures over all ranks in one sum: this rank's EpochSums, then each rank's straggler
// figures in its own slots (StragglerTally::kFields each, the others adding zeros), so that an
// epoch's end costs one allreduce and rank 0 judges the stragglers from what it returns.
#pragma once

#include <string>
#include <vector>

#include "app/run/epoch_sums.h"
#include "app/run/straggler_report.h"
#include "dist/world.h"

namespace rt {

struct EpochTotals {
  EpochSums sums;               // over all ranks
  StragglerVerdict stragglers;  // from every rank's figures
};

// Every rank calls it at the same point.
EpochTotals sum_epoch(const EpochSums& own, const StragglerTally& stragglers, const World& world,
                      const std::vector<std::string>& hosts, const CollectiveWatch& watch);
// The straggler figures alone (a report on demand, inside an epoch). Every rank calls it at the
// same point.
StragglerVerdict sum_stragglers(const StragglerTally& stragglers, const World& world,
                                const std::vector<std::string>& hosts, const CollectiveWatch& watch);

}  // namespace rt
