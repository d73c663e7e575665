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
#include "app/stop_signals.h"
#include "formats/atomic_file.h"
#include "formats/json.h"
#include "base/check.h"
#include "base/test_fault.h"
#include "data/sampler.h"
#include "nn/ops/add.h"
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
  const TrainingPosition saved = load_checkpoint(dir, *graph_, *sgd_, config_.model.name);
  // Each rank picked the newest file itself: a folder whose listing differs between hosts (a
  // stale network-file-system cache) would start the ranks at different steps.
  const std::vector<std::string> chosen = world_.allgather(newest_checkpoint(dir));
  for (int r = 1; r < world_.size(); ++r)
    RT_CHECK(chosen[static_cast<size_t>(r)] == chosen[0], "cannot resume from '", dir, "': rank 0 found ", chosen[0],
             " newest, rank ", r, " found ", chosen[static_cast<size_t>(r)],
             "; every rank must see the same folder (shared storage, not a copy per host)");
  RT_CHECK(saved.seed == config_.train.seed, "cannot resume from '", dir,
           "': it was trained with train.seed = ", saved.seed, ", the config says ", config_.train.seed);
  position_ = saved;
  loss_scaling_->resume(position_);
  // The step is counted at this world size: the epochs done, then as many of this epoch's steps
  // as leave the remaining positions (Note [Resuming inside an epoch]); at the world size that
  // saved, that is the saved step.
  const int64_t left = synthetic_ ? 0 : train_sampler().steps_from(position_.epoch_positions);
  position_.step = position_.epochs_done * steps_per_epoch_ + (steps_per_epoch_ - left);
  resumed_ = saved;
  if (world_.rank() == 0) {
    out_ << "ringtrain: resumed from " << newest_checkpoint(dir) << ", ";
    if (position_.epoch_positions == 0)
      out_ << "after epoch " << position_.epochs_done;
    else
      out_ << "inside epoch " << position_.epochs_done + 1 << " (" << position_.epoch_positions
           << " of its samples done)";
    out_ << " (" << position_.images_seen << " images seen; now step " << position_.step << ")\n";
  }
}

void Trainer::prepare_run_folder() {
  if (world_.rank() != 0) return;
  std::error_code ec;
  std::filesystem::create_directories(config_.checkpoint.dir, ec);
  RT_CHECK(!ec, "cannot create checkpoint folder '", config_.checkpoint.dir, "': ", ec.message());
  // A later run's checkpoints would outrank this one's (Note [Checkpoint files]) and be resumed
  // from instead, or prune this run's saves.
  const std::vector<std::string> saved = numbered_checkpoints(config_.checkpoint.dir);
  if (!saved.empty()) {
    TrainingPosition newest = read_training_position(saved.back());
    RT_CHECK(newest.images_seen <= position_.images_seen, "checkpoint.dir '", config_.checkpoint.dir,
             "' already holds ", saved.back(), ", saved after ", newest.images_seen,
             " images, later than where this run starts (", position_.images_seen,
             " images): go on from it with --resume ", config_.checkpoint.dir,
             " (or --auto-resume), or give this run another checkpoint.dir");
  }
  write_file_atomically((std::filesystem::path(config_.checkpoint.dir) / "config.toml").string(), resolved_);
  if (!config_.log.metrics.empty())
    metrics_path_ = (std::filesystem::path(config_.checkpoint.dir) / config_.log.metrics).string();
}

// Records after the resumed checkpoint were written by the run that stopped after it, and a run
// that starts afresh follows one that stopped before its first save; this run writes them again.
void Trainer::remove_metrics_after_resumed_checkpoint() {
  if (metrics_path_.empty() || !std::filesystem::exists(metrics_path_)) return;
  const TrainingPosition from = resumed_ ? *resumed_ : TrainingPosition{};
  const std::string text = read_file(metrics_path_);
  std::string kept;
  size_t removed = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    bool after = false;
    try {
      const Json r = parse_json(line, metrics_path_);
      const std::string kind = r.value("kind", "");
      // Images seen order steps at any world size; the step number, of older records, at one.
      const bool step_after = r.contains("images_seen") ? r.value("images_seen", int64_t{0}) > from.images_seen
                                                        : r.value("step", int64_t{0}) > from.step;
      after = (kind == "step" && step_after) || (kind == "epoch" && r.value("epoch", int64_t{0}) > from.epochs_done);
    } catch (const Error&) {
      after = true;  // a line cut short by the crash
    }
    if (after)
      ++removed;
    else
      kept += line + "\n";
  }
  if (removed > 0) write_file_atomically(metrics_path_, kept);
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
  return train_step([&](int64_t) { return MicroBatch{images, labels, images_on}; });
}

