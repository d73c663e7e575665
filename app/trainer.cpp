#include "app/trainer.h"

#include <omp.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <ostream>
#include <thread>

#include "app/atomic_file.h"
#include "app/consistency.h"
#include "app/gradient_buckets.h"
#include "app/image_options.h"
#include "app/json.h"
#include "app/progress.h"
#include "base/check.h"
#include "data/image_folder_batches.h"
#include "data/sampler.h"
#include "dist/cuda/device_collective.h"
#include "models/registry.h"
#include "nn/conv_algorithm.h"
#include "nn/ops/sgd_update.h"
#include "nn/ops/softmax_cross_entropy.h"

namespace rt {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int64_t> g_step{-1};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::string data_path(const DataConfig& d, const std::string& file) {
  return (std::filesystem::path(d.dir) / file).string();
}

// data.source = "imagefolder": the training or evaluation tree, its transforms from the config.
std::unique_ptr<BatchSource> open_image_folder(const DataConfig& d, const std::string& model, bool training,
                                               uint64_t seed, int workers,
                                               std::function<void(const std::string&)> warn) {
  FolderBatchOptions o;
  o.sample = image_sample_options(d, model);
  o.training = training;
  o.seed = seed;
  o.workers = workers;
  o.prefetch = static_cast<int>(d.prefetch);
  o.error_on_bad_file = d.on_bad_file == "error";
  o.warn = std::move(warn);
  const std::string root = data_path(d, training ? d.train_folder : d.val_folder);
  return std::make_unique<ImageFolderBatches>(load_image_index(root, "", d.rebuild_index), std::move(o));
}

// The rows [0, rows) of a plain (N, K) tensor, without copying.
Tensor leading_rows(const Tensor& t, int64_t rows) {
  return Tensor(plain_spec({rows, t.dim(1)}, t.device()), const_cast<float*>(t.data()), nullptr);
}

void copy_state(Graph& from, Graph& to) {
  copy_bytes(to.param_arena(), to.device(), from.param_arena(), from.device(),
             static_cast<size_t>(from.arena_floats()) * sizeof(float));
  for (size_t i = 0; i < from.buffers().size(); ++i) {
    const Tensor& src = from.buffers()[i].value;
    copy_bytes(const_cast<float*>(to.buffers()[i].value.data()), to.device(), src.data(), src.device(), src.bytes());
  }
}

// A span on the compute row of the timeline, if one is being written.
class Span {
 public:
  Span(Timeline* t, const char* name) : t_(t), name_(name), start_(t ? t->now_us() : 0) {}
  ~Span() {
    if (t_) t_->span(name_, "step", start_, t_->now_us(), 0);
  }

 private:
  Timeline* t_;
  const char* name_;
  double start_;
};

// Settings that only one device can honour, refused at start on any number of ranks.
void check_device_settings(const Config& config, Device device) {
  const DistConfig& dc = config.dist;
  if (device == Device::kCpu) {
    RT_CHECK(config.train.precision == "fp32", "train.precision = \"", config.train.precision,
             "\" applies to device = \"cuda\" only; the CPU computes in float32");
    RT_CHECK(dc.allreduce != "nccl", "dist.allreduce = \"nccl\" needs train.device = \"cuda\"; on the CPU use ring or mpi");
    RT_CHECK(!config.train.cuda_graph, "train.cuda_graph = true needs train.device = \"cuda\": the CPU runs each "
             "op as it is called");
    return;
  }
  check_device_allreduce(dc.allreduce, parse_wire(dc.wire));
  RT_CHECK(dc.transport == "auto", "dist.transport = \"", dc.transport, "\" moves host memory; with device = \"cuda\" "
           "the ring moves GPU memory with NCCL (leave dist.transport = \"auto\")");
}

}  // namespace

int64_t current_training_step() { return g_step.load(); }

