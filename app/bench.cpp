#include "app/bench.h"

#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <ostream>

#include "formats/json.h"
#include "app/step_profile.h"
#include "base/check.h"
#include "base/rng.h"
#include "nn/tensor.h"

namespace rt {
namespace {

double peak_rss_mb() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return static_cast<double>(u.ru_maxrss) / 1024.0;  // ru_maxrss is in KiB on Linux
}

// Runs `steps` profiled steps and writes their mean times to `path`. unprofiled_step_s: the
// windows' mean step, to set the host's cost of issuing a step beside. Returns that cost in
// seconds per step on a GPU, else nullopt.
template <typename Step>
std::optional<double> write_profile(Trainer& trainer, Step& step, int64_t steps, const std::string& path, double unprofiled_step_s,
                   std::ostream& out) {
  StepTimes times;
  trainer.profile_steps(&times);
  for (int64_t s = 0; s < steps; ++s) step();
  trainer.profile_steps(nullptr);
  const Config& c = trainer.config();
  const double n = static_cast<double>(times.steps);
  StepProfile p{c.model.name, c.train.batch_per_rank, times.forward_s / n, times.optimizer_s / n, {}};
  const std::vector<LayerRow> rows = trainer.graph().layer_table();
  for (size_t i = 0; i < rows.size(); ++i) p.layers.emplace_back(rows[i].name, times.backward_s.at(i) / n);
  write_step_profile(path, p, str_cat("ringtrain bench --profile: ", c.model.name, ", ", c.train.device, ", ",
                                      omp_get_max_threads(), " thread(s), mean of ", times.steps,
                                      " steps, seconds per step"));
  double backward = 0;
  for (const auto& [name, seconds] : p.layers) backward += seconds;
  char line[256];
  std::snprintf(line, sizeof line,
                "bench: profile of %lld steps: forward %.1f ms, backward %.1f ms, optimizer %.1f ms; written to %s\n",
                static_cast<long long>(times.steps), p.forward_s * 1e3, backward * 1e3, p.optimizer_s * 1e3,
                path.c_str());
  out << line << std::flush;
  // On a GPU: where issuing a step's work takes the host about as long as an unprofiled step, the
  // host sets the pace, not the device (each layer's work is issued here onto an idle device). On
  // the CPU issuing is doing.
  if (trainer.graph().device() != Device::kCuda) return std::nullopt;
  double backward_host = 0;
  for (double s : times.backward_host_s) backward_host += s;
  std::snprintf(line, sizeof line,
                "bench: host time issuing that work: %.1f ms per step (forward %.1f without the loss, backward %.1f, "
                "optimizer %.1f), beside %.1f ms per unprofiled step\n",
                times.host_s() / n * 1e3, times.forward_host_s / n * 1e3, backward_host / n * 1e3,
                times.optimizer_host_s / n * 1e3, unprofiled_step_s * 1e3);
  out << line << std::flush;
  return times.host_s() / n;
}

}  // namespace

