// Note [MLPerf's log]: with log.mlperf = true, rank 0 writes the `:::MLLOG {json}` lines MLPerf's
// compliance checker (mlcommons/logging, training rules 4.0.0: common.yaml, closed_common.yaml,
// closed_resnet.yaml and closed_resnet_lars.yaml or _sgd.yaml) and its reference-convergence-point
// checker read: the submission's keys from [mlperf], init_start before the Trainer is built (the
// TrainingRun is made first), the hyperparameters it runs with (the rate, decay steps and end rate
// the schedule really uses), init_stop and run_start at the first step, each block of epochs
// between evaluations with its epochs, each evaluation with its accuracy, and run_stop with
// "success" where eval.target_top1 was reached, "aborted" where train.epochs ran out first. Each
// line is one JSON object: namespace, time_ms (the wall clock), event_type (INTERVAL_START,
// INTERVAL_END or POINT_IN_TIME), key, value, metadata (file and line, and the event's epoch).
// Lines wait in memory until the run has made checkpoint.dir; a resumed run appends its own init
// and run lines, which MLPerf's rules (one uninterrupted run) do not accept.
#pragma once

#include <cstdint>
#include <fstream>
#include <functional>
#include <source_location>
#include <string>
#include <vector>

#include "config/config.h"
#include "formats/json.h"
#include "nn/optim/lr_schedule.h"

namespace rt {

class MlperfLog {
 public:
  // Writes nothing unless config.log.mlperf and rank 0. Logs init_start and the submission's keys.
  MlperfLog(const Config& config, int rank);
  bool enabled() const { return enabled_; }
  // The hyperparameters as the run uses them: its schedule (rates for the global batch, decay
  // steps after warmup), its ranks and its data sets' sizes.
  void hyperparameters(const LrSchedule& schedule, int64_t ranks, int64_t train_samples, int64_t eval_samples);
  // From here lines go to `dir`/mlperf.log (appended), those so far first.
  void open(const std::string& dir);
  void run_start();                 // init_stop, run_start
  void epoch_start(int64_t epoch);  // 1-based; a block_start first where one begins
  void epoch_stop(int64_t epoch);
  // eval_start before evaluate(), then eval_stop, eval_accuracy (top-1 as a fraction), block_stop.
  double eval(int64_t epoch, const std::function<double()>& evaluate);
  void run_stop(bool reached);

 private:
  void event(const char* type, const char* key, const Json& value, Json metadata = Json::object(),
             std::source_location at = std::source_location::current());
  void point(const char* key, const Json& value, Json metadata = Json::object(),
             std::source_location at = std::source_location::current()) {
    event("POINT_IN_TIME", key, value, std::move(metadata), at);
  }

  bool enabled_ = false;
  Config config_;
  int64_t block_first_ = 0;           // the open block's first epoch; 0: none
  std::vector<std::string> pending_;  // before open()
  std::ofstream file_;
};

}  // namespace rt