Trainer::Trainer(const Config& config, std::ostream& out, const World& world)
    : config_(config), resolved_(to_toml(config)), out_(out), world_(world) {
  // Ranks on a host share its cores (oversubscribed compute threads are the classic slowdown).
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = config.train.threads > 0 ? static_cast<int>(config.train.threads)
                                               : std::max(1, cores / std::max(1, world.local_size()));
  omp_set_num_threads(threads);
  const Device device = parse_device(config.train.device);
  if (device == Device::kCuda) {
    // Before any other CUDA call: one GPU per rank on each host, chosen by local rank.
    select_cuda_device(world.local_rank());
    set_cuda_precision(parse_precision(config.train.precision));
  }
  check_device_settings(config, device);

  const DataConfig& d = config.data;
  synthetic_ = d.source == "synthetic";
  if (synthetic_) {
    input_shape_ = find_model(config.model.name).default_input;
    if (d.image_size > 0) input_shape_[1] = input_shape_[2] = d.image_size;
  } else if (d.source == "imagefolder") {
    const int leftover = cores - threads * std::max(1, world.local_size());
    const int workers = d.workers > 0 ? static_cast<int>(d.workers) : std::max(1, leftover / std::max(1, world.local_size()));
    auto warn = [this](const std::string& m) { std::cerr << world_.tag() << "ringtrain: warning: " << m << std::endl; };
    train_ = open_image_folder(d, config.model.name, /*training=*/true, static_cast<uint64_t>(config.train.seed), workers, warn);
    test_ = open_image_folder(d, config.model.name, /*training=*/false, 0, workers, warn);
  } else {
    train_ = std::make_unique<InMemoryBatches>(
        load_idx_dataset(data_path(d, d.train_images), data_path(d, d.train_labels), d.mean, d.std));
    test_ = std::make_unique<InMemoryBatches>(
        load_idx_dataset(data_path(d, d.test_images), data_path(d, d.test_labels), d.mean, d.std));
  }
  if (train_) {
    const int64_t classes = std::max(train_->num_classes(), test_->num_classes());
    RT_CHECK(classes <= config.model.num_classes, "the data in '", d.dir, "' has ", classes,
             " classes but model.num_classes = ", config.model.num_classes);
    const auto [c, h, w] = train_->sample_shape();
    input_shape_ = {c, h, w};
  }

  const ModelOptions mo{input_shape_, config.model.num_classes, config.model.dropout, config.model.aux_logits};
  graph_ = build_model(config.model.name, mo);
  std::unique_ptr<Collective> collective;
  if (world.size() > 1) {
    const DistConfig& dc = config.dist;
    StallPolicy stall{dc.stall_warn_s, dc.stall_abort_s,
                      [this](const std::string& m) { std::cerr << world_.tag() << "ringtrain: warning: " << m << std::endl; },
                      [this](const std::string& m) { world_.abort(m); },
                      // On the CPU the compute threads fill this rank's cores, and a spinning
                      // communication thread would take its core from them during backward.
                      device == Device::kCpu  ? StallPolicy::Idle::kSleep
                      : world.oversubscribed() ? StallPolicy::Idle::kYield
                                               : StallPolicy::Idle::kSpin};
    if (device == Device::kCuda)
      collective = make_device_collective(dc.allreduce, world.comm(), parse_wire(dc.wire));
    else
      collective = make_collective(dc.allreduce, world.comm(), stall, dc.transport, dc.tcp_interface, parse_wire(dc.wire));
    // The ring reads neighbours' gradients in place where it can (Note [Zero-copy pieces]).
    if (device == Device::kCpu)
      graph_->take_arenas_from([c = collective.get()](int64_t floats) { return c->allocate(static_cast<size_t>(floats)); });
  }
  const PlanContext plan_context{parse_conv_algorithm(config.train.conv_algorithm)};
  graph_->plan(config.train.batch_per_rank, device, /*training=*/true, plan_context);
  graph_->init_parameters(static_cast<uint64_t>(config.train.seed));
  dy_ = std::make_unique<OutputGradients>(*graph_);
  step_loss_ = std::make_unique<StepLoss>(*graph_);
  if (!synthetic_) {
    eval_graph_ = build_model(config.model.name, mo);
    eval_graph_->plan(config.eval.batch, device, /*training=*/false, plan_context);
  }
  sgd_ = std::make_unique<Sgd>(*graph_, SgdOptions{config.train.momentum, config.train.nesterov,
                                                   config.train.weight_decay, config.train.decay_bias_and_bn});
  if (config.train.precision == "fp16") scaler_ = std::make_unique<LossScaler>();

  require_same_on_all_ranks("config key", config_items(resolved_), world);
  require_same_on_all_ranks("model tensor", model_items(*graph_), world);
  broadcast_model_state(*graph_, world);

  const int64_t global_batch = config.train.batch_per_rank * world.size();
  if (synthetic_) {
    // The schedule spans the benchmark's steps as if they were one epoch.
    const BenchConfig& b = config.bench;
    steps_per_epoch_ = b.warmup_steps + b.windows * b.steps_per_window;
  } else {
    const EpochSampler sampler(train_->count(), config.train.batch_per_rank, static_cast<uint64_t>(config.train.seed),
                               world.rank(), world.size(),
                               config.data.tail == "pad" ? TailPolicy::kPad : TailPolicy::kDrop);
    steps_per_epoch_ = sampler.steps_per_epoch();
  }
  const ScheduleConfig& s = config.schedule;
  schedule_.kind = parse_schedule_kind(s.kind);
  schedule_.base = scaled_lr(config.train.lr_per_256, global_batch);
  schedule_.warmup_steps = static_cast<int64_t>(std::llround(s.warmup_epochs * static_cast<double>(steps_per_epoch_)));
  for (double m : s.milestones)
    schedule_.milestones.push_back(static_cast<int64_t>(std::llround(m * static_cast<double>(steps_per_epoch_))));
  schedule_.factor = s.factor;
  schedule_.final_fraction = s.final_fraction;
  schedule_.total_steps = steps_per_epoch_ * config.train.epochs;
  position_.seed = config.train.seed;

  if (!config.log.timeline.empty())
    timeline_ = std::make_unique<Timeline>(config.log.timeline, world, config.log.timeline_first_step,
                                           config.log.timeline_steps,
                                           static_cast<int64_t>(config.log.timeline_max_mb * 1024 * 1024));
  if (world.size() > 1) {
    const DistConfig& dc = config.dist;
    GradientBuckets plan = plan_gradient_buckets(*graph_, dc);
    std::optional<ArenaUpdate> update;
    // SGD runs in the communication thread, on this rank's share (Note [Sharded update]). On the
    // GPU it follows the allreduce on the compute stream instead: the communication thread only
    // enqueues work (Note [Device collectives]).
    if (dc.sharded_update && device == Device::kCpu)
      update = ArenaUpdate{[this](int64_t offset, int64_t count) {
                             // On the communication thread, beside the compute threads: an OpenMP team
                             // here would take their cores, and the update is bound by memory anyway.
                             static thread_local const bool alone = (omp_set_num_threads(1), true);
                             (void)alone;
                             sgd_->step_range(lr_, offset, offset + count);
                           },
                           graph_->param_arena()};
    reducer_ = std::make_unique<GradReducer>(graph_->grad_arena(), std::move(plan.params), std::move(plan.buckets),
                                             std::move(collective), dc.overlap, timeline_.get(), std::move(update));
    graph_->on_grad_ready([this](size_t i) { reducer_->on_grad_ready(i); });
  }

  if (world.rank() == 0) {
    out_ << "ringtrain: model " << config.model.name << " (" << graph_->parameter_count() << " parameters), ";
    if (synthetic_)
      out_ << "synthetic images of " << shape_str(mo.input_shape);
    else
      out_ << train_->count() << " training / " << test_->count() << " test images of " << shape_str(mo.input_shape);
    out_ << ", " << device_name(device);
    if (device == Device::kCuda)
      out_ << " in " << config.train.precision << (scaler_ ? " with dynamic loss scaling" : "");
    if (config.train.cuda_graph) out_ << ", steps after the first replayed as a CUDA graph (" << replayed_work() << ")";
    out_ << "\n"
         << "ringtrain: world " << world.size() << " rank(s)" << (world.uses_mpi() ? " over MPI" : "") << ", "
         << threads << " compute threads per rank, global batch " << global_batch << " (" << config.train.batch_per_rank
         << " per rank), learning rate " << schedule_.base << " (" << config.train.lr_per_256 << " per 256 images), "
         << steps_per_epoch_ << " steps per epoch\n";
    if (reducer_)
      out_ << "ringtrain: gradients averaged by " << reducer_->collective().describe()
           << " in " << reducer_->buckets().size() << " bucket(s), " << (config.dist.overlap ? "overlapped with" : "after")
           << " backward" << (reducer_->updates_parameters() ? ", SGD sharded across ranks" : "") << "\n";
  }
}

