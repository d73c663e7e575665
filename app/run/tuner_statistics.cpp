#include "app/run/tuner_statistics.h"

#include <algorithm>
#include <cmath>

#include "app/compute_profile.h"
#include "app/gradient_buckets.h"
#include "base/check.h"
#include "base/median.h"

namespace rt {

BucketCostFit fit_bucket_costs(const std::vector<double>& bytes, const std::vector<double>& seconds) {
  RT_ASSERT(bytes.size() == seconds.size() && !bytes.empty());
  const double n = static_cast<double>(bytes.size());
  double mx = 0, my = 0;
  for (size_t i = 0; i < bytes.size(); ++i) mx += bytes[i] / n, my += seconds[i] / n;
  double sxx = 0, sxy = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    sxx += (bytes[i] - mx) * (bytes[i] - mx);
    sxy += (bytes[i] - mx) * (seconds[i] - my);
  }
  BucketCostFit fit;
  if (sxx > 0) {
    fit.s_per_byte = sxy / sxx;
    fit.fixed_s = my - fit.s_per_byte * mx;
  }
  // One size only, or a line that a noisy bucket tilted below zero: all of it per byte.
  if (!(sxx > 0) || fit.s_per_byte <= 0 || fit.fixed_s < 0) {
    fit.fixed_s = 0;
    fit.s_per_byte = mx > 0 ? my / mx : 0;
  }
  return fit;
}

// Note [Ring cost] in dist/step_simulator.h: 2(p - 1) (latency + B / (p bandwidth)) on one host's link = fixed + per byte x B.
ClusterModel fitted_cluster(const BucketCostFit& fit, int ranks) {
  RT_ASSERT(ranks > 1);
  const double steps = 2.0 * (ranks - 1);
  ClusterModel c;
  c.ranks_per_host = ranks;
  c.intra_host.latency_s = fit.fixed_s / steps;
  c.intra_host.bytes_per_s = fit.s_per_byte > 0 ? steps / (ranks * fit.s_per_byte) : 1e30;
  c.inter_host = c.intra_host;
  return c;
}

namespace {

// A candidate's buckets, as (first parameter, end) pairs, and its predicted step.
struct Priced {
  RankedCaps ranked;
  std::vector<std::pair<size_t, size_t>> cuts;
};

}  // namespace

std::vector<RankedCaps> rank_bucket_caps(const Graph& graph, const DistConfig& dist, const ComputeProfile& profile,
                                         int ranks, const ClusterModel& cluster, Hierarchy hierarchy,
                                         double bytes_per_element, int64_t micro_batches, const BucketCaps& own,
                                         int count) {
  const auto price = [&](const BucketCaps& caps) {
    DistConfig d = dist;
    d.bucket_mb = caps.bucket_mb;
    d.first_bucket_mb = caps.first_bucket_mb;
    const GradientBuckets planned = plan_gradient_buckets(graph, d);
    const StepPrediction step = simulate_step(profile, planned.params, planned.buckets, ranks, d.overlap, cluster,
                                              bytes_per_element, hierarchy);
    Priced p{{caps, with_accumulation(step, profile, micro_batches).step_s}, {}};
    for (const Bucket& b : planned.buckets) p.cuts.emplace_back(b.first_param, b.end_param);
    return p;
  };
  std::vector<Priced> grid;
  for (double cap : {1.0, 2.0, 4.0, 8.0, 16.0, 25.0, 32.0, 64.0, 128.0, 256.0, 512.0})
    for (double first : {0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0})
      if (first <= cap) grid.push_back(price({cap, first}));
  // Ties go to the smaller caps, listed first.
  std::stable_sort(grid.begin(), grid.end(),
                   [](const Priced& a, const Priced& b) { return a.ranked.predicted_s < b.ranked.predicted_s; });
  // Caps that cut the same buckets are one candidate (a small model may leave only the config's),
  // and neighbours are spaced kCapSpacing apart: the model misprices what overlap costs the
  // cores, so the trials span the range it ranks rather than one corner of it.
  std::vector<Priced> chosen{price(own)};
  for (const Priced& p : grid) {
    if (static_cast<int>(chosen.size()) == count + 1) break;
    const bool near = std::any_of(chosen.begin(), chosen.end(), [&](const Priced& k) {
      const double a = k.ranked.caps.bucket_mb, b = p.ranked.caps.bucket_mb;
      return k.cuts == p.cuts || std::max(a, b) < kCapSpacing * std::min(a, b);
    });
    if (!near) chosen.push_back(p);
  }
  std::vector<RankedCaps> ranked;
  for (const Priced& p : chosen) ranked.push_back(p.ranked);
  return ranked;
}