// Note [Gradient accumulation]
// train.accumulate_steps = K makes one optimizer step of K micro-batches, as PyTorch's recipe of K
// backward passes (DDP's no_sync on all but the last) and one optimizer.step(). Each micro-batch's
// loss gradient is scaled by 1/K, so the summed gradients are the mean over the K x B images. The
// backward passes before the last tell the reducer nothing; their sum goes to grad_sum_. In the
// last, each parameter's sum is added into its gradient the moment backward finishes it, just
// before the reducer takes it, so the allreduce still overlaps backward, once per step. Dropout
// draws from micro-step step x K + k. Batch-norm layers see each micro-batch alone: their batch
// statistics, and their running averages, are per micro-batch, as in PyTorch.
LossResult Trainer::train_step(const std::function<MicroBatch(int64_t)>& next) {
  StepClock clock(profile_, graph_->device());  // when profiling (bench --profile)
  const RunContext step = begin_step();
  const double loss_scale = loss_scaling_->scale();
  const int64_t K = config_.train.accumulate_steps;
  LossResult loss;
  for (int64_t k = 0; k < K; ++k) {
    const MicroBatch batch = next(k);
    const RunContext ctx{step.training, step.seed, step.step * static_cast<uint64_t>(K) + static_cast<uint64_t>(k)};
    last_micro_batch_ = k + 1 == K;
    const bool replay = replay_.replays(profile_ != nullptr);  // never with K > 1 (checked at set-up)
    const LossResult micro =
        forward_and_loss(batch.images, batch.labels, batch.on, ctx, loss_scale / static_cast<double>(K), replay, clock);
    if (!replay || !replay_.covers_backward()) {
      Span span(timeline_.get(), "backward");
      graph_->backward(dy_->views(), ctx);
    }
    if (!last_micro_batch_) add_to_grad_sum(k == 0);
    loss.loss += micro.loss / static_cast<double>(K);
    loss.correct1 += micro.correct1;
    loss.correct5 += micro.correct5;
  }
  inject_fault("backward", world_.rank(), position_.step);  // the reducer's thread is mid-ring
  if (reducer_) {
    Span span(timeline_.get(), "wait for allreduce");
    reducer_->finish();
  }
  if (loss_scaling_->gradients_apply(*graph_, position_.step) && (!reducer_ || !reducer_->updates_parameters())) {
    double grad_scale = 1.0 / loss_scale;
    if (config_.train.clip_grad_norm > 0) {  // on the averaged gradients: every rank alike
      grad_norm_ = clip_grad_norm(*graph_, config_.train.clip_grad_norm, grad_scale);
      grad_scale *= grad_norm_.coef;
    }
    update(grad_scale, clock);
  }
  end_step(clock);
  return loss;
}