Trainer::~Trainer() = default;

void Trainer::resume(const std::string& dir) {
  position_ = load_checkpoint(dir, *graph_, *sgd_, config_.model.name);
  RT_CHECK(position_.seed == config_.train.seed, "cannot resume from '", dir, "': it was trained with train.seed = ",
           position_.seed, ", the config says ", config_.train.seed);
  // fp16 continues from the saved loss scale (a checkpoint of another precision has none: the
  // scale starts afresh and backs off within a few steps if it must).
  if (scaler_ && position_.loss_scale > 0) scaler_->set_scale(position_.loss_scale);
  // Checkpoints fall on epoch ends; at another world size the step count per epoch differs, so
  // the schedule position is recomputed from the epochs done.
  position_.step = position_.epochs_done * steps_per_epoch_;
  if (world_.rank() == 0)
    out_ << "ringtrain: resumed from " << dir << " after epoch " << position_.epochs_done << " ("
         << position_.images_seen << " images seen; now step " << position_.step << ")\n";
}

void Trainer::prepare_run_folder() {
  if (world_.rank() != 0) return;
  std::error_code ec;
  std::filesystem::create_directories(config_.checkpoint.dir, ec);
  RT_CHECK(!ec, "cannot create checkpoint folder '", config_.checkpoint.dir, "': ", ec.message());
  write_file_atomically((std::filesystem::path(config_.checkpoint.dir) / "config.toml").string(), resolved_);
  if (!config_.log.metrics.empty())
    metrics_path_ = (std::filesystem::path(config_.checkpoint.dir) / config_.log.metrics).string();
}

