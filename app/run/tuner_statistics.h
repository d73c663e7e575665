// The online tuner's statistics and ranking (Note [Online bucket tuning] in app/run/bucket_tuner.h):
// pure functions of what the base steps measured, tested without ranks; the driver that measures
// and acts is app/run/bucket_tuner.cpp.
#pragma once

#include <cstdint>
#include <vector>

#include "base/bucket_caps.h"
#include "config/config.h"
#include "dist/step_simulator.h"
#include "nn/graph.h"

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

// What the base steps measured at the config's caps: each step's seconds and compute seconds, and
// per step each bucket's seconds; each bucket's floats.
struct BaseSteps {
  std::vector<double> step_s, compute_s;
  std::vector<std::vector<double>> bucket_s;
  std::vector<int64_t> bucket_floats;
};

// The trials' plan: the steps' spread, the buckets' fitted cost, and the caps to try (the
// config's first). It goes from rank 0 to every rank as numbers.
struct TrialPlan {
  double spread = 0;
  BucketCostFit fit;
  std::vector<RankedCaps> candidates;
  std::vector<double> numbers()
      const;  // spread, fixed_s, s_per_byte, then bucket_mb, first_bucket_mb, predicted_s each
  static TrialPlan from_numbers(const std::vector<double>& numbers);
};
// From the base steps of `graph`'s training at `ranks` ranks, `micro_batches` a step, its caps `own`.
TrialPlan plan_trials(const BaseSteps& base, const Graph& graph, const DistConfig& dist, int ranks,
                      int64_t micro_batches, const BucketCaps& own);

}  // namespace rt
