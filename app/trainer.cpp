// The training and evaluation loops, and one training step (the Trainer is built in
// trainer_setup.cpp).
#include "app/trainer.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <ostream>

#include "app/consistency.h"
#include "app/epoch_report.h"
#include "app/progress.h"
#include "formats/atomic_file.h"
#include "formats/json.h"
#include "base/check.h"
#include "base/test_fault.h"
#include "data/sampler.h"
#include "nn/ops/sgd_update.h"
#include "nn/ops/softmax_cross_entropy.h"

namespace rt {
namespace {

using Clock = std::chrono::steady_clock;

std::atomic<int64_t> g_step{-1};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

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

}  // namespace

int64_t current_training_step() { return g_step.load(); }

Trainer::~Trainer() = default;

void Trainer::resume(const std::string& dir) {
  position_ = load_checkpoint(dir, *graph_, *sgd_, config_.model.name);
  RT_CHECK(position_.seed == config_.train.seed, "cannot resume from '", dir,
           "': it was trained with train.seed = ", position_.seed, ", the config says ", config_.train.seed);
  loss_scaling_->resume(position_);
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

void Trainer::write_metric(const Json& record) {
  if (!metrics_path_.empty()) append_line(metrics_path_, to_json(record));
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

void Trainer::profile_steps(StepTimes* times) {
  profile_ = times;
  graph_->time_backward_layers(times ? &times->backward_s : nullptr, times ? &times->backward_host_s : nullptr);
}

LossResult Trainer::train_step(const float* images, const int32_t* labels, Device images_on) {
  StepClock clock(profile_, graph_->device());  // when profiling (bench --profile)
  const RunContext ctx = begin_step();
  const double loss_scale = loss_scaling_->scale();
  const bool replay = replay_.replays(profile_ != nullptr);
  const LossResult loss = forward_and_loss(images, labels, images_on, ctx, loss_scale, replay, clock);
  if (!replay || !replay_.covers_backward()) {
    Span span(timeline_.get(), "backward");
    graph_->backward(dy_->views(), ctx);
  }
  inject_fault("backward", world_.rank(), position_.step);  // the reducer's thread is mid-ring
  if (reducer_) {
    Span span(timeline_.get(), "wait for allreduce");
    reducer_->finish();
  }
  if (loss_scaling_->gradients_apply(*graph_, position_.step) && (!reducer_ || !reducer_->updates_parameters()))
    update(loss_scale, clock);
  end_step(clock);
  return loss;
}

RunContext Trainer::begin_step() {
  g_step = position_.step;
  inject_fault("step", world_.rank(), position_.step);
  lr_ = schedule_.at(position_.step);  // before the reducer's begin_step: a sharded update reads it
  if (reducer_) reducer_->begin_step(position_.step);
  return RunContext{true, static_cast<uint64_t>(config_.train.seed), static_cast<uint64_t>(position_.step)};
}

LossResult Trainer::forward_and_loss(const float* images, const int32_t* labels, Device images_on,
                                     const RunContext& ctx, double loss_scale, bool replay, StepClock& clock) {
  const double smoothing = config_.train.label_smoothing;
  LossResult loss;
  {
    Span span(timeline_.get(), !replay                     ? "forward"
                               : replay_.covers_backward() ? "forward and backward, replayed"
                                                           : "forward, replayed");
    graph_->set_input(images, images_on);
    graph_->begin_forward(ctx);
    step_loss_->set_targets(labels);
    if (replay) {
      // Runs once, while recording; it takes its values by copy all the same, as the recording does.
      replay_.replay(loss_scale, [this, ctx, loss_scale, smoothing] {
        graph_->forward_work(ctx);
        step_loss_->compute(*graph_, smoothing, dy_.get(), loss_scale);
        if (replay_.covers_backward()) graph_->backward(dy_->views(), ctx);
      });
    } else {
      graph_->forward_work(ctx);
      clock.issued(&StepTimes::forward_host_s);
      step_loss_->compute(*graph_, smoothing, dy_.get(), loss_scale);
    }
    loss = step_loss_->result();
    clock.done(&StepTimes::forward_s);
  }
  RT_CHECK(std::isfinite(loss.loss), "loss became ", loss.loss, " at step ", position_.step + 1, " (learning rate ",
           lr_, "): lower train.lr_per_256 or add schedule.warmup_epochs; the last checkpoint is untouched");
  return loss;
}

void Trainer::update(double loss_scale, StepClock& clock) {
  Span span(timeline_.get(), "optimizer");
  clock.start();
  sgd_->step(lr_, 1.0 / loss_scale);
  clock.issued(&StepTimes::optimizer_host_s);
  clock.done(&StepTimes::optimizer_s);
}

void Trainer::end_step(StepClock& clock) {
  clock.step_done();
  replay_.step_done();
  ++position_.step;
  position_.images_seen += config_.train.batch_per_rank * world_.size();
}

TrainResult Trainer::train(int64_t stop_after_epochs) {
  RT_CHECK(!synthetic_,
           "data.source = \"synthetic\" is one random batch for `ringtrain bench`; training needs a "
           "real data set (data.source = \"idx\")");
  prepare_run_folder();
  const TrainConfig& t = config_.train;
  const EpochSampler sampler = train_sampler();
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
      const double eta =
          result.train_seconds / static_cast<double>(result.step_losses.size()) * static_cast<double>(steps_left);
      progress.step(s, loss.loss, lr, static_cast<double>((s + 1) * global_batch) / epoch_train_seconds, eta);
      write_metric(Json{{"kind", "step"},
                        {"epoch", epoch + 1},
                        {"step", position_.step},
                        {"loss", loss.loss},
                        {"lr", lr},
                        {"images_per_s", static_cast<double>(global_batch) / dt}});
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
    EpochReport report{.epoch = epoch + 1,
                       .epochs = t.epochs,
                       .step = position_.step,
                       .train_loss = train_loss,
                       .train_top1 = train_top1,
                       .data_wait = data_wait,
                       .skipped_files = static_cast<int64_t>(epoch_stats[3]),
                       .train_seconds = seconds_since(epoch_start),
                       .seconds = 0,  // set after the evaluation
                       .fp16 = loss_scaling_->state(),
                       .test = std::nullopt};
    const bool last = epoch + 1 == t.epochs;
    if ((epoch + 1) % config_.eval.every_epochs == 0 || last) {
      result.last_eval = evaluate();
      report.test = EpochReport::Test{result.last_eval.loss, result.last_eval.top1, result.last_eval.top5};
    }
    report.seconds = seconds_since(epoch_start);
    if (world_.rank() == 0) out_ << report.line() << std::flush;
    write_metric(report.record());
    if ((epoch + 1) % config_.checkpoint.every_epochs == 0 || last) {
      gather_optimizer_state();
      average_buffers();
      loss_scaling_->save(position_);
      if (world_.rank() == 0)
        save_checkpoint(config_.checkpoint.dir, *graph_, *sgd_, position_, config_.model.name, resolved_);
    }
  }
  gather_optimizer_state();  // whoever reads the optimizer after a run finds it whole
  result.images_per_s = result.train_seconds > 0 ? static_cast<double>(trained_images) / result.train_seconds : 0;
  return result;
}

EvalResult Trainer::evaluate() {
  RT_CHECK(!synthetic_, "data.source = \"synthetic\" has no test set to evaluate");
  average_buffers();
  copy_state(*graph_, *eval_graph_);
  const EpochSampler sampler(test_->count(), config_.eval.batch, 0, world_.rank(), world_.size(), TailPolicy::kPad,
                             false);
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