void Trainer::add_to_grad_sum(bool first) {
  Span span(timeline_.get(), "sum micro-batch gradients");
  const int64_t n = graph_->arena_floats();
  if (first) {
    copy_bytes(grad_sum_.data(), graph_->device(), graph_->grad_arena(), graph_->device(),
               static_cast<size_t>(n) * sizeof(float));
    return;
  }
  Tensor sum(plain_spec({n}, graph_->device()), grad_sum_.data(), nullptr);
  accumulate(sum, Tensor(plain_spec({n}, graph_->device()), graph_->grad_arena(), nullptr));
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

void Trainer::update(double grad_scale, StepClock& clock) {
  Span span(timeline_.get(), "optimizer");
  clock.start();
  sgd_->step(lr_, grad_scale);
  clock.issued(&StepTimes::optimizer_host_s);
  clock.done(&StepTimes::optimizer_s);
}

void Trainer::end_step(StepClock& clock) {
  clock.step_done();
  replay_.step_done();
  ++position_.step;
  position_.images_seen += config_.train.batch_per_rank * config_.train.accumulate_steps * world_.size();
}

Trainer::SaveDecision Trainer::decide_save() {
  const CheckpointConfig& c = config_.checkpoint;
  const int signal = StopSignals::received();
  const bool clock_due = world_.rank() == 0 && c.every_minutes > 0 &&
                         std::chrono::duration<double>(Clock::now() - last_save_).count() >= c.every_minutes * 60;
  // flags[0]: rank 0's clock says save; then, per signal that can be watched, the ranks that got it.
  const std::vector<int>& watchable = watchable_signals();
  double flags[8] = {clock_due ? 1.0 : 0.0};
  RT_CHECK(watchable.size() < std::size(flags), "more watchable signals than flags");
  for (size_t i = 0; i < watchable.size(); ++i) flags[1 + i] = watchable[i] == signal ? 1.0 : 0.0;
  const int count = static_cast<int>(1 + watchable.size());
  if (world_.size() > 1 && (!c.signals.empty() || c.every_minutes > 0)) world_.allreduce_sum(flags, count);
  SaveDecision d;
  for (size_t i = 0; i < watchable.size(); ++i) {
    d.signalled_ranks += static_cast<int>(flags[1 + i]);
    if (flags[1 + i] > 0 && d.signal == 0) d.signal = watchable[i];
  }
  d.stop = d.signalled_ranks > 0;
  d.save = d.stop || flags[0] > 0 || (c.every_steps > 0 && position_.step % c.every_steps == 0);
  return d;
}

std::string Trainer::save(const EpochSums& sums) {
  gather_optimizer_state();
  position_.epoch_sums = sums;
  world_.allreduce_sum(position_.epoch_sums.data(), EpochSums::kCount);
  loss_scaling_->save(position_);
  // The file holds batch-norm statistics averaged over ranks, as evaluation uses them; each rank
  // goes on from its own, as a run that does not save does.
  std::vector<std::vector<float>> own;
  for (const BufferRef& b : graph_->buffers()) {
    own.emplace_back(static_cast<size_t>(b.value.numel()));
    copy_bytes(own.back().data(), Device::kCpu, b.value.data(), graph_->device(), b.value.bytes());
  }
  average_buffers();
  std::string path;
  if (world_.rank() == 0)
    path = save_checkpoint(config_.checkpoint.dir, *graph_, *sgd_, position_, config_.model.name, resolved_,
                           config_.checkpoint.keep);
  // Every rank waits for rank 0's file: a rank that stopped on a signal and exited first could
  // make the launcher end rank 0 mid-write.
  double written = 1;
  world_.allreduce_sum(&written, 1);
  for (size_t i = 0; i < own.size(); ++i) {
    const Tensor& v = graph_->buffers()[i].value;
    copy_bytes(const_cast<float*>(v.data()), graph_->device(), own[i].data(), Device::kCpu, v.bytes());
  }
  last_save_ = Clock::now();
  return path;
}

TrainResult Trainer::train(int64_t stop_after_epochs, int64_t crash_after_steps) {
  RT_CHECK(!synthetic_,
           "data.source = \"synthetic\" is one random batch for `ringtrain bench`; training needs a "
           "real data set (data.source = \"idx\")");
  prepare_run_folder();
  if (world_.rank() == 0) remove_metrics_after_resumed_checkpoint();
  const TrainConfig& t = config_.train;
  const CheckpointConfig& cc = config_.checkpoint;
  const EpochSampler sampler = train_sampler();
  const int64_t steps = steps_per_epoch_;
  // B images a micro-batch; a step is K of them on every rank (Note [Gradient accumulation]).
  const int64_t B = t.batch_per_rank, global_batch = B * t.accumulate_steps * world_.size();
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
  last_save_ = Clock::now();

  const int64_t last_epoch =
      stop_after_epochs > 0 ? std::min(t.epochs, position_.epochs_done + stop_after_epochs) : t.epochs;
  for (int64_t epoch = position_.epochs_done; epoch < last_epoch; ++epoch) {
    // Inside the epoch where a resumed checkpoint stopped: its remaining positions and figures.
    const int64_t first_position = position_.epoch_positions;
    const int64_t first_step = steps - sampler.steps_from(first_position);
    EpochSums sums = world_.rank() == 0 ? position_.epoch_sums : EpochSums{};
    const double skipped_before = sums.skipped;  // train_ counts only its own pass
    position_.epoch_sums = EpochSums{};
    train_->start(epoch, sampler.epoch_indices(epoch, first_position), B);
    progress.begin_epoch(epoch, t.epochs, steps);
    const auto epoch_start = Clock::now();
    double epoch_train_seconds = 0;
    for (int64_t s = first_step; s < steps; ++s, ++run_step) {
      g_step = position_.step;
      if (tl) tl->set_step(run_step);
      const auto step_start = Clock::now();
      const LossResult loss = train_step([&](int64_t) {
        Span span(tl, "data");
        sums.data_wait_s += train_->next(images, labels.data());
        return MicroBatch{images, labels.data(), Device::kCpu};
      });
      const double lr = lr_;  // the rate train_step applied
      if (tl) tl->flush(run_step);
      const double dt = seconds_since(step_start);
      result.train_seconds += dt;
      epoch_train_seconds += dt;
      trained_images += global_batch;
      result.step_losses.push_back(loss.loss);
      sums.loss += loss.loss;
      sums.loss_terms += 1;
      sums.correct1 += static_cast<double>(loss.correct1);
      sums.images += static_cast<double>(B * t.accumulate_steps);
      position_.epoch_positions += global_batch;
      // ETA of the whole run, from this run's mean step time so far.
      const int64_t steps_left = (last_epoch - epoch) * steps - (s + 1);
      const double eta =
          result.train_seconds / static_cast<double>(result.step_losses.size()) * static_cast<double>(steps_left);
      progress.step(s, loss.loss, lr, static_cast<double>((s + 1 - first_step) * global_batch) / epoch_train_seconds,
                    eta);
      Json record{{"kind", "step"},
                  {"epoch", epoch + 1},
                  {"step", position_.step},
                  {"images_seen", position_.images_seen},
                  {"loss", loss.loss},
                  {"lr", lr},
                  {"images_per_s", static_cast<double>(global_batch) / dt}};
      if (t.clip_grad_norm > 0) record["grad_norm"] = grad_norm_.total;
      write_metric(record);
      if (crash_after_steps > 0 && run_step + 1 == crash_after_steps) return result;
      const SaveDecision d = decide_save();
      // The epoch's own save comes after its evaluation, unless a signal stops the run first.
      const bool epoch_saves = s + 1 == steps && ((epoch + 1) % cc.every_epochs == 0 || epoch + 1 == t.epochs);
      if (d.save && (d.stop || !epoch_saves)) {
        EpochSums mine = sums;
        mine.skipped = skipped_before + static_cast<double>(train_->skipped());
        result.last_checkpoint = save(mine);
      }
      if (d.stop) {
        StopSignals::saved();  // a second SIGTERM from here on has nothing left to cut short
        g_step = -1;
        progress.end_epoch();
        result.stopped_by_signal = d.signal;
        if (world_.rank() == 0)
          out_ << "ringtrain: " << signal_name(d.signal) << " reached " << d.signalled_ranks << " rank(s); saved "
               << result.last_checkpoint << " after step " << position_.step << " and stopped (exit status "
               << kExitSavedOnSignal << "; go on with --resume " << cc.dir << ")\n"
               << std::flush;
        return result;  // save() gathered the optimizer state
      }
    }
    g_step = -1;
    progress.end_epoch();
    position_.epochs_done = epoch + 1;
    position_.epoch_positions = 0;
    position_.epoch_sums = EpochSums{};  // a save inside the epoch left its figures there
    sums.skipped = skipped_before + static_cast<double>(train_->skipped());
    world_.allreduce_sum(sums.data(), EpochSums::kCount);
    // Each rank's share of its step time spent waiting for a batch, averaged over ranks.
    const double data_wait =
        sums.data_wait_s / static_cast<double>(world_.size()) / std::max(epoch_train_seconds, 1e-9);
    EpochReport report{.epoch = epoch + 1,
                       .epochs = t.epochs,
                       .step = position_.step,
                       .train_loss = sums.loss / std::max(sums.loss_terms, 1.0),
                       .train_top1 = sums.correct1 / std::max(sums.images, 1.0),
                       .data_wait = data_wait,
                       .skipped_files = static_cast<int64_t>(sums.skipped),
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
    if ((epoch + 1) % cc.every_epochs == 0 || last) result.last_checkpoint = save(EpochSums{});
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
