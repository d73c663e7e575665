#include "app/grad_hook_choice.h"

#include <string>
#include <vector>

#include "app/rank_state.h"
#include "dist/cuda/device_powersgd.h"

namespace rt {

GradHookChoice choose_grad_hook(const Config& config, const GradientBuckets& plan, const Graph& graph,
                                const std::optional<TrainingPosition>& resumed) {
  const DistConfig& dc = config.dist;
  if (dc.compression == Compression::kNone) return {};
  const PowerSgdOptions options = powersgd_options(dc, static_cast<uint64_t>(config.train.seed));
  std::unique_ptr<PowerSgdBuckets> powersgd =
      config.train.device == Device::kCuda
          ? make_device_powersgd(plan.params, plan.shapes, plan.buckets, options)
          : std::make_unique<PowerSgdBuckets>(plan.params, plan.shapes, plan.buckets, options);
  std::vector<std::string> names;
  for (const ParamRef& p : graph.trainable_params()) names.push_back(p.name);
  auto state = std::make_unique<SavedPowerSgd>(*powersgd, std::move(names), dc.powersgd_start_step, resumed);
  return {std::move(powersgd), std::move(state)};
}

}  // namespace rt
