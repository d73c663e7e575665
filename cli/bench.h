// ringtrain bench: training throughput on one fixed random batch (Horovod's synthetic protocol):
// bench.warmup_steps untimed steps, then bench.windows windows of bench.steps_per_window steps.
// The total of a window is all ranks' images divided by the slowest rank's time for that window
// (not rank 0's figure times the world size), so it is what the job as a whole achieved.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "app/trainer.h"

namespace rt {

struct BenchResult {
  std::vector<double> window_images_per_s;  // the job's total, per window
  std::vector<double> rank_images_per_s;    // each rank's own images / own time, over all windows
  double mean = 0, sd = 0, median = 0;      // over windows; the 95% interval is mean +- 1.96 sd
  double peak_rss_mb = 0;                   // the largest of the ranks' peak resident memory
  std::string json;                         // the machine-readable record, one line
};

// Every rank calls it; rank 0 prints the human report and the JSON line to `out`. With a
// profile_path (one rank only), bench.steps_per_window more steps follow the windows with the
// device drained around every phase and layer, and their mean times are written there
// (formats/step_profile.h) for `ringtrain simulate --profile`. plan_s, the seconds the trainer took
// to build (the model's planning: on a GPU, cuDNN's algorithm searches and, under
// train.cudnn_graph, its graph API's), goes into the record as it is.
BenchResult run_bench(Trainer& trainer, std::ostream& out, const std::string& profile_path = "", double plan_s = 0);

}  // namespace rt
