#include "cli/bench_report.h"

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "base/check.h"
#include "base/median.h"

namespace rt {

BenchRun bench_run(Trainer& trainer) {
  const World& world = trainer.world();
  BenchRun run;
  run.threads = omp_get_max_threads();
  double hosts = world.local_rank() == 0 ? 1 : 0;
  world.allreduce_sum(&hosts, 1);
  run.hosts = static_cast<int>(hosts);
  run.collective = trainer.reducer() ? trainer.reducer()->collective().describe() : "no allreduce";
  for (const LayerRow& row : trainer.graph().layer_table()) {
    run.convolutions += row.kind == "conv2d";
    run.winograd += row.algorithm == "winograd";
    run.cudnn_graph_directions += row.cudnn_graph_directions;
  }
  return run;
}

std::string describe_bench(Trainer& trainer, const BenchRun& run) {
  const Config& c = trainer.config();
  const BenchConfig& b = c.bench;
  const int64_t B = c.train.batch_per_rank, K = c.train.accumulate_steps;
  const std::string per_rank = K > 1 ? str_cat(B, " x ", K, " micro-batches") : str_cat(B);
  const int world = trainer.world().size();
  const Device device = trainer.graph().device();
  const std::string graph_note =
      device == Device::kCuda
          ? str_cat("; cuDNN's graph API on ", run.cudnn_graph_directions, " direction(s)",
                    c.train.cuda_graph
                        ? str_cat("; steps after the first replay a CUDA graph of ", trainer.replay().covers())
                        : std::string())
          : "";
  char line[640];
  std::snprintf(line, sizeof line,
                "bench: %s, %d rank(s) on %d host(s) x %d thread(s), batch %s per rank (global %lld), input %s, "
                "%s, buckets %g MiB (first %g), overlap %s, %s %s\n"
                "bench: convolutions: %s asked, Winograd on %d of %d%s\n"
                "bench: %lld warm-up steps, then %lld windows of %lld steps, on one batch held in %s memory\n",
                c.model.name.c_str(), world, run.hosts, run.threads, per_rank.c_str(),
                static_cast<long long>(global_batch(c.train, world)), shape_str(trainer.data().input_shape).c_str(),
                run.collective.c_str(), trainer.bucket_caps().bucket_mb, trainer.bucket_caps().first_bucket_mb,
                c.dist.overlap ? "on" : "off", std::string(name_of(c.train.device)).c_str(),
                std::string(name_of(c.train.precision)).c_str(), std::string(name_of(c.train.conv_algorithm)).c_str(),
                run.winograd, run.convolutions, graph_note.c_str(), static_cast<long long>(b.warmup_steps),
                static_cast<long long>(b.windows), static_cast<long long>(b.steps_per_window),
                std::string(name_of(device)).c_str());
  std::string text = line;
  if (c.train.cuda_graph && b.warmup_steps < 2)
    text +=
        "bench: warning: the CUDA graph is recorded at the second step, inside the first window "
        "(bench.warmup_steps < 2)\n";
  return text;
}

WindowStats window_stats(const std::vector<double>& v) {
  WindowStats s;
  const double n = static_cast<double>(v.size());
  for (double x : v) s.mean += x / n;
  for (double x : v) s.sd += (x - s.mean) * (x - s.mean) / (n - 1);
  s.sd = std::sqrt(s.sd);
  s.median = median(v);
  return s;
}

std::string bench_summary(const WindowStats& s, size_t windows, int world_size, double peak_rss_mb,
                          const std::vector<double>& rank_images_per_s) {
  char line[512];
  std::snprintf(line, sizeof line,
                "bench: total %.3f img/s (mean of %zu windows; 95%% interval %.3f-%.3f as mean +- 1.96 sd; median "
                "%.3f); per rank %.3f img/s; peak resident memory %.0f MiB per rank (largest)\n",
                s.mean, windows, s.mean - 1.96 * s.sd, s.mean + 1.96 * s.sd, s.median, s.mean / world_size,
                peak_rss_mb);
  std::string text = line;
  text += "bench: each rank's own img/s:";
  for (double x : rank_images_per_s) {
    std::snprintf(line, sizeof line, " %.3f", x);
    text += line;
  }
  return text + "\n";
}

Json bench_record(Trainer& trainer, const BenchRun& run, const WindowStats& s, double peak_rss_mb,
                  std::optional<double> host_s_per_step, const std::vector<double>& windows,
                  const std::vector<double>& rank_images_per_s) {
  const Config& c = trainer.config();
  const Device device = trainer.graph().device();
  const bool on_gpu = device == Device::kCuda;
  const int world = trainer.world().size();
  Json j = {{"kind", "bench"},
            {"model", c.model.name},
            {"ranks", world},
            {"hosts", run.hosts},
            {"threads_per_rank", run.threads},
            {"device", name_of(c.train.device)},
            {"gpus_per_rank", on_gpu ? 1 : 0},
            {"precision", name_of(c.train.precision)},
            {"batch_per_rank", c.train.batch_per_rank},
            {"accumulate_steps", c.train.accumulate_steps},
            {"image_size", trainer.data().input_shape[1]},
            {"allreduce", world > 1 ? name_of(c.dist.allreduce) : std::string_view("none")},
            {"collective", run.collective},
            {"bucket_mb", trainer.bucket_caps().bucket_mb},
            {"first_bucket_mb", trainer.bucket_caps().first_bucket_mb},
            {"overlap", c.dist.overlap},
            {"sharded_update", trainer.reducer() != nullptr && trainer.reducer()->updates_parameters()},
            {"wire", name_of(c.dist.wire)},
            {"gradient_floats", trainer.graph().grad_floats()},  // what a step averages (frozen layers: fewer)
            {"conv_algorithm", name_of(c.train.conv_algorithm)},
            {"winograd_convolutions", run.winograd},
            {"cudnn_graph", name_of(c.train.cudnn_graph)},
            {"cudnn_graph_directions", run.cudnn_graph_directions},
            {"cuda_graph", c.train.cuda_graph},
            {"cuda_graph_recordings", trainer.replay().recordings()},
            {"plan_s", run.plan_s},
            {"warmup_steps", c.bench.warmup_steps},
            {"steps_per_window", c.bench.steps_per_window},
            {"images_per_s", s.mean},
            {"ci95_low", s.mean - 1.96 * s.sd},
            {"ci95_high", s.mean + 1.96 * s.sd},
            {"median_images_per_s", s.median},
            {"peak_rss_mb", peak_rss_mb}};
  if (host_s_per_step) j["profiled_host_ms_per_step"] = *host_s_per_step * 1e3;
  if (const auto fp16 = trainer.loss_scaling().state()) {
    j["loss_scale"] = fp16->scale;
    j["skipped_steps"] = fp16->skipped_steps;
  }
  j["windows"] = windows;
  j["per_rank"] = rank_images_per_s;
  return j;
}

}  // namespace rt
