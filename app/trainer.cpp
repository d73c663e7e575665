// The training loop: step -> log -> maybe save or stop, then each epoch's evaluation -> report ->
// save. The Trainer is built in trainer_setup.cpp, its step is train_step.cpp, its evaluation
// trainer_eval.cpp.
#include "app/trainer.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <limits>
#include <memory>
#include <ostream>
#include <vector>

#include "app/checkpoint_files.h"
#include "app/epoch_report.h"
#include "app/progress.h"
#include "app/run_folder.h"
#include "app/stop_signals.h"
#include "app/train_tally.h"
#include "base/check.h"
#include "data/sampler.h"
#include "formats/json.h"

namespace rt {
namespace {

std::atomic<int64_t> g_step{-1};

}  // namespace

int64_t current_training_step() { return g_step.load(); }
void set_current_training_step(int64_t step) { g_step = step; }

// What one call of train() carries from step to step.
struct Trainer::Run {
  explicit Run(Trainer& t)
      : folder(t.config_, t.resolved_, t.world_.rank(), t.position_, t.resumed_),
        progress(t.world_.rank() == 0 ? Progress::resolve(t.config_.log.progress) : Progress::Mode::kNone,
                 t.config_.log.every_steps, t.out_),
        global_batch(t.config_.train.batch_per_rank * t.config_.train.accumulate_steps * t.world_.size()),
        tally(global_batch, t.config_.train.batch_per_rank * t.config_.train.accumulate_steps),
        sampler(t.train_sampler()),
        image_memory(allocate_host_staging(
            t.graph_->device(),
            static_cast<size_t>(t.config_.train.batch_per_rank * numel(t.input_shape_)) * sizeof(float))),
        labels(static_cast<size_t>(t.config_.train.batch_per_rank)),
        last_epoch(t.limits_.epochs > 0 ? std::min(t.config_.train.epochs, t.position_.epochs_done + t.limits_.epochs)
                                        : t.config_.train.epochs) {}

  RunFolder folder;
  Progress progress;
  int64_t global_batch;  // images a step takes on all ranks
  TrainTally tally;
  EpochSampler sampler;                // this rank's share of each epoch
  std::shared_ptr<void> image_memory;  // one micro-batch, page-locked where the device reads it
  std::vector<int32_t> labels;
  int64_t last_epoch;  // where this run ends: train.epochs, or sooner under TrainLimits
  TrainResult result;
  // Note [Stopping at a target]: this part's start, and the run's seconds before it.
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
  double seconds_before = 0;
  double run_seconds() const {
    return seconds_before + std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  }