BenchResult run_bench(Trainer& trainer, std::ostream& out, const std::string& profile_path) {
  const Config& c = trainer.config();
  const World& world = trainer.world();
  RT_CHECK(profile_path.empty() || world.size() == 1, "bench --profile measures one rank's compute (the simulator "
           "adds the communication): run it without mpirun, with train.threads as each rank would have it");
  const BenchConfig& b = c.bench;
  const int64_t B = c.train.batch_per_rank;
  const Shape in = trainer.input_shape();

  // One fixed batch: standard-normal pixels (already "normalised") and uniform labels. The images
  // are uploaded once to where the graph runs, as in Horovod's synthetic benchmark and PyTorch's
  // beside ours: the training step is timed, not the host-to-GPU copy.
  Rng rng(static_cast<uint64_t>(c.train.seed), 0xbe7c4 + static_cast<uint64_t>(world.rank()));
  const Device device = trainer.graph().device();
  Tensor batch(plain_spec({B, in[0], in[1], in[2]}, device));
  {
    std::vector<float> images(static_cast<size_t>(batch.numel()));
    for (float& v : images) v = static_cast<float>(rng.normal());
    copy_bytes(batch.data(), device, images.data(), Device::kCpu, batch.bytes());
  }
  std::vector<int32_t> labels(static_cast<size_t>(B));
  for (int32_t& l : labels) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.model.num_classes)));

  const bool talk = world.rank() == 0;
  const int threads = omp_get_max_threads();
  double hosts = world.local_rank() == 0 ? 1 : 0;
  world.allreduce_sum(&hosts, 1);
  const std::string collective = trainer.reducer() ? trainer.reducer()->collective().describe() : "no allreduce";
  int convolutions = 0, winograd = 0, graph_directions = 0;
  for (const LayerRow& row : trainer.graph().layer_table()) {
    convolutions += row.kind == "conv2d";
    winograd += row.algorithm == "winograd";
    graph_directions += row.graph_api_directions;
  }
  const bool on_gpu = device == Device::kCuda;
  const std::string graph_note =
      on_gpu ? str_cat("; cuDNN's graph API on ", graph_directions, " direction(s)",
                       c.train.cuda_graph ? str_cat("; steps after the first replay a CUDA graph of ",
                                                    trainer.replayed_work())
                                          : std::string())
             : "";
  char line[640];
  std::snprintf(line, sizeof line,
                "bench: %s, %d rank(s) on %d host(s) x %d thread(s), batch %lld per rank (global %lld), input %s, "
                "%s, buckets %g MiB (first %g), overlap %s, %s %s\n"
                "bench: convolutions: %s asked, Winograd on %d of %d%s\n"
                "bench: %lld warm-up steps, then %lld windows of %lld steps, on one batch held in %s memory\n",
                c.model.name.c_str(), world.size(), static_cast<int>(hosts), threads, static_cast<long long>(B),
                static_cast<long long>(B * world.size()), shape_str(in).c_str(),
                collective.c_str(),
                c.dist.bucket_mb, c.dist.first_bucket_mb, c.dist.overlap ? "on" : "off", c.train.device.c_str(),
                c.train.precision.c_str(),
                c.train.conv_algorithm.c_str(), winograd, convolutions, graph_note.c_str(),
                static_cast<long long>(b.warmup_steps), static_cast<long long>(b.windows),
                static_cast<long long>(b.steps_per_window), std::string(device_name(device)).c_str());
  if (talk) out << line << std::flush;
  if (talk && c.train.cuda_graph && b.warmup_steps < 2)
    out << "bench: warning: the CUDA graph is recorded at the second step, inside the first window "
           "(bench.warmup_steps < 2)\n";

  using Clock = std::chrono::steady_clock;
  Timeline* tl = trainer.timeline();
  int64_t run_step = 0;
  const auto step = [&] {
    if (tl) tl->set_step(run_step);
    trainer.train_step(batch.data(), labels.data(), device);
    if (tl) tl->flush(run_step);
    ++run_step;
  };
  // GPU work is queued: each window starts and ends with the device idle.
  for (int64_t s = 0; s < b.warmup_steps; ++s) step();
  synchronize(device);

  BenchResult r;
  const double window_images = static_cast<double>(B * b.steps_per_window);
  double own_seconds = 0;
  for (int64_t w = 0; w < b.windows; ++w) {
    const auto t0 = Clock::now();
    for (int64_t s = 0; s < b.steps_per_window; ++s) step();
    synchronize(device);
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    own_seconds += seconds;
    world.allreduce_max(&seconds, 1);
    r.window_images_per_s.push_back(window_images * world.size() / seconds);
    std::snprintf(line, sizeof line, "bench: window %lld: %.3f img/s\n", static_cast<long long>(w + 1),
                  r.window_images_per_s.back());
    if (talk) out << line << std::flush;
  }
  r.rank_images_per_s = world.allgather(window_images * static_cast<double>(b.windows) / own_seconds);
  std::optional<double> host_s_per_step;
  if (!profile_path.empty())
    host_s_per_step = write_profile(trainer, step, b.steps_per_window, profile_path,
                                    own_seconds / static_cast<double>(b.windows * b.steps_per_window), out);

  const std::vector<double>& v = r.window_images_per_s;
  for (double x : v) r.mean += x / static_cast<double>(v.size());
  for (double x : v) r.sd += (x - r.mean) * (x - r.mean) / static_cast<double>(v.size() - 1);
  r.sd = std::sqrt(r.sd);
  std::vector<double> sorted = v;
  std::sort(sorted.begin(), sorted.end());
  const size_t n = sorted.size();
  r.median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
  r.peak_rss_mb = peak_rss_mb();
  world.allreduce_max(&r.peak_rss_mb, 1);

  std::snprintf(line, sizeof line,
                "bench: total %.3f img/s (mean of %zu windows; 95%% interval %.3f-%.3f as mean +- 1.96 sd; median "
                "%.3f); per rank %.3f img/s; peak resident memory %.0f MiB per rank (largest)\n",
                r.mean, n, r.mean - 1.96 * r.sd, r.mean + 1.96 * r.sd, r.median, r.mean / world.size(),
                r.peak_rss_mb);
  if (talk) {
    out << line;
    out << "bench: each rank's own img/s:";
    for (double x : r.rank_images_per_s) {
      std::snprintf(line, sizeof line, " %.3f", x);
      out << line;
    }
    out << "\n";
  }
  Json j = {{"kind", "bench"},
            {"model", c.model.name},
            {"ranks", world.size()},
            {"hosts", hosts},
            {"threads_per_rank", threads},
            {"device", c.train.device},
            {"gpus_per_rank", device == Device::kCuda ? 1 : 0},
            {"precision", c.train.precision},
            {"batch_per_rank", B},
            {"image_size", in[1]},
            {"allreduce", world.size() > 1 ? c.dist.allreduce : std::string("none")},
            {"collective", collective},
            {"bucket_mb", c.dist.bucket_mb},
            {"first_bucket_mb", c.dist.first_bucket_mb},
            {"overlap", c.dist.overlap},
            {"sharded_update", trainer.reducer() != nullptr && trainer.reducer()->updates_parameters()},
            {"wire", c.dist.wire},
            {"conv_algorithm", c.train.conv_algorithm},
            {"winograd_convolutions", winograd},
            {"cudnn_graph", cudnn_graph_use_name(on_gpu ? cudnn_graph_use() : CudnnGraphUse::kNever)},
            {"cudnn_graph_directions", graph_directions},
            {"cuda_graph", c.train.cuda_graph},
            {"cuda_graph_recordings", trainer.recordings()},
            {"warmup_steps", b.warmup_steps},
            {"steps_per_window", b.steps_per_window},
            {"images_per_s", r.mean},
            {"ci95_low", r.mean - 1.96 * r.sd},
            {"ci95_high", r.mean + 1.96 * r.sd},
            {"median_images_per_s", r.median},
            {"peak_rss_mb", r.peak_rss_mb}};
  if (host_s_per_step) j["profiled_host_ms_per_step"] = *host_s_per_step * 1e3;
  if (const LossScaler* s = trainer.loss_scaler()) {
    j["loss_scale"] = s->scale();
    j["skipped_steps"] = s->skipped_steps();
    std::snprintf(line, sizeof line, "bench: fp16 loss scale %g, %lld step(s) skipped for overflow\n", s->scale(),
                  static_cast<long long>(s->skipped_steps()));
    if (talk) out << line;
  }
  j["windows"] = v;
  j["per_rank"] = r.rank_images_per_s;
  r.json = to_json(j);
  if (talk) out << r.json << "\n" << std::flush;
  return r;
}

}  // namespace rt
