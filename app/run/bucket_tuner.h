// Note [Online bucket tuning]: dist.autotune tunes dist.bucket_mb and dist.first_bucket_mb on the
// job's own first steps, as Horovod's HOROVOD_AUTOTUNE tunes its fusion threshold, but measuring
// before it acts (Horovod's users saw it settle on noise: horovod#2207, #1745).
// 1. Measure: kBaseSteps steps at the config's caps (after the run's first steps, which warm up):
//    each step's seconds, and each bucket's average (GradReducer::bucket_seconds). The steps'
//    spread is the noise; the buckets, fitted as a fixed cost plus a cost per byte, are this job's
//    collective as it runs (transport, hierarchy, network and all), where a cluster file's figures
//    are often guesses.
// 2. Model: the step simulator (dist/step_simulator.h) with that fitted cost and a compute
//    profile from the measured compute time ranks a grid of caps; the config's own and the
//    kCandidates best, cutting other buckets, their bucket_mb kCapSpacing apart, are measured.
// 3. Trials: kRounds rounds, each visiting every candidate for visit_steps steps (the first after
//    a change not counted), the rounds in opposite orders so that a drift weighs on all alike;
//    enough steps that the median's error is under half the smallest gain acted on.
// 4. Settle: the fastest median, if it beats the config's by more than the noise (the
//    candidates' spread between rounds, at least kMinGain); else the config's. Rank 0 judges and
//    broadcasts (its steps are everyone's: the ranks step together), so every rank changes caps at
//    the same step. The choice goes to the checkpoint (a resume keeps it), to tuned.toml in the
//    run's folder (with the trials, which dist.autotune = "replay" repeats bit for bit) and to
//    metrics.jsonl.
// Bucket caps move where each element's sum is made, not what is summed: replicas stay identical
// (the replica check passes across changes). At 2 ranks an element's sum is a + b whatever the
// buckets; at more, the ring's order of each element's additions follows them, and so do the
// pieces LARS sums its norms in (Note [Norms across shards] in nn/optim/shard_norms.h),
// so a run with other caps differs in the last bits: "replay" repeats the trials, not only the
// choice. The wire and compression, which change the numbers, are never tuned.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "app/run/run_folder.h"
#include "app/trainer.h"
#include "app/run/tuned_buckets.h"
#include "app/run/tuner_statistics.h"
#include "base/bucket_caps.h"

namespace rt {

// The run's side (app/run/training_run.cpp): after every step, what the step took; it changes the
// trainer's caps between steps, the same on every rank.
class BucketTuner {
 public:
  // Active where dist.autotune asks and can work: several ranks, a run long enough under "auto"
  // (`run_steps` of this run), not already settled (a resumed tuned run, whose caps it puts back
  // where they apply). `folder`: where the records and tuned.toml go; null in `ringtrain bench`,
  // which prints the choice only. What it put in force is its part of each checkpoint.
  BucketTuner(Trainer& trainer, const RunFolder* folder, int64_t run_steps);
  // After each step: its seconds on this rank, and of them its compute (StepOutcome::compute_s).
  void after_step(double step_s, double compute_s);
  bool active() const { return phase_ != Phase::kDone; }

 private:
  enum class Phase { kWarmup, kBase, kTrials, kReplay, kDone };
  void resume_settled();                             // a resumed run's choice
  void apply(const BucketCaps& caps, bool settled);  // recorded, then the trainer's
  void plan();                                       // after kBase
  void keep_the_only_candidate();
  void start_trials();
  void settle();  // after the trials
  std::string why(const TrialVerdict& verdict) const;
  void write_records(const TrialVerdict& verdict, int64_t steps, double cost_s) const;
  void replay_for(int64_t step);
  void write_tuned_toml(const BucketCaps& chosen, const std::string& why) const;

  Trainer& t_;
  const RunFolder* folder_;
  Phase phase_ = Phase::kDone;
  int64_t started_step_ = 0;
  double tuning_s_ = 0;  // from the measured steps on
  BaseSteps base_;
  TrialPlan plan_;
  std::vector<std::vector<std::vector<double>>> measured_;  // [candidate][round][step]
  std::vector<std::pair<size_t, int>> visits_;              // (candidate, round), in order
  size_t visit_ = 0;
  int64_t visit_step_ = 0, visit_len_ = 0;
  std::vector<BucketTrial> replayed_;  // dist.autotune = "replay": dist.autotune_trials
  TunedBuckets state_;
  SavedState::Registration saved_;
};

}  // namespace rt
