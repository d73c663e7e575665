// The run's folder, checkpoint.dir, as rank 0 keeps it: created and checked before the first step,
// the resolved config beside the checkpoints (config.toml), and log.metrics (metrics.jsonl), one
// JSON record per logged step and per epoch, which log.tensorboard also writes as TensorBoard
// scalars (app/run/tensorboard_log.h).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <optional>
#include <string>

#include "app/training_position.h"
#include "app/run/tensorboard_log.h"
#include "config/config.h"

namespace rt {

class RunFolder {
 public:
  // On rank 0: creates checkpoint.dir and writes config.toml, after refusing a folder that holds
  // a checkpoint later than `start` (it would outrank this run's saves and prune them). Then
  // removes the metric records written after `resumed` (a fresh run: after the start), which the
  // run that stopped wrote and this one writes again, so that each step has one; with
  // log.tensorboard, opens this run's event file, which tells TensorBoard the same. Other ranks:
  // nothing, and write_metric does nothing.
  RunFolder(const Config& config, const std::string& resolved_config, int rank, const TrainingPosition& start,
            const std::optional<TrainingPosition>& resumed);
  // One line of metrics.jsonl, where log.metrics names a file, and one event of the event file,
  // with log.tensorboard; on rank 0.
  void write_metric(const nlohmann::ordered_json& record) const;

 private:
  void remove_metrics_after(const TrainingPosition& from) const;

  std::string metrics_path_;                   // "" on ranks other than 0, and where log.metrics = ""
  std::optional<TensorBoardLog> tensorboard_;  // rank 0 with log.tensorboard
};

}  // namespace rt