double relative_spread(std::vector<double> seconds) {
  RT_ASSERT(!seconds.empty());
  const double m = median(seconds);
  for (double& s : seconds) s = std::abs(s - m);
  return m > 0 ? 1.4826 * median(seconds) / m : 0;
}

// The median of n samples has a standard error of about 1.2533 sigma / sqrt(n).
int64_t visit_steps(double spread) {
  const double n = std::pow(1.2533 * spread / (kMinGain / 2), 2) / kRounds;
  return std::clamp(static_cast<int64_t>(std::ceil(n)), kMinVisitSteps, kMaxVisitSteps);
}

TrialVerdict judge_trials(const std::vector<std::vector<std::vector<double>>>& seconds) {
  TrialVerdict v;
  std::vector<double> round_gaps;
  for (const auto& rounds : seconds) {
    std::vector<double> all;
    for (const auto& r : rounds) all.insert(all.end(), r.begin(), r.end());
    RT_ASSERT(!all.empty());
    v.median_s.push_back(median(all));
    if (rounds.size() >= 2) {
      const double a = median(rounds[0]), b = median(rounds[1]);
      round_gaps.push_back(std::abs(a - b) / ((a + b) / 2));
    }
  }
  v.noise = std::max(kMinGain, round_gaps.empty() ? 0.0 : median(round_gaps));
  v.fastest = static_cast<size_t>(std::min_element(v.median_s.begin(), v.median_s.end()) - v.median_s.begin());
  const double gain = 1 - v.median_s[v.fastest] / v.median_s[0];
  v.chosen = gain > v.noise ? v.fastest : 0;
  v.gain = 1 - v.median_s[v.chosen] / v.median_s[0];
  return v;
}

std::vector<double> TrialPlan::numbers() const {
  std::vector<double> n{spread, fit.fixed_s, fit.s_per_byte};
  for (const RankedCaps& r : candidates) n.insert(n.end(), {r.caps.bucket_mb, r.caps.first_bucket_mb, r.predicted_s});
  return n;
}

TrialPlan TrialPlan::from_numbers(const std::vector<double>& n) {
  RT_ASSERT(n.size() >= 3 && (n.size() - 3) % 3 == 0);
  TrialPlan p{n[0], {n[1], n[2]}, {}};
  for (size_t i = 3; i < n.size(); i += 3) p.candidates.push_back({{n[i], n[i + 1]}, n[i + 2]});
  return p;
}

TrialPlan plan_trials(const BaseSteps& base, const Graph& graph, const DistConfig& dist, int ranks,
                      int64_t micro_batches, const BucketCaps& own) {
  std::vector<double> bytes, bucket_s;
  for (size_t b = 0; b < base.bucket_floats.size(); ++b) {
    std::vector<double> s;
    for (const std::vector<double>& step : base.bucket_s) s.push_back(step[b]);
    bytes.push_back(static_cast<double>(base.bucket_floats[b]) * 4);
    bucket_s.push_back(median(s));
  }
  TrialPlan plan;
  plan.fit = fit_bucket_costs(bytes, bucket_s);
  plan.spread = relative_spread(base.step_s);
  const ComputeProfile profile =
      profile_from_multiply_adds(graph, median(base.compute_s) / static_cast<double>(micro_batches));
  plan.candidates = rank_bucket_caps(graph, dist, profile, ranks, fitted_cluster(plan.fit, ranks), Hierarchy::kFlat, 4,
                                     micro_batches, own, kCandidates);
  return plan;
}

}  // namespace rt