void Trainer::write_metric(const std::string& line) {
  if (!metrics_path_.empty()) append_line(metrics_path_, line);
}

void Trainer::average_buffers() {
  if (world_.size() == 1) return;
  const float inv = 1.0f / static_cast<float>(world_.size());
  for (const BufferRef& b : graph_->buffers())
    on_host(const_cast<float*>(b.value.data()), b.value.numel(), graph_->device(), [&](float* v) {
      world_.allreduce_sum(v, b.value.numel());
      for (int64_t i = 0; i < b.value.numel(); ++i) v[i] *= inv;
    });
}

void Trainer::gather_optimizer_state() {
  if (reducer_ && reducer_->updates_parameters()) reducer_->gather_updated(sgd_->momentum_arena());
}

double StepTimes::host_s() const {
  double s = forward_host_s + optimizer_host_s;
  for (double layer : backward_host_s) s += layer;
  return s;
}

void Trainer::profile_steps(StepTimes* times) {
  profile_ = times;
  graph_->time_backward_layers(times ? &times->backward_s : nullptr, times ? &times->backward_host_s : nullptr);
}

std::string Trainer::replayed_work() const {
  if (!config_.train.cuda_graph) return "";
  return reducer_ ? "forward and loss" : "forward, loss and backward";
}

void Trainer::replay_step_work(const RunContext& ctx, double loss_scale, bool with_backward) {
  // A recording holds the loss scale as it was; fp16 changes it on overflow and after 2000 good steps.
  // (The closure runs once, while recording; it takes its values by copy all the same, as the
  // recording does.)
  if (!step_work_.recorded() || recorded_loss_scale_ != loss_scale) {
    step_work_.record([this, ctx, loss_scale, with_backward] {
      graph_->forward_work(ctx);
      step_loss_->compute(*graph_, config_.train.label_smoothing, dy_.get(), loss_scale);
      if (with_backward) graph_->backward(dy_->views(), ctx);
    });
    recorded_loss_scale_ = loss_scale;
    ++recordings_;
  }
  step_work_.replay();
  ++replayed_steps_;
}

