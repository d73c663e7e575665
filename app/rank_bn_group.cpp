#include "app/rank_bn_group.h"

#include "base/check.h"
#include "dist/cuda/device_collective.h"
#include "dist/host_layout.h"

namespace rt {

void make_rank_bn_group(RankBnGroup& out, const Config& config, const World& world, const StallPolicy& stall,
                        const int64_t* step_under_way) {
  const int G = static_cast<int>(config.train.bn_group);
  if (world.size() == 1) throw Error(statistics_group_refusal(G, block_layout(1, 1)));
  const auto step = [step_under_way] { return *step_under_way; };
  if (config.train.device == Device::kCuda) {
    const StatisticsGroupComm group = statistics_group_comm(G, world.comm(), stall);
    out.statistics = make_device_statistics_group(group.comm, group.stall, step);
  } else {
    out.statistics = make_statistics_group(G, world.comm(), stall, step);
  }
  out.group =
      BatchNormGroup{G, [s = out.statistics.get()](float* values, int64_t count) { s->average(values, count); }};
}

}  // namespace rt
