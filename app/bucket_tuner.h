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
#include <optional>
#include <string>
#include <vector>

#include "app/run_folder.h"
#include "app/trainer.h"
#include "app/tuned_buckets.h"
#include "base/bucket_caps.h"
#include "dist/step_simulator.h"

namespace rt {

inline constexpr int64_t kWarmupSteps = 2;                         // the run's first steps, not measured
inline constexpr int64_t kBaseSteps = 8;                           // at the config's caps
inline constexpr int kCandidates = 3;                              // besides the config's own
inline constexpr int kRounds = 2;                                  // visits to each candidate
inline constexpr int64_t kMinVisitSteps = 3, kMaxVisitSteps = 15;  // each visit, after its first step
inline constexpr double kMinGain = 0.01;                           // never act on less than 1%
inline constexpr double kCapSpacing = 4;                           // candidates' bucket_mb at least this factor apart

// A bucket's average as `fixed_s` + `s_per_byte` x its bytes, least squares over the buckets.
struct BucketCostFit {
  double fixed_s = 0;
  double s_per_byte = 0;
};
BucketCostFit fit_bucket_costs(const std::vector<double>& bytes, const std::vector<double>& seconds);
// A cluster on which the simulator's ring over `ranks` costs what `fit` says a bucket costs.
ClusterModel fitted_cluster(const BucketCostFit& fit, int ranks);

struct RankedCaps {
  BucketCaps caps;
  double predicted_s = 0;  // the simulator's step
};
// `own` first, then up to `count` caps of the grid the simulator predicts fastest, each cutting
// other buckets than every one before it, its bucket_mb kCapSpacing times above or below theirs.
std::vector<RankedCaps> rank_bucket_caps(const Graph& graph, const DistConfig& dist, const ComputeProfile& profile,
                                         int ranks, const ClusterModel& cluster, Hierarchy hierarchy,
                                         double bytes_per_element, int64_t micro_batches, const BucketCaps& own,
                                         int count);
// The most steps a tuning takes, warm-up to choice: what dist.autotune = "auto" weighs.
inline constexpr int64_t kLongestTuning =
    kWarmupSteps + kBaseSteps + (kCandidates + 1) * kRounds * (kMaxVisitSteps + 1);

// The spread of step times, relative: 1.4826 x the median absolute deviation over the median.
double relative_spread(std::vector<double> seconds);
// Steps a visit counts so that a candidate's median over kRounds visits has a standard error under
// half of kMinGain at this spread.
int64_t visit_steps(double spread);

struct TrialVerdict {
  size_t chosen = 0;             // index into the candidates; 0: the config's own
  std::vector<double> median_s;  // each candidate's, over its counted steps
  size_t fastest = 0;
  double noise = 0;  // the median over candidates of |round 1 - round 2| / their mean, at least kMinGain
  double gain = 0;   // 1 - chosen / own
};
// seconds[c][r]: candidate c's counted steps in round r.
TrialVerdict judge_trials(const std::vector<std::vector<std::vector<double>>>& seconds);

// The run's side (app/training_run.cpp): after every step, what the step took; it changes the
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
  void plan_trials();                                // after kBase
  void settle();                                     // after the trials
  void replay_for(int64_t step);
  void write_tuned_toml(const BucketCaps& chosen, const std::string& why) const;

  Trainer& t_;
  const RunFolder* folder_;
  Phase phase_ = Phase::kDone;
  int64_t started_step_ = 0;
  double tuning_s_ = 0;  // from the measured steps on
  std::vector<double> base_steps_, base_compute_;
  std::vector<std::vector<double>> base_buckets_;  // per step: each bucket's seconds
  double spread_ = 0;
  BucketCostFit fit_;
  std::vector<RankedCaps> candidates_;
  std::vector<std::vector<std::vector<double>>> measured_;  // [candidate][round][step]
  std::vector<std::pair<size_t, int>> visits_;              // (candidate, round), in order
  size_t visit_ = 0;
  int64_t visit_step_ = 0, visit_len_ = 0;
  std::vector<BucketTrial> replayed_;  // dist.autotune = "replay": dist.autotune_trials
  TunedBuckets state_;
  SavedState::Registration saved_;
};

}  // namespace rt