LossResult Trainer::train_step(const float* images, const int32_t* labels, Device images_on) {
  // Profiling: seconds since the last mark, with the device's queue drained first; and the host's
  // seconds since the last mark, the queue left as it is.
  using Clock = std::chrono::steady_clock;
  Clock::time_point last = Clock::now();
  auto profile_mark = [this, &last] {
    synchronize(graph_->device());
    const Clock::time_point now = Clock::now();
    const double s = std::chrono::duration<double>(now - last).count();
    last = now;
    return s;
  };
  auto host_since_mark = [&last] { return std::chrono::duration<double>(Clock::now() - last).count(); };
  if (profile_) profile_mark();
  Timeline* tl = timeline_.get();
  g_step = position_.step;
  const TrainConfig& t = config_.train;
  const RunContext ctx{true, static_cast<uint64_t>(t.seed), static_cast<uint64_t>(position_.step)};
  lr_ = schedule_.at(position_.step);  // before begin_step: a sharded update reads it
  if (reducer_) reducer_->begin_step(position_.step);
  const double loss_scale = scaler_ ? scaler_->scale() : 1.0;
  // Note [Captured steps]: never while profiling (its waits split the step), nor at a run's first
  // step; backward only where no collective listens to it.
  const bool replay = t.cuda_graph && !profile_ && steps_run_ > 0;
  const bool backward_replayed = replay && !reducer_;
  LossResult loss;
  {
    Span span(tl, !replay ? "forward" : backward_replayed ? "forward and backward, replayed" : "forward, replayed");
    graph_->set_input(images, images_on);
    graph_->begin_forward(ctx);
    step_loss_->set_targets(labels);
    if (replay) {
      replay_step_work(ctx, loss_scale, backward_replayed);
    } else {
      graph_->forward_work(ctx);
      if (profile_) profile_->forward_host_s += host_since_mark();
      step_loss_->compute(*graph_, t.label_smoothing, dy_.get(), loss_scale);
    }
    loss = step_loss_->result();
    if (profile_) profile_->forward_s += profile_mark();
  }
  RT_CHECK(std::isfinite(loss.loss), "loss became ", loss.loss, " at step ", position_.step + 1, " (learning rate ",
           lr_, "): lower train.lr_per_256 or add schedule.warmup_epochs; the last checkpoint is untouched");
  if (!backward_replayed) {
    Span span(tl, "backward");
    graph_->backward(dy_->views(), ctx);
  }
  if (reducer_) {
    Span span(tl, "wait for allreduce");
    reducer_->finish();
  }
  // fp16: every rank holds the same averaged gradients, so every rank skips alike.
  const bool apply = !scaler_ || scaler_->update(all_finite(graph_->device(), graph_->grad_arena(),
                                                            graph_->arena_floats()), position_.step);
  if (apply && (!reducer_ || !reducer_->updates_parameters())) {
    Span span(tl, "optimizer");
    if (profile_) profile_mark();
    sgd_->step(lr_, 1.0 / loss_scale);
    if (profile_) profile_->optimizer_host_s += host_since_mark();
    if (profile_) profile_->optimizer_s += profile_mark();
  }
  if (profile_) ++profile_->steps;
  ++steps_run_;
  ++position_.step;
  position_.images_seen += t.batch_per_rank * world_.size();
  return loss;
}

