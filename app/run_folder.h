// The run's folder, checkpoint.dir, as rank 0 keeps it: created and checked before the first step,
// the resolved config beside the checkpoints (config.toml), and log.metrics (metrics.jsonl), one
// JSON record per logged step and per epoch.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

#include "app/checkpoint.h"
#include "config/config.h"

namespace rt {

class RunFolder {
 public:
  // On rank 0: creates checkpoint.dir and writes config.toml, after refusing a folder that holds
  // a checkpoint later than `start` (it would outrank this run's saves and prune them). Then
  // removes the metric records written after `resumed` (a fresh run: after the start), which the
  // run that stopped wrote and this one writes again, so that each step has one. Other ranks:
  // nothing, and write_metric does nothing.
  RunFolder(const Config& config, const std::string& resolved_config, int rank, const TrainingPosition& start,
            const std::optional<TrainingPosition>& resumed);
  // One line of metrics.jsonl, where log.metrics names a file and this is rank 0.
  void write_metric(const nlohmann::ordered_json& record) const;

 private:
  void remove_metrics_after(const TrainingPosition& from) const;

  std::string metrics_path_;  // "" on ranks other than 0, and where log.metrics = ""
};

}  // namespace rt
