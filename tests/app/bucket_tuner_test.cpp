// The online tuner's judgement (Note [Online bucket tuning]) against closed forms: the bucket-cost
// fit recovers a line it was given and the ring model built from it costs that line (Note [Ring
// cost]); the spread is the scaled MAD worked by hand; visits lengthen with the spread as the
// median's standard error says; the trials' verdict takes a gain only past the noise; candidates
// cut distinct buckets at caps spaced apart; the plan made from base steps fits their buckets and
// travels between ranks as numbers that read back exactly; and the text the tuner writes reads
// back. None of it needs ranks.
#include "app/run/tuner_statistics.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "app/gradient_buckets.h"
#include "base/check.h"
#include "models/registry.h"

namespace rt {
namespace {

TEST(BucketCostFit, RecoversALineAndFallsBackToBandwidthAlone) {
  const std::vector<double> bytes{1e6, 4e6, 2.5e7, 1e5};
  std::vector<double> s;
  for (double b : bytes) s.push_back(1.5e-3 + 2e-9 * b);
  const BucketCostFit fit = fit_bucket_costs(bytes, s);
  EXPECT_NEAR(fit.fixed_s, 1.5e-3, 1e-12);
  EXPECT_NEAR(fit.s_per_byte, 2e-9, 1e-18);
  // One size: no line through one point; all of it per byte.
  const BucketCostFit one = fit_bucket_costs({4e6, 4e6}, {0.01, 0.03});
  EXPECT_EQ(one.fixed_s, 0);
  EXPECT_DOUBLE_EQ(one.s_per_byte, 0.02 / 4e6);
  // Small buckets slower than large ones (a line with a negative intercept): the same fallback.
  const BucketCostFit tilted = fit_bucket_costs({1e6, 2e6}, {0.01, 0.005});
  EXPECT_EQ(tilted.fixed_s, 0);
  EXPECT_DOUBLE_EQ(tilted.s_per_byte, 0.0075 / 1.5e6);
}

TEST(BucketCostFit, TheFittedClusterCostsWhatTheFitSays) {
  const BucketCostFit fit{2e-3, 3e-9};
  for (int p : {2, 4, 7})
    for (double bytes : {4e3, 1e6, 1e8})
      EXPECT_NEAR(ring_allreduce_seconds(bytes, p, fitted_cluster(fit, p)), fit.fixed_s + fit.s_per_byte * bytes,
                  1e-12 * (1 + bytes))
          << p << " ranks, " << bytes << " bytes";
}

TEST(BucketTuner, SpreadIsTheScaledMedianAbsoluteDeviation) {
  EXPECT_EQ(relative_spread({1, 1, 1, 1, 2}), 0);
  // Median 1.0, deviations 0.1, 0, 0.1: their median 0.1.
  EXPECT_NEAR(relative_spread({0.9, 1.0, 1.1}), 0.14826, 1e-12);
  // Median 2, deviations 0.2 0.2 0 0: their median 0.1, over 2.
  EXPECT_NEAR(relative_spread({2.2, 1.8, 2.0, 2.0}), 1.4826 * 0.1 / 2, 1e-12);
}

TEST(BucketTuner, VisitsLengthenWithTheSpreadWithinBounds) {
  EXPECT_EQ(visit_steps(0), kMinVisitSteps);
  // 2% spread: (1.2533 x 0.02 / 0.005)^2 = 25.1 steps over 2 rounds: 13 a visit.
  EXPECT_EQ(visit_steps(0.02), 13);
  EXPECT_EQ(visit_steps(0.5), kMaxVisitSteps);
}

// Candidate c's steps in two rounds: `base` seconds, round 2 `drift` slower.
std::vector<std::vector<double>> rounds_of(double base, double drift = 0) {
  return {{base, base, base}, {base * (1 + drift), base * (1 + drift), base * (1 + drift)}};
}

TEST(BucketTuner, TakesAGainOnlyPastTheNoise) {
  // 10% faster, rounds agreeing: taken.
  TrialVerdict v = judge_trials({rounds_of(1.0), rounds_of(0.9), rounds_of(0.95)});
  EXPECT_EQ(v.chosen, 1u);
  EXPECT_EQ(v.fastest, 1u);
  EXPECT_NEAR(v.gain, 0.1, 1e-12);
  EXPECT_DOUBLE_EQ(v.noise, kMinGain);
  // Under kMinGain: the config's kept, the fastest still named.
  v = judge_trials({rounds_of(1.0), rounds_of(0.995)});
  EXPECT_EQ(v.chosen, 0u);
  EXPECT_EQ(v.fastest, 1u);
  EXPECT_EQ(v.gain, 0);
  // 3% faster, but every candidate's rounds 5% apart: within the noise.
  v = judge_trials({rounds_of(1.0, 0.05), rounds_of(0.97, 0.05)});
  EXPECT_EQ(v.chosen, 0u);
  EXPECT_NEAR(v.noise, 0.05 / 1.025, 1e-12);
  // The same gain with rounds 2% apart: taken.
  v = judge_trials({rounds_of(1.0, 0.02), rounds_of(0.94, 0.02)});
  EXPECT_EQ(v.chosen, 1u);
}

TEST(BucketTuner, CandidatesCutDistinctBucketsAndFollowTheModel) {
  auto graph = build_model("lenet", ModelOptions{});
  graph->plan(4, Device::kCpu);
  DistConfig dist;
  const ComputeProfile profile{.forward_s = 0.01, .backward_s = 0.02, .ready_s = {}, .optimizer_s = 0};
  ComputeProfile p = profile;
  for (size_t i = 0; i < graph->params().size(); ++i)
    p.ready_s.push_back(0.02 * static_cast<double>(i + 1) / static_cast<double>(graph->params().size()));
  const BucketCaps own{0.02, 0.01};  // LeNet's 0.24 MB in six buckets
  // A bucket costs 1 s whatever its size: fewer buckets are faster.
  const std::vector<RankedCaps> slow_start =
      rank_bucket_caps(*graph, dist, p, 4, fitted_cluster({1.0, 1e-12}, 4), Hierarchy::kFlat, 4, 1, own, kCandidates);
  ASSERT_GE(slow_start.size(), 2u);
  EXPECT_EQ(slow_start[0].caps, own);
  std::set<std::vector<std::pair<size_t, size_t>>> cuts;
  for (const RankedCaps& r : slow_start) {
    DistConfig d = dist;
    d.bucket_mb = r.caps.bucket_mb, d.first_bucket_mb = r.caps.first_bucket_mb;
    std::vector<std::pair<size_t, size_t>> c;
    for (const Bucket& b : plan_gradient_buckets(*graph, d).buckets) c.emplace_back(b.first_param, b.end_param);
    EXPECT_TRUE(cuts.insert(c).second) << r.caps.text() << " cuts the buckets of a candidate before it";
    for (const RankedCaps& k : slow_start) {
      if (&k == &r) continue;
      EXPECT_GE(std::max(k.caps.bucket_mb, r.caps.bucket_mb) / std::min(k.caps.bucket_mb, r.caps.bucket_mb),
                kCapSpacing);
    }
  }
  // The first candidate: LeNet's one bucket, five fixed costs fewer than the config's six.
  EXPECT_NEAR(slow_start[0].predicted_s - slow_start[1].predicted_s, 5.0, 0.05);
}

// The plan from base steps whose buckets cost 0.5 ms + 1 ns a byte exactly: the fit recovers that
// line, the spread is the steps' own, the config's caps come first, and the plan's numbers read
// back to the same doubles.
TEST(TrialPlan, FromBaseStepsFitsTheBucketsAndTravelsAsNumbers) {
  auto graph = build_model("lenet", ModelOptions{});
  graph->plan(4, Device::kCpu);
  DistConfig dist;
  const BucketCaps own{0.02, 0.01};
  dist.bucket_mb = own.bucket_mb, dist.first_bucket_mb = own.first_bucket_mb;
  BaseSteps base;
  for (const Bucket& b : plan_gradient_buckets(*graph, dist).buckets) base.bucket_floats.push_back(b.count);
  ASSERT_GE(base.bucket_floats.size(), 3u);
  for (int s = 0; s < kBaseSteps; ++s) {
    base.step_s.push_back(0.1 + 0.001 * (s % 3));
    base.compute_s.push_back(0.05);
    std::vector<double> buckets;
    for (int64_t floats : base.bucket_floats) buckets.push_back(5e-4 + 1e-9 * 4 * static_cast<double>(floats));
    base.bucket_s.push_back(buckets);
  }
  const TrialPlan plan = plan_trials(base, *graph, dist, 4, 1, own);
  EXPECT_NEAR(plan.fit.fixed_s, 5e-4, 1e-12);
  EXPECT_NEAR(plan.fit.s_per_byte, 1e-9, 1e-18);
  EXPECT_EQ(plan.spread, relative_spread(base.step_s));
  ASSERT_GE(plan.candidates.size(), 2u);
  EXPECT_EQ(plan.candidates[0].caps, own);

  TrialPlan odd{1.0 / 3, {std::ldexp(1.0, -40) / 7, 2.0 / 3e9}, {{{0.1, 0.3 / 7}, 0.7 / 9}, {{25, 1}, 1e-300}}};
  const TrialPlan back = TrialPlan::from_numbers(odd.numbers());
  EXPECT_EQ(back.spread, odd.spread);
  EXPECT_EQ(back.fit.fixed_s, odd.fit.fixed_s);
  EXPECT_EQ(back.fit.s_per_byte, odd.fit.s_per_byte);
  ASSERT_EQ(back.candidates.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_EQ(back.candidates[i].caps, odd.candidates[i].caps);
    EXPECT_EQ(back.candidates[i].predicted_s, odd.candidates[i].predicted_s);
  }
}

TEST(BucketCaps, TextReadsBackAndBadTrialsAreNamed) {
  const BucketCaps c{0.1, 1.0 / 3};
  EXPECT_EQ(BucketCaps::parse(c.text(), "test"), c);
  const std::vector<BucketTrial> t{{0, {25, 1}}, {9, {4, 0.25}}, {40, {4, 0.25}}};
  EXPECT_EQ(parse_autotune_trials(autotune_trials_text(t)), t);
  EXPECT_EQ(autotune_trials_text(t), "0:25/1 9:4/0.25 40:4/0.25");
  const auto message = [](const std::string& text) {
    try {
      parse_autotune_trials(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("accepted");
  };
  EXPECT_NE(message("9:4/1 3:1/1").find("steps must increase"), std::string::npos);
  EXPECT_NE(message("x:1/1").find("entry 'x:1/1'"), std::string::npos);
  EXPECT_NE(message("0:25").find("BUCKET_MB/FIRST_BUCKET_MB"), std::string::npos);
  EXPECT_NE(message("0:25/0").find("one > 0"), std::string::npos);
  EXPECT_NE(message("").find("is empty"), std::string::npos);
}

}  // namespace
}  // namespace rt