TrainResult Trainer::train(int64_t stop_after_epochs) {
  RT_CHECK(!synthetic_, "data.source = \"synthetic\" is one random batch for `ringtrain bench`; training needs a "
                        "real data set (data.source = \"idx\")");
  prepare_run_folder();
  const TrainConfig& t = config_.train;
  const EpochSampler sampler(train_->count(), t.batch_per_rank, static_cast<uint64_t>(t.seed), world_.rank(),
                             world_.size(), config_.data.tail == "pad" ? TailPolicy::kPad : TailPolicy::kDrop);
  const int64_t steps = steps_per_epoch_;
  const int64_t B = t.batch_per_rank, global_batch = B * world_.size();
  const int64_t sample = input_shape_[0] * input_shape_[1] * input_shape_[2];
  const std::shared_ptr<void> image_memory =
      allocate_host_staging(graph_->device(), static_cast<size_t>(B * sample) * sizeof(float));
  float* images = static_cast<float*>(image_memory.get());
  std::vector<int32_t> labels(static_cast<size_t>(B));
  Progress progress(world_.rank() == 0 ? Progress::resolve(config_.log.progress) : Progress::Mode::kNone,
                    config_.log.every_steps, out_);
  TrainResult result;
  int64_t trained_images = 0, run_step = 0;
  Timeline* tl = timeline_.get();

  const int64_t last_epoch =
      stop_after_epochs > 0 ? std::min(t.epochs, position_.epochs_done + stop_after_epochs) : t.epochs;
  for (int64_t epoch = position_.epochs_done; epoch < last_epoch; ++epoch) {
    train_->start(epoch, sampler.epoch_indices(epoch), B);
    progress.begin_epoch(epoch, t.epochs, steps);
    const auto epoch_start = Clock::now();
    // Summed over ranks at the epoch's end: loss sum, correct top-1, seconds waiting for data,
    // unreadable files skipped.
    double epoch_stats[4] = {0, 0, 0, 0};
    double epoch_train_seconds = 0;
    for (int64_t s = 0; s < steps; ++s, ++run_step) {
      g_step = position_.step;
      if (tl) tl->set_step(run_step);
      const auto step_start = Clock::now();
      {
        Span span(tl, "data");
        epoch_stats[2] += train_->next(images, labels.data());
      }
      const LossResult loss = train_step(images, labels.data());
      const double lr = lr_;  // the rate train_step applied
      if (tl) tl->flush(run_step);
      const double dt = seconds_since(step_start);
      result.train_seconds += dt;
      epoch_train_seconds += dt;
      trained_images += global_batch;
      result.step_losses.push_back(loss.loss);
      epoch_stats[0] += loss.loss;
      epoch_stats[1] += static_cast<double>(loss.correct1);
      // ETA of the whole run, from this run's mean step time so far.
      const int64_t steps_left = (last_epoch - epoch) * steps - (s + 1);
      const double eta = result.train_seconds / static_cast<double>(result.step_losses.size()) * static_cast<double>(steps_left);
      progress.step(s, loss.loss, lr, static_cast<double>((s + 1) * global_batch) / epoch_train_seconds, eta);
      write_metric(JsonLine().add("kind", "step").add("epoch", epoch + 1).add("step", position_.step)
                       .add("loss", loss.loss).add("lr", lr).add("images_per_s", static_cast<double>(global_batch) / dt)
                       .str());
    }
    g_step = -1;
    progress.end_epoch();
    position_.epochs_done = epoch + 1;
    epoch_stats[3] = static_cast<double>(train_->skipped());
    world_.allreduce_sum(epoch_stats, 4);
    const double train_loss = epoch_stats[0] / static_cast<double>(steps * world_.size());
    const double train_top1 = epoch_stats[1] / static_cast<double>(steps * global_batch);
    // Each rank's share of its step time spent waiting for a batch, averaged over ranks.
    const double data_wait = epoch_stats[2] / static_cast<double>(world_.size()) / std::max(epoch_train_seconds, 1e-9);
    const int64_t skipped = static_cast<int64_t>(epoch_stats[3]);
    JsonLine record;
    record.add("kind", "epoch").add("epoch", epoch + 1).add("step", position_.step).add("train_loss", train_loss)
        .add("train_top1", train_top1).add("epoch_seconds", seconds_since(epoch_start)).add("data_wait", data_wait)
        .add("skipped_files", skipped);
    if (scaler_) record.add("loss_scale", scaler_->scale()).add("skipped_steps", scaler_->skipped_steps());
    char line[256];
    std::snprintf(line, sizeof line, "epoch %lld/%lld: train loss %.4f top-1 %.2f%%, data wait %.1f%%",
                  static_cast<long long>(epoch + 1), static_cast<long long>(t.epochs), train_loss, 100 * train_top1,
                  100 * data_wait);
    std::string summary = line;
    if (skipped > 0) summary += str_cat(", ", skipped, " unreadable file(s) skipped");
    if (scaler_)
      summary += str_cat(", fp16 loss scale ", scaler_->scale(), ", ", scaler_->skipped_steps(),
                         " step(s) skipped for overflow so far");
    const bool last = epoch + 1 == t.epochs;
    if ((epoch + 1) % config_.eval.every_epochs == 0 || last) {
      result.last_eval = evaluate();
      record.add("test_loss", result.last_eval.loss).add("test_top1", result.last_eval.top1)
          .add("test_top5", result.last_eval.top5);
      std::snprintf(line, sizeof line, " | test loss %.4f top-1 %.2f%% top-5 %.2f%%", result.last_eval.loss,
                    100 * result.last_eval.top1, 100 * result.last_eval.top5);
      summary += line;
    }
    std::snprintf(line, sizeof line, " (%.1f s)\n", seconds_since(epoch_start));
    if (world_.rank() == 0) out_ << summary << line << std::flush;
    write_metric(record.str());
    if ((epoch + 1) % config_.checkpoint.every_epochs == 0 || last) {
      gather_optimizer_state();
      average_buffers();
      if (scaler_) position_.loss_scale = scaler_->scale();
      if (world_.rank() == 0)
        save_checkpoint(config_.checkpoint.dir, *graph_, *sgd_, position_, config_.model.name, resolved_);
    }
  }
  gather_optimizer_state();  // whoever reads the optimizer after a run finds it whole
  if (scaler_) result.skipped_steps = scaler_->skipped_steps();
  result.images_per_s = result.train_seconds > 0 ? static_cast<double>(trained_images) / result.train_seconds : 0;
  return result;
}

