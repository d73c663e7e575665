#include "cli/bench.h"

#include <omp.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <optional>
#include <ostream>

#include "app/run/bucket_tuner.h"
#include "app/replica_check.h"
#include "app/run/step_agreement.h"
#include "base/check.h"
#include "base/rng.h"
#include "cli/bench_report.h"
#include "formats/json.h"
#include "formats/step_profile.h"
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
std::optional<double> write_profile(Trainer& trainer, Step& step, int64_t steps, const std::string& path,
                                    double unprofiled_step_s, std::ostream& out) {
  StepTimes times;
  trainer.profile_steps(&times);
  for (int64_t s = 0; s < steps; ++s) step();
  trainer.profile_steps(nullptr);
  const Config& c = trainer.config();
  const double n = static_cast<double>(times.steps);
  StepProfile p{c.model.name, c.train.batch_per_rank, times.forward_s / n, times.optimizer_s / n, {}};
  const std::vector<LayerRow> rows = trainer.graph().layer_table();
  for (size_t i = 0; i < rows.size(); ++i) p.layers.emplace_back(rows[i].name, times.backward_s.at(i) / n);
  write_step_profile(path, p,
                     str_cat("ringtrain bench --profile: ", c.model.name, ", ", name_of(c.train.device), ", ",
                             omp_get_max_threads(), " thread(s), mean of ", times.steps, " steps, seconds per step"));
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

// One fixed batch: standard-normal pixels (already "normalised") and uniform labels. The images
// are uploaded once to where the graph runs, as in Horovod's synthetic benchmark and PyTorch's
// beside ours: the training step is timed, not the host-to-GPU copy.
struct SyntheticBatch {
  Tensor images;
  std::vector<int32_t> labels;
};

SyntheticBatch synthetic_batch(Trainer& trainer) {
  const Config& c = trainer.config();
  const int64_t B = c.train.batch_per_rank;
  const Shape in = trainer.data().input_shape;
  const Device device = trainer.graph().device();
  Rng rng(static_cast<uint64_t>(c.train.seed), 0xbe7c4 + static_cast<uint64_t>(trainer.world().rank()));
  SyntheticBatch batch{Tensor(plain_spec({B, in[0], in[1], in[2]}, device)),
                       std::vector<int32_t>(static_cast<size_t>(B))};
  std::vector<float> images(static_cast<size_t>(batch.images.numel()));
  for (float& v : images) v = static_cast<float>(rng.normal());
  copy_bytes(batch.images.data(), device, images.data(), Device::kCpu, batch.images.bytes());
  for (int32_t& l : batch.labels) l = static_cast<int32_t>(rng.below(static_cast<uint64_t>(c.model.num_classes)));
  return batch;
}

// bench.windows windows of bench.steps_per_window steps, each ending with the device idle: the
// job's images/s of each (all ranks' images over the slowest rank's time) go to *images_per_s,
// and a line each to *out where given. Returns this rank's own seconds over all windows.
// What Note [Replica check] costs: one fingerprint of parameters and momentum (the median of
// five; the ranks' one allgather of four words is not counted), next to dist.check_replicas_every_steps
// steps of step_s seconds each.
void report_replica_check(Trainer& trainer, double step_s, std::ostream& out) {
  std::vector<double> seconds;
  for (int i = 0; i < 5; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    (void)replica_print(trainer.graph(), trainer.optimizer(), trainer.loss_scaling().scale(), 0, true);
    seconds.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(seconds.begin(), seconds.end());
  const int64_t every = trainer.config().dist.check_replicas_every_steps;
  char line[256];
  std::snprintf(line, sizeof line,
                "bench: replica check: %.2f ms per fingerprint of %lld parameters and their momentum; every %lld "
                "steps (dist.check_replicas_every_steps) that is %.3f%% of a %.1f ms step\n",
                seconds[2] * 1e3, static_cast<long long>(trainer.graph().arena_floats()), static_cast<long long>(every),
                every > 0 ? 100 * seconds[2] / (static_cast<double>(every) * step_s) : 0.0, step_s * 1e3);
  out << line << std::flush;
}

template <typename Step>
double time_windows(Trainer& trainer, Step& step, std::ostream* out, std::vector<double>* images_per_s) {
  using Clock = std::chrono::steady_clock;
  const World& world = trainer.world();
  const BenchConfig& b = trainer.config().bench;
  const TrainConfig& t = trainer.config().train;
  const double window_images = static_cast<double>(rank_batch(t) * b.steps_per_window);
  double own_seconds = 0;
  for (int64_t w = 0; w < b.windows; ++w) {
    const auto t0 = Clock::now();
    for (int64_t s = 0; s < b.steps_per_window; ++s) step();
    synchronize(trainer.graph().device());
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    own_seconds += seconds;
    world.allreduce_max(&seconds, 1);
    images_per_s->push_back(window_images * world.size() / seconds);
    char line[96];
    std::snprintf(line, sizeof line, "bench: window %lld: %.3f img/s\n", static_cast<long long>(w + 1),
                  images_per_s->back());
    if (out) *out << line << std::flush;
  }
  return own_seconds;
}

}  // namespace

BenchResult run_bench(Trainer& trainer, std::ostream& out, const std::string& profile_path, double plan_s) {
  const World& world = trainer.world();
  RT_CHECK(profile_path.empty() || world.size() == 1,
           "bench --profile measures one rank's compute (the simulator "
           "adds the communication): run it without mpirun, with train.threads as each rank would have it");
  RT_CHECK(profile_path.empty() || trainer.config().train.accumulate_steps == 1,
           "bench --profile times one micro-batch's layers: run it with train.accumulate_steps = 1");
  const bool talk = world.rank() == 0;
  BenchRun run = bench_run(trainer);
  run.plan_s = plan_s;
  if (talk) out << describe_bench(trainer, run) << std::flush;

  SyntheticBatch batch = synthetic_batch(trainer);
  Timeline* tl = trainer.timeline();
  int64_t run_step = 0;
  const StepAgreement agreement(trainer.config().checkpoint, trainer.config().train.epochs, world,
                                &trainer.between_steps());
  const auto step = [&] {
    if (tl) tl->set_step(run_step);
    const StepOutcome outcome = trainer.train_step(batch.images.data(), batch.labels.data(), batch.images.device());
    // What training pays at each step boundary for agreeing on saves (checkpoint.signals,
    // every_minutes); bench itself never saves.
    (void)agreement.after_step(trainer.position().step);
    trainer.check_replicas_after_step();  // and for proving the replicas the same
    if (tl) tl->flush(run_step);
    ++run_step;
    return outcome;
  };
  const BenchConfig& b = trainer.config().bench;
  // dist.autotune = "replay" (a tuned.toml): bench times the choice, not the trials before it.
  const bool replay = trainer.config().dist.autotune == Autotune::kReplay;
  if (replay && trainer.reducer())
    trainer.use_bucket_caps(parse_autotune_trials(trainer.config().dist.autotune_trials).back().caps);
  for (int64_t s = 0; s < b.warmup_steps; ++s) step();
  // dist.autotune = "on": tuned after the warm-up, the windows then time the choice.
  if (!replay) {
    // Its steps come before the windows, however many the tuning takes.
    BucketTuner tuner(trainer, nullptr, b.warmup_steps + kLongestTuning + b.windows * b.steps_per_window);
    while (tuner.active()) {
      const auto t0 = std::chrono::steady_clock::now();
      const StepOutcome outcome = step();
      tuner.after_step(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), outcome.compute_s);
    }
  }
  synchronize(trainer.graph().device());  // GPU work is queued: each window starts with the device idle

  BenchResult r;
  const double own_seconds = time_windows(trainer, step, talk ? &out : nullptr, &r.window_images_per_s);
  r.rank_images_per_s = world.allgather(
      static_cast<double>(rank_batch(trainer.config().train) * b.steps_per_window * b.windows) / own_seconds);
  if (talk) report_replica_check(trainer, own_seconds / static_cast<double>(b.windows * b.steps_per_window), out);
  std::optional<double> host_s_per_step;
  if (!profile_path.empty())
    host_s_per_step = write_profile(trainer, step, b.steps_per_window, profile_path,
                                    own_seconds / static_cast<double>(b.windows * b.steps_per_window), out);

  const WindowStats stats = window_stats(r.window_images_per_s);
  r.mean = stats.mean;
  r.sd = stats.sd;
  r.median = stats.median;
  r.peak_rss_mb = peak_rss_mb();
  world.allreduce_max(&r.peak_rss_mb, 1);
  if (talk) {
    out << bench_summary(stats, r.window_images_per_s.size(), world.size(), r.peak_rss_mb, r.rank_images_per_s);
    if (const auto fp16 = trainer.loss_scaling().state())
      out << str_cat("bench: fp16 loss scale ", fp16->scale, ", ", fp16->skipped_steps,
                     " step(s) skipped for overflow\n");
  }
  r.json = to_json(
      bench_record(trainer, run, stats, r.peak_rss_mb, host_s_per_step, r.window_images_per_s, r.rank_images_per_s));
  if (talk) out << r.json << "\n" << std::flush;
  return r;
}

}  // namespace rt
