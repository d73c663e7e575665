// The training loop (Note [The run and the engine]): step -> log -> what the ranks agree (save,
// stop, report), then each epoch's sums -> evaluation -> report -> save.
#include "app/run/training_run.h"

#include <algorithm>
#include <chrono>
#include <memory>
#include <ostream>
#include <vector>

#include "app/run/bucket_tuner.h"
#include "app/run/epoch_ledger.h"
#include "app/run/epoch_report.h"
#include "app/run/epoch_sums.h"
#include "app/run/progress.h"
#include "app/run/run_clock.h"
#include "app/run/elastic_record.h"
#include "app/run/run_folder.h"
#include "app/run/step_agreement.h"
#include "app/run/stop_signals.h"
#include "app/run/straggler_report.h"
#include "app/run/train_tally.h"
#include "base/check.h"
#include "data/sampler.h"
#include "formats/json.h"

namespace rt {
namespace {

// The steps this run will make, to its last epoch or its limit.
int64_t run_steps(const Trainer& t, int64_t last_epoch, const TrainLimits& limits) {
  const int64_t to_end = last_epoch * t.schedule().steps_per_epoch - t.position().step;
  return limits.steps > 0 ? std::min(limits.steps, to_end) : to_end;
}

// One call of TrainingRun::train: what it carries from step to step, and its pieces in order.
class Loop {
 public:
  Loop(Trainer& t, MlperfLog& mlperf, const TrainLimits& limits);
  TrainResult run();

 private:
  int64_t begin_epoch(int64_t epoch);  // returns the epoch's first step
  void logged_step(int64_t epoch, int64_t step);
  void write_step_record(int64_t epoch, const StepOutcome& step);
  std::string save(const EpochSums& own);  // `own`: this rank's share of the epoch's figures
  TrainResult stop_on_signal(const AfterStep& agreed);
  void end_epoch(int64_t epoch);
  EpochReport epoch_report(int64_t epoch, const EpochSums& sums) const;
  void evaluate(int64_t epoch, EpochReport& report);
  void report_stragglers_now();  // on SIGUSR2, at the step every rank agreed
  void end_run();                // the target's outcome
  CollectiveWatch watched(std::string what) const { return {&t_.between_steps(), std::move(what)}; }
  // The result as it stands, with the run's training time (and, where it ran to its end, speed).
  TrainResult done(bool finished = false);