EvalResult Trainer::evaluate() {
  RT_CHECK(!synthetic_, "data.source = \"synthetic\" has no test set to evaluate");
  average_buffers();
  copy_state(*graph_, *eval_graph_);
  const EpochSampler sampler(test_->count(), config_.eval.batch, 0, world_.rank(), world_.size(), TailPolicy::kPad, false);
  const std::vector<int64_t> indices = sampler.eval_indices();
  const int64_t B = config_.eval.batch;
  const int64_t sample = input_shape_[0] * input_shape_[1] * input_shape_[2];
  const std::shared_ptr<void> image_memory =
      allocate_host_staging(eval_graph_->device(), static_cast<size_t>(B * sample) * sizeof(float));
  float* images = static_cast<float*>(image_memory.get());
  std::vector<int32_t> labels(static_cast<size_t>(B));
  // A short last chunk is padded with its first sample; only the valid rows are scored.
  std::vector<int64_t> padded;
  for (size_t start = 0; start < indices.size(); start += static_cast<size_t>(B))
    for (size_t i = 0; i < static_cast<size_t>(B); ++i)
      padded.push_back(indices[start + (start + i < indices.size() ? i : 0)]);
  test_->start(0, padded, B);
  double totals[4] = {0, 0, 0, 0};  // loss sum, top-1, top-5, samples
  for (size_t start = 0; start < indices.size(); start += static_cast<size_t>(B)) {
    const int64_t valid = std::min<int64_t>(B, static_cast<int64_t>(indices.size() - start));
    test_->next(images, labels.data());
    const Tensor& logits = eval_graph_->forward(images, RunContext{false, 0, 0});
    const LossResult l = softmax_cross_entropy(leading_rows(logits, valid), labels.data(), 0.0, nullptr);
    totals[0] += l.loss * static_cast<double>(valid);
    totals[1] += static_cast<double>(l.correct1);
    totals[2] += static_cast<double>(l.correct5);
    totals[3] += static_cast<double>(valid);
  }
  world_.allreduce_sum(totals, 4);  // exact: counts, summed over every rank's shard
  EvalResult r;
  r.samples = static_cast<int64_t>(totals[3]);
  r.loss = totals[0] / totals[3];
  r.top1 = totals[1] / totals[3];
  r.top5 = totals[2] / totals[3];
  return r;
}

}  // namespace rt
