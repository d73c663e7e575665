// What `ringtrain bench` says: the run's description before the windows, and after them the
// statistics over windows, the summary lines and the one-line JSON record.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "app/trainer.h"
#include "formats/json.h"

namespace rt {

// Facts about the run that the description and the record name. Every rank gathers them alike:
// counting hosts is a collective.
struct BenchRun {
  int threads = 0;
  int hosts = 0;
  std::string collective;  // the reducer's description, or "no allreduce"
  int convolutions = 0, winograd = 0, cudnn_graph_directions = 0;
  double plan_s = 0;  // the trainer's construction: building and planning the model
};
BenchRun bench_run(Trainer& trainer);

// The lines printed before the first step.
std::string describe_bench(Trainer& trainer, const BenchRun& run);

// Mean, sample standard deviation and median of the windows' images/s.
struct WindowStats {
  double mean = 0, sd = 0, median = 0;
};
WindowStats window_stats(const std::vector<double>& images_per_s);

// The summary lines after the windows; the record's fields, in a fixed order, arrays last.
std::string bench_summary(const WindowStats& s, size_t windows, int world_size, double peak_rss_mb,
                          const std::vector<double>& rank_images_per_s);
Json bench_record(Trainer& trainer, const BenchRun& run, const WindowStats& s, double peak_rss_mb,
                  std::optional<double> host_s_per_step, const std::vector<double>& windows,
                  const std::vector<double>& rank_images_per_s);

}  // namespace rt