  Trainer& t_;
  const Config& config_;
  const World& world_;
  MlperfLog& mlperf_;
  const TrainLimits limits_;
  RunFolder folder_;
  Progress progress_;
  TrainTally tally_;
  StragglerTally stragglers_;  // this epoch's compute and ring waits (Note [Naming the straggler])
  StepAgreement agreement_;
  EpochSampler sampler_;                // this rank's share of each epoch
  std::shared_ptr<void> image_memory_;  // one micro-batch, page-locked where the device reads it
  std::vector<int32_t> labels_;
  int64_t last_epoch_;  // where this run ends: train.epochs, or sooner under TrainLimits
  BucketTuner tuner_;   // dist.autotune (Note [Online bucket tuning]), with its part of each checkpoint
  TrainResult result_;
  // The run's parts of each checkpoint (Note [Saved parts] in app/saved_state.h), loaded as they
  // register where the Trainer resumed: the clock over every part of the run, and the epoch's
  // figures at a save inside it.
  RunClock clock_;
  SavedEpochSums sums_;
  SavedState::Registration clock_saved_, sums_saved_;
};

Loop::Loop(Trainer& t, MlperfLog& mlperf, const TrainLimits& limits)
    : t_(t),
      config_(t.config()),
      world_(t.world()),
      mlperf_(mlperf),
      limits_(limits),
      folder_(config_, to_toml(config_), world_.rank(), t.position(), t.resumed_from()),
      progress_(world_.rank() == 0 ? Progress::resolve(config_.log.progress) : Progress::Mode::kNone,
                config_.log.every_steps, t.out()),
      tally_(global_batch(config_.train, world_.size()), rank_batch(config_.train)),
      agreement_(config_.checkpoint, config_.train.epochs, world_, &t.between_steps()),
      sampler_(training_sampler(config_, world_, t.data().train->count())),
      image_memory_(allocate_host_staging(
          t.graph().device(),
          static_cast<size_t>(config_.train.batch_per_rank * numel(t.data().input_shape)) * sizeof(float))),
      labels_(static_cast<size_t>(config_.train.batch_per_rank)),
      last_epoch_(limits.epochs > 0 ? std::min(config_.train.epochs, t.position().epochs_done + limits.epochs)
                                    : config_.train.epochs),
      tuner_(t, &folder_, run_steps(t, last_epoch_, limits)),
      clock_saved_(t.saved_state().add_for_now("run clock", clock_)),
      sums_saved_(t.saved_state().add_for_now("epoch sums", sums_)) {
  result_.target.target = config_.eval.target_top1;
}

TrainResult Loop::run() {
  mlperf_.open(config_.checkpoint.dir);
  mlperf_.run_start();
  if (const auto launch = elastic_record(t_.position(), world_.size(), global_batch(config_.train, world_.size())))
    folder_.write_metric(*launch);
  for (int64_t epoch = t_.position().epochs_done; epoch < last_epoch_ && !result_.target.reached; ++epoch) {
    for (int64_t s = begin_epoch(epoch); s < t_.schedule().steps_per_epoch; ++s) {
      logged_step(epoch, s);
      if (limits_.steps > 0 && tally_.run_steps() == limits_.steps) return done();
      const AfterStep agreed = agreement_.after_step(t_.position().step);
      if (agreed.report) report_stragglers_now();
      // The epoch's own save comes after its evaluation, unless a signal stops the run first.
      const bool epoch_saves = s + 1 == t_.schedule().steps_per_epoch && agreement_.saves_after_epoch(epoch + 1);
      if (agreed.save && (agreed.stop || !epoch_saves)) {
        result_.last_checkpoint = save(tally_.sums(t_.data().train->skipped()));
        agreement_.reset_clock();
      }
      if (agreed.stop) return stop_on_signal(agreed);
    }
    end_epoch(epoch);
  }
  end_run();
  t_.gather_optimizer_state();  // whoever reads the optimizer after a run finds it whole
  return done(/*finished=*/true);
}

TrainResult Loop::done(bool finished) {
  result_.train_seconds = tally_.run_seconds();
  if (finished && result_.train_seconds > 0)
    result_.images_per_s = static_cast<double>(tally_.run_images()) / result_.train_seconds;
  return result_;
}

int64_t Loop::begin_epoch(int64_t epoch) {
  // Inside the epoch where a resumed checkpoint stopped: its remaining positions and figures.
  const int64_t first_step = t_.schedule().steps_per_epoch - sampler_.steps_from(t_.position().epoch_positions);
  // What a save inside this epoch had summed over ranks: rank 0 carries it, the others start from
  // zero.
  const EpochSums carried = world_.rank() == 0 ? sums_.value : EpochSums{};
  t_.data().train->start(epoch, sampler_.epoch_indices(epoch, t_.position().epoch_positions),
                         config_.train.batch_per_rank);
  progress_.begin_epoch(epoch, config_.train.epochs, t_.schedule().steps_per_epoch);
  mlperf_.epoch_start(epoch + 1);
  stragglers_.begin_epoch();
  tally_.begin_epoch(carried, first_step);  // the epoch's clock starts with its first step
  return first_step;
}

void Loop::logged_step(int64_t epoch, int64_t s) {
  Timeline* tl = t_.timeline();
  const int64_t run_step = tally_.run_steps();
  if (tl) tl->set_step(run_step);
  const auto start = std::chrono::steady_clock::now();
  float* images = static_cast<float*>(image_memory_.get());
  BatchSource& data = *t_.data().train;
  // A micro-batch is lent until the next one is borrowed (its backward is done) or the step ends.
  const StepOutcome step = t_.train_step([&](int64_t) {
    ComputeSpan span(tl, "data");
    const LentBatch batch = data.borrow(images, labels_.data());
    tally_.add_data_wait(batch.waited);
    return Trainer::MicroBatch{batch.images, batch.labels, Device::kCpu};
  });
  data.release();
  set_current_training_step(-1);  // between steps: a failure now names its own step, as metrics.jsonl counts it
  if (tl) tl->flush(run_step);
  const double step_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  tally_.add_step(step, step_s);
  stragglers_.add_step(step.compute_s, step.averages_wait_s, step.links);
  result_.step_losses.push_back(step.loss);
  const int64_t steps_left = (last_epoch_ - epoch) * t_.schedule().steps_per_epoch - (s + 1);
  progress_.step(s, step.loss, t_.schedule().lr, tally_.images_per_s(s), tally_.eta_s(steps_left));
  write_step_record(epoch, step);
  t_.check_replicas_after_step();
  tuner_.after_step(step_s, step.compute_s);  // may change the buckets, between steps
}

void Loop::write_step_record(int64_t epoch, const StepOutcome& step) {
  const TrainingPosition& p = t_.position();
  Json record{{"kind", "step"},
              {"epoch", epoch + 1},
              {"step", p.step},
              {"images_seen", p.images_seen},
              {"loss", step.loss},
              {"lr", t_.schedule().lr},
              {"images_per_s", tally_.last_step_images_per_s()}};
  if (config_.train.clip_grad_norm > 0) record["grad_norm"] = t_.last_grad_norm().total;
  if (step.averaging_error) {  // under a compression: what this rank handed the ring, and rank 0's error
    record["averaged_mb"] = static_cast<double>(step.averaged_bytes) / 1e6;
    record[step.averaging_error_key] = *step.averaging_error;
  }
  folder_.write_metric(record);
}

// The epoch's figures summed over ranks for the checkpoint, then the Trainer's save.
std::string Loop::save(const EpochSums& own) {
  sums_.value = own;
  world_.allreduce_sum(sums_.value.data(), EpochSums::kCount,
                       watched(str_cat("the save after step ", t_.position().step, ": the epoch's figures")));
  return t_.save();
}

TrainResult Loop::stop_on_signal(const AfterStep& agreed) {
  StopSignals::saved();  // a second SIGTERM from here on has nothing left to cut short
  set_current_training_step(-1);
  progress_.end_epoch();
  result_.stopped_by_signal = agreed.signal;
  if (world_.rank() == 0)
    t_.out() << "ringtrain: " << signal_name(agreed.signal) << " reached " << agreed.signalled_ranks
             << " rank(s); saved " << result_.last_checkpoint << " after step " << t_.position().step
             << " and stopped (exit status " << kExitSavedOnSignal << "; go on with --resume " << config_.checkpoint.dir
             << ")\n"
             << std::flush;
  return done();  // save() gathered the optimizer state
}

void Loop::end_epoch(int64_t epoch) {
  set_current_training_step(-1);
  progress_.end_epoch();
  mlperf_.epoch_stop(epoch + 1);
  t_.end_epoch();
  sums_.value = EpochSums{};  // a save inside the epoch left its figures there
  const EpochTotals totals =
      sum_epoch(tally_.sums(t_.data().train->skipped()), stragglers_, world_, t_.between_steps().hosts,
                watched(str_cat("epoch ", epoch + 1, "'s training figures")));
  EpochReport report = epoch_report(epoch, totals.sums);
  if (evaluates_after(config_.eval, epoch + 1, config_.train.epochs)) evaluate(epoch, report);
  report.seconds = tally_.epoch_seconds();
  if (world_.rank() == 0) {
    t_.out() << report.line() << std::flush;
    if (!totals.stragglers.line.empty()) t_.out() << "ringtrain: " << totals.stragglers.line << "\n" << std::flush;
  }
  Json record = report.record();
  totals.stragglers.add_to(record);
  folder_.write_metric(record);
  // The model that reached the target is saved whatever checkpoint.every_epochs says.
  if (agreement_.saves_after_epoch(epoch + 1) || result_.target.reached) {
    result_.last_checkpoint = save(EpochSums{});
    agreement_.reset_clock();
  }
}

// The epoch's figures over all ranks, before its evaluation.
EpochReport Loop::epoch_report(int64_t epoch, const EpochSums& sums) const {
  return EpochReport{.epoch = epoch + 1,
                     .epochs = config_.train.epochs,
                     .step = t_.position().step,
                     .train_loss = sums.loss / std::max(sums.loss_terms, 1.0),
                     .train_top1 = sums.correct1 / std::max(sums.images, 1.0),
                     .data_wait = tally_.data_wait_share(sums, world_.size()),
                     .skipped_files = static_cast<int64_t>(sums.skipped),
                     .train_seconds = tally_.epoch_seconds(),
                     .seconds = 0,  // set after the evaluation
                     .fp16 = t_.loss_scaling().state(),
                     .test = std::nullopt};
}

void Loop::evaluate(int64_t epoch, EpochReport& report) {
  EvalResult& eval = result_.last_eval;
  mlperf_.eval(epoch + 1, [&] {
    eval = t_.evaluate();
    return eval.top1;
  });
  report.test = EpochReport::Test{eval.loss, eval.top1, eval.top5};
  TargetOutcome& target = result_.target;
  target.epoch = epoch + 1;
  target.top1 = eval.top1;
  target.run_seconds = clock_.seconds();
  target.reached = target.set() && target.top1 >= target.target;
}

// SIGUSR2 (Note [Naming the straggler]): the epoch so far, every rank in one sum at this step.
void Loop::report_stragglers_now() {
  const StragglerVerdict verdict =
      sum_stragglers(stragglers_, world_, t_.between_steps().hosts,
                     watched(str_cat("step ", t_.position().step, ": the straggler report")));
  if (world_.rank() == 0)
    t_.out() << "ringtrain: on SIGUSR2, at step " << t_.position().step << ": " << verdict.on_demand() << "\n"
             << std::flush;
}

void Loop::end_run() {
  const TargetOutcome& target = result_.target;
  if (!target.set() || !(target.reached || t_.position().epochs_done == config_.train.epochs)) return;
  if (world_.rank() == 0) t_.out() << target.line() << std::flush;
  folder_.write_metric(target.record());
  mlperf_.run_stop(target.reached);
}

}  // namespace

TrainResult TrainingRun::train(Trainer& trainer) {
  RT_CHECK(!trainer.data().synthetic,
           "data.source = \"synthetic\" is one random batch for `ringtrain bench`; training needs a "
           "real data set (data.source = \"idx\")");
  const TrainerData& data = trainer.data();
  mlperf_.hyperparameters(trainer.schedule().rates, trainer.world().size(), data.train->count(), data.test->count());
  return Loop(trainer, mlperf_, limits_).run();
}

TrainResult train(Trainer& trainer, const TrainLimits& limits) {
  TrainingRun run(trainer.config(), trainer.world().rank());
  run.set_limits(limits);
  return run.train(trainer);
}

}  // namespace rt