  // The result as it stands, with the run's training time (and, where it ran to its end, speed).
  TrainResult done(bool finished = false) {
    result.train_seconds = tally.run_seconds();
    if (finished && result.train_seconds > 0)
      result.images_per_s = static_cast<double>(tally.run_images()) / result.train_seconds;
    return result;
  }
};

Trainer::~Trainer() = default;

void Trainer::resume(const std::string& dir) {
  const TrainingPosition saved = load_checkpoint(dir, *graph_, *optimizer_, config_.model.name);
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

TrainResult Trainer::train() {
  RT_CHECK(!synthetic_,
           "data.source = \"synthetic\" is one random batch for `ringtrain bench`; training needs a "
           "real data set (data.source = \"idx\")");
  Run run(*this);
  mlperf_.open(config_.checkpoint.dir);
  mlperf_.run_start();
  run.seconds_before = position_.run_seconds;
  run.result.target.target = config_.eval.target_top1;
  agreement_.reset_clock();
  for (int64_t epoch = position_.epochs_done; epoch < run.last_epoch && !run.result.target.reached; ++epoch) {
    for (int64_t s = begin_epoch(run, epoch); s < steps_per_epoch_; ++s) {
      train_logged_step(run, epoch, s);
      if (limits_.steps > 0 && run.tally.run_steps() == limits_.steps) return run.done();
      const AfterStep d = agreement_.after_step(position_.step);
      if (d.report) report_stragglers_now();
      // The epoch's own save comes after its evaluation, unless a signal stops the run first.
      const bool epoch_saves = s + 1 == steps_per_epoch_ && agreement_.saves_after_epoch(epoch + 1);
      if (d.save && (d.stop || !epoch_saves))
        run.result.last_checkpoint = save(run.tally.sums(train_->skipped()), run.run_seconds());
      if (d.stop) return stop_on_signal(run, d);
    }
    end_epoch(run, epoch);
  }
  if (run.result.target.set() && (run.result.target.reached || position_.epochs_done == config_.train.epochs)) {
    if (world_.rank() == 0) out_ << run.result.target.line() << std::flush;
    run.folder.write_metric(run.result.target.record());
    mlperf_.run_stop(run.result.target.reached);
  }
  gather_optimizer_state();  // whoever reads the optimizer after a run finds it whole
  return run.done(/*finished=*/true);
}

int64_t Trainer::begin_epoch(Run& run, int64_t epoch) {
  // Inside the epoch where a resumed checkpoint stopped: its remaining positions and figures.
  const int64_t first_step = steps_per_epoch_ - run.sampler.steps_from(position_.epoch_positions);
  const EpochSums carried = world_.rank() == 0 ? position_.epoch_sums : EpochSums{};
  position_.epoch_sums = EpochSums{};
  train_->start(epoch, run.sampler.epoch_indices(epoch, position_.epoch_positions), config_.train.batch_per_rank);
  run.progress.begin_epoch(epoch, config_.train.epochs, steps_per_epoch_);
  mlperf_.epoch_start(epoch + 1);
  straggler_.begin_epoch();
  run.tally.begin_epoch(carried, first_step);  // the epoch's clock starts with its first step
  return first_step;
}

void Trainer::train_logged_step(Run& run, int64_t epoch, int64_t s) {
  Timeline* tl = timeline_.get();
  const int64_t run_step = run.tally.run_steps();
  if (tl) tl->set_step(run_step);
  const auto start = std::chrono::steady_clock::now();
  float* images = static_cast<float*>(run.image_memory.get());
  // A micro-batch is lent until the next one is borrowed (its backward is done) or the step ends.
  const LossResult loss = train_step([&](int64_t) {
    ComputeSpan span(tl, "data");
    const LentBatch batch = train_->borrow(images, run.labels.data());
    run.tally.add_data_wait(batch.waited);
    return MicroBatch{batch.images, batch.labels, Device::kCpu};
  });
  train_->release();
  g_step = -1;  // between steps: a failure now names its own step, as metrics.jsonl counts it
  if (tl) tl->flush(run_step);
  run.tally.add_step(loss, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  run.result.step_losses.push_back(loss.loss);
  position_.epoch_positions += run.global_batch;
  const int64_t steps_left = (run.last_epoch - epoch) * steps_per_epoch_ - (s + 1);
  run.progress.step(s, loss.loss, lr_, run.tally.images_per_s(s), run.tally.eta_s(steps_left));
  Json record{{"kind", "step"},
              {"epoch", epoch + 1},
              {"step", position_.step},
              {"images_seen", position_.images_seen},
              {"loss", loss.loss},
              {"lr", lr_},
              {"images_per_s", static_cast<double>(run.global_batch) / run.tally.last_step_seconds()}};
  if (config_.train.clip_grad_norm > 0) record["grad_norm"] = grad_norm_.total;
  run.folder.write_metric(record);
  check_replicas_after_step();
}

TrainResult Trainer::stop_on_signal(Run& run, const AfterStep& d) {
  StopSignals::saved();  // a second SIGTERM from here on has nothing left to cut short
  g_step = -1;
  run.progress.end_epoch();
  run.result.stopped_by_signal = d.signal;
  if (world_.rank() == 0)
    out_ << "ringtrain: " << signal_name(d.signal) << " reached " << d.signalled_ranks << " rank(s); saved "
         << run.result.last_checkpoint << " after step " << position_.step << " and stopped (exit status "
         << kExitSavedOnSignal << "; go on with --resume " << config_.checkpoint.dir << ")\n"
         << std::flush;
  return run.done();  // save() gathered the optimizer state
}

void Trainer::end_epoch(Run& run, int64_t epoch) {
  g_step = -1;
  run.progress.end_epoch();
  mlperf_.epoch_stop(epoch + 1);
  position_.epochs_done = epoch + 1;
  position_.epoch_positions = 0;
  position_.epoch_sums = EpochSums{};  // a save inside the epoch left its figures there
  // One sum: the epoch's figures, then each rank's straggler figures in its own slots.
  std::vector<double> all(EpochSums::kCount + static_cast<size_t>(world_.size() * StragglerTally::kFields), 0.0);
  const EpochSums own = run.tally.sums(train_->skipped());
  std::copy(own.data(), own.data() + EpochSums::kCount, all.begin());
  straggler_.write(all.data() + EpochSums::kCount, world_.rank());
  world_.allreduce_sum(all.data(), static_cast<int>(all.size()),
                       watched(str_cat("epoch ", epoch + 1, "'s training figures")));
  EpochSums sums;
  std::copy(all.begin(), all.begin() + EpochSums::kCount, sums.data());
  const StragglerVerdict stragglers = judge_stragglers(all.data() + EpochSums::kCount, hosts_);
  EpochReport report{.epoch = epoch + 1,
                     .epochs = config_.train.epochs,
                     .step = position_.step,
                     .train_loss = sums.loss / std::max(sums.loss_terms, 1.0),
                     .train_top1 = sums.correct1 / std::max(sums.images, 1.0),
                     .data_wait = run.tally.data_wait_share(sums, world_.size()),
                     .skipped_files = static_cast<int64_t>(sums.skipped),
                     .train_seconds = run.tally.epoch_seconds(),
                     .seconds = 0,  // set after the evaluation
                     .fp16 = loss_scaling_->state(),
                     .test = std::nullopt};
  if (evaluates_after(config_.eval, epoch + 1, config_.train.epochs)) {
    mlperf_.eval(epoch + 1, [&] {
      run.result.last_eval = evaluate();
      return run.result.last_eval.top1;
    });
    report.test = EpochReport::Test{run.result.last_eval.loss, run.result.last_eval.top1, run.result.last_eval.top5};
    TargetOutcome& target = run.result.target;
    target.epoch = epoch + 1;
    target.top1 = run.result.last_eval.top1;
    target.run_seconds = run.run_seconds();
    target.reached = target.set() && target.top1 >= target.target;
  }
  report.seconds = run.tally.epoch_seconds();
  if (world_.rank() == 0) {
    out_ << report.line() << std::flush;
    if (!stragglers.line.empty()) out_ << "ringtrain: " << stragglers.line << "\n" << std::flush;
  }
  Json record = report.record();
  stragglers.add_to(record);
  run.folder.write_metric(record);
  // The model that reached the target is saved whatever checkpoint.every_epochs says.
  if (agreement_.saves_after_epoch(epoch + 1) || run.result.target.reached)
    run.result.last_checkpoint = save(EpochSums{}, run.run_seconds());
}

// SIGUSR2 (Note [Naming the straggler]): the epoch so far, every rank in one sum at this step.
void Trainer::report_stragglers_now() {
  std::vector<double> all(static_cast<size_t>(world_.size() * StragglerTally::kFields), 0.0);
  straggler_.write(all.data(), world_.rank());
  world_.allreduce_sum(all.data(), static_cast<int>(all.size()),
                       watched(str_cat("step ", position_.step, ": the straggler report")));
  if (world_.rank() == 0)
    out_ << "ringtrain: on SIGUSR2, at step " << position_.step << ": "
         << judge_stragglers(all.data(), hosts_).on_demand() << "\n"
         << std::flush;
}

std::string Trainer::save(const EpochSums& sums, double run_seconds) {
  position_.run_seconds = run_seconds;
  gather_optimizer_state();
  check_replicas_now(str_cat("before the save after step ", position_.step), /*with_momentum=*/true);
  position_.epoch_sums = sums;
  world_.allreduce_sum(position_.epoch_sums.data(), EpochSums::kCount,
                       watched(str_cat("the save after step ", position_.step, ": the epoch's figures")));
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
    path = save_checkpoint(config_.checkpoint.dir, *graph_, *optimizer_, position_, config_.model.name, resolved_,
                           config_.checkpoint.keep);
  // Every rank waits for rank 0's file: a rank that stopped on a signal and exited first could
  // make the launcher end rank 0 mid-write.
  // A busy file system is no fault: a slow write only warns, past dist.stall_warn_s.
  StallPolicy patient = between_steps_;
  patient.abort_s = std::numeric_limits<double>::infinity();
  double written = 1;
  world_.allreduce_sum(&written, 1, {&patient, str_cat("the save after step ", position_.step, ": rank 0's write")});
  for (size_t i = 0; i < own.size(); ++i) {
    const Tensor& v = graph_->buffers()[i].value;
    copy_bytes(const_cast<float*>(v.data()), graph_->device(), own[i].data(), Device::kCpu, v.bytes());
  }
  agreement_.reset_clock();
  return path;
}

void Trainer::gather_optimizer_state() {
  if (reducer_ && reducer_->updates_parameters())
    for (size_t k = 0; k < optimizer_->state_count(); ++k) reducer_->gather_updated(optimizer_->state_arena(k));
}

}  // namespace rt
