#include "app/bucket_tuner.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <ostream>
#include <sstream>

#include "app/compute_profile.h"
#include "app/gradient_buckets.h"
#include "base/check.h"
#include "base/median.h"
#include "formats/atomic_file.h"
#include "formats/json.h"

namespace rt {
namespace {

std::string percent(double x) {
  char out[32];
  std::snprintf(out, sizeof out, "%.1f%%", 100 * x);
  return out;
}

std::string seconds(double s) {
  char out[32];
  std::snprintf(out, sizeof out, "%.4g s", s);
  return out;
}

// "dist.bucket_mb = 4, dist.first_bucket_mb = 1"
std::string caps_keys(const BucketCaps& c) {
  std::ostringstream out;
  out << "dist.bucket_mb = " << c.bucket_mb << ", dist.first_bucket_mb = " << c.first_bucket_mb;
  return out.str();
}

// "4/1 MiB"
std::string caps_short(const BucketCaps& c) {
  std::ostringstream out;
  out << c.bucket_mb << "/" << c.first_bucket_mb << " MiB";
  return out.str();
}

}  // namespace

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

std::vector<RankedCaps> rank_bucket_caps(const Graph& graph, const DistConfig& dist, const ComputeProfile& profile,
                                         int ranks, const ClusterModel& cluster, Hierarchy hierarchy,
                                         double bytes_per_element, int64_t micro_batches, const BucketCaps& own,
                                         int count) {
  // Each candidate's buckets, as (first parameter, end) pairs, and its predicted step.
  struct Priced {
    RankedCaps ranked;
    std::vector<std::pair<size_t, size_t>> cuts;
  };
  const auto price = [&](const BucketCaps& caps) {
    DistConfig d = dist;
    d.bucket_mb = caps.bucket_mb;
    d.first_bucket_mb = caps.first_bucket_mb;
    const GradientBuckets planned = plan_gradient_buckets(graph, d);
    Priced p{{caps, with_accumulation(simulate_step(profile, planned.params, planned.buckets, ranks, d.overlap, cluster,
                                                    bytes_per_element, hierarchy),
                                      profile, micro_batches)
                        .step_s},
             {}};
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

BucketTuner::BucketTuner(Trainer& trainer, const RunFolder* folder, int64_t run_steps)
    : t_(trainer), folder_(folder), saved_(trainer.saved_state().add_for_now("tuner", state_)) {
  if (state_.settled()) resume_settled();
  const DistConfig& d = t_.config().dist;
  if (!t_.reducer() || d.autotune == Autotune::kOff) return;
  if (d.autotune == Autotune::kReplay) {
    replayed_ = parse_autotune_trials(d.autotune_trials);
    phase_ = Phase::kReplay;
    replay_for(t_.position().step);
    return;
  }
  if (state_.settled()) return;  // a resumed run that settled, its caps restored
  if (d.autotune == Autotune::kAuto) {
    if (fixes_buckets(d.compression) || t_.graph().device() != Device::kCpu) return;
    if (static_cast<double>(kLongestTuning) > d.autotune_max_share * static_cast<double>(run_steps)) return;
  } else if (run_steps < kLongestTuning && t_.world().rank() == 0) {
    t_.out() << "ringtrain: dist.autotune = \"on\": this run's " << run_steps << " steps may end before the tuning "
             << "does (up to " << kLongestTuning << "); it would end at the caps then on trial\n";
  }
  phase_ = Phase::kWarmup;
  started_step_ = t_.position().step;
  // From the config's caps, also after a run that stopped while tuning (its trials stay on record).
  apply({d.bucket_mb, d.first_bucket_mb}, false);
}

// Where the checkpoint's run settled its tuning: its caps, unless the config turns tuning off or
// they cannot apply here. Rank 0 says which.
void BucketTuner::resume_settled() {
  const BucketCaps tuned = *state_.settled();
  const char* instead = t_.config().dist.autotune == Autotune::kOff ? "dist.autotune = \"off\""
                        : t_.graph().device() != Device::kCpu
                            ? "the GPU's collective sizes its buffers once, and the tuner timed CPUs"
                        : fixes_buckets(t_.config().dist.compression) ? "PowerSGD's state follows the config's buckets"
                                                                      : nullptr;
  if (!instead) {
    apply(tuned, /*settled=*/true);
    if (t_.world().rank() == 0)
      t_.out() << "ringtrain: the checkpoint's tuned buckets apply: dist.bucket_mb = " << tuned.bucket_mb
               << ", dist.first_bucket_mb = " << tuned.first_bucket_mb << "\n";
    return;
  }
  state_.forget_settled();
  if (t_.world().rank() == 0)
    t_.out() << "ringtrain: the checkpoint's tuned buckets (" << tuned.text() << " MiB) are set aside: " << instead
             << "; the config's dist.bucket_mb and dist.first_bucket_mb apply\n";
}

void BucketTuner::apply(const BucketCaps& caps, bool settled) {
  state_.record(t_.position().step, caps, settled);
  t_.use_bucket_caps(caps);
}

void BucketTuner::replay_for(int64_t step) {
  size_t k = 0;
  while (k + 1 < replayed_.size() && replayed_[k + 1].from_step <= step) ++k;
  const bool settled = k + 1 == replayed_.size() && replayed_[k].from_step <= step;
  apply(replayed_[k].caps, settled);
  if (settled) phase_ = Phase::kDone;
}

void BucketTuner::after_step(double step_s, double compute_s) {
  switch (phase_) {
    case Phase::kDone:
      return;
    case Phase::kReplay:
      replay_for(t_.position().step);
      return;
    case Phase::kWarmup:  // slow whatever the caps: not counted in the tuning's cost
      if (t_.position().step - started_step_ >= kWarmupSteps) phase_ = Phase::kBase;
      return;
    case Phase::kBase:
      tuning_s_ += step_s;
      base_steps_.push_back(step_s);
      base_compute_.push_back(compute_s);
      base_buckets_.push_back(t_.reducer()->bucket_seconds());
      if (static_cast<int64_t>(base_steps_.size()) == kBaseSteps) plan_trials();
      return;
    case Phase::kTrials:
      tuning_s_ += step_s;
      if (visit_step_ > 0)
        measured_[visits_[visit_].first][static_cast<size_t>(visits_[visit_].second)].push_back(step_s);
      if (++visit_step_ <= visit_len_) return;
      if (++visit_ == visits_.size()) return settle();
      visit_step_ = 0;
      apply(candidates_[visits_[visit_].first].caps, false);
      return;
  }
}

void BucketTuner::plan_trials() {
  const World& world = t_.world();
  const Config& config = t_.config();
  std::string plan, failed;
  if (world.rank() == 0) try {
      const std::vector<Bucket>& buckets = t_.reducer()->buckets();
      std::vector<double> bytes, bucket_s;
      for (size_t b = 0; b < buckets.size(); ++b) {
        std::vector<double> s;
        for (const std::vector<double>& step : base_buckets_) s.push_back(step[b]);
        bytes.push_back(static_cast<double>(buckets[b].count) * 4);
        bucket_s.push_back(median(s));
      }
      fit_ = fit_bucket_costs(bytes, bucket_s);
      spread_ = relative_spread(base_steps_);
      const int64_t K = config.train.accumulate_steps;
      const ComputeProfile profile =
          profile_from_multiply_adds(t_.graph(), median(base_compute_) / static_cast<double>(K));
      const std::vector<RankedCaps> ranked =
          rank_bucket_caps(t_.graph(), config.dist, profile, world.size(), fitted_cluster(fit_, world.size()),
                           Hierarchy::kFlat, 4, K, t_.bucket_caps(), kCandidates);
      std::ostringstream out;
      out.precision(17);
      out << spread_ << " " << fit_.fixed_s << " " << fit_.s_per_byte;
      for (const RankedCaps& r : ranked) out << " " << r.caps.text() << " " << r.predicted_s;
      plan = out.str();
    } catch (const Error& e) {
      // An optional speed-up must not end the run: every rank learns of it from the empty plan.
      failed = e.what();
      plan.clear();
    }
  world.broadcast(plan, 0, {&t_.between_steps(), str_cat("step ", t_.position().step, ": the tuner's candidates")});
  if (plan.empty()) {
    phase_ = Phase::kDone;
    if (world.rank() == 0)
      t_.out() << "ringtrain: dist.autotune could not plan its trials (" << failed << "); kept the config's "
               << caps_keys(t_.bucket_caps()) << "\n";
    return;
  }
  std::istringstream in(plan);
  in >> spread_ >> fit_.fixed_s >> fit_.s_per_byte;
  std::string caps;
  double predicted = 0;
  while (in >> caps >> predicted) candidates_.push_back({BucketCaps::parse(caps, "the tuner's plan"), predicted});
  if (candidates_.size() == 1) {  // nothing else to try
    apply(candidates_[0].caps, /*settled=*/true);
    phase_ = Phase::kDone;
    const std::string line = str_cat("kept the config's ", caps_keys(candidates_[0].caps),
                                     ": every other caps cut this model's gradients into the same buckets");
    if (world.rank() == 0) {
      t_.out() << "ringtrain: dist.autotune " << line << "\n" << std::flush;
      if (folder_) write_tuned_toml(candidates_[0].caps, line);
    }
    return;
  }
  visit_len_ = visit_steps(spread_);
  measured_.assign(candidates_.size(), std::vector<std::vector<double>>(kRounds));
  for (int r = 0; r < kRounds; ++r)
    for (size_t i = 0; i < candidates_.size(); ++i) visits_.push_back({r % 2 == 0 ? i : candidates_.size() - 1 - i, r});
  if (world.rank() == 0) {
    std::string tried;
    for (size_t i = 1; i < candidates_.size(); ++i)
      tried += str_cat(i > 1 ? ", " : "", caps_short(candidates_[i].caps));
    char cost[96];
    std::snprintf(cost, sizeof cost, "a bucket's average %.3g ms + %.3g ms a MB", fit_.fixed_s * 1e3,
                  fit_.s_per_byte * 1e9);
    t_.out() << "ringtrain: dist.autotune: " << base_steps_.size() << " steps at the config's "
             << caps_short(candidates_[0].caps) << " (steps spread " << percent(spread_) << "; " << cost << "); trying "
             << tried << " against them, " << kRounds << " rounds of " << visit_len_ << " steps each\n"
             << std::flush;
  }
  phase_ = Phase::kTrials;
  visit_ = 0;
  visit_step_ = 0;
  apply(candidates_[visits_[0].first].caps, false);
}

void BucketTuner::settle() {
  const World& world = t_.world();
  std::string verdict_text;
  TrialVerdict verdict;
  if (world.rank() == 0) {
    verdict = judge_trials(measured_);
    verdict_text = std::to_string(verdict.chosen);
  }
  world.broadcast(verdict_text, 0, {&t_.between_steps(), str_cat("step ", t_.position().step, ": the tuner's choice")});
  const size_t chosen = static_cast<size_t>(std::stoul(verdict_text));
  const BucketCaps caps = candidates_.at(chosen).caps;
  apply(caps, /*settled=*/true);
  phase_ = Phase::kDone;
  if (world.rank() != 0) return;
  const int64_t steps = t_.position().step - started_step_;
  const double cost = tuning_s_ - static_cast<double>(steps - kWarmupSteps) * verdict.median_s[chosen];
  const auto counted = static_cast<int64_t>(kRounds) * visit_len_;
  std::string why;
  if (chosen != 0)
    why = str_cat(percent(verdict.gain), " faster a step than the config's ", caps_short(candidates_[0].caps), " (",
                  seconds(verdict.median_s[chosen]), " against ", seconds(verdict.median_s[0]), ", medians of ",
                  counted, " steps each; noise ", percent(verdict.noise), ")");
  else if (verdict.fastest == 0)
    why = str_cat("the config's own were the fastest (", seconds(verdict.median_s[0]), " a step, medians of ", counted,
                  " steps each; noise ", percent(verdict.noise), ")");
  else
    why = str_cat("the fastest, ", caps_short(candidates_[verdict.fastest].caps), ", gained ",
                  percent(1 - verdict.median_s[verdict.fastest] / verdict.median_s[0]), ", within the noise (",
                  percent(verdict.noise), "; medians of ", counted, " steps each)");
  const std::string line = str_cat(chosen != 0 ? "settled on " : "kept the config's ", caps_keys(caps), " after ",
                                   steps, " steps of tuning (", seconds(tuning_s_), ", ", seconds(std::max(cost, 0.0)),
                                   " more than at the choice): ", why);
  t_.out() << "ringtrain: dist.autotune " << line << "\n" << std::flush;
  if (!folder_) return;
  for (size_t i = 0; i < candidates_.size(); ++i)
    folder_->write_metric(Json{{"kind", "autotune_candidate"},
                               {"step", t_.position().step},
                               {"bucket_mb", candidates_[i].caps.bucket_mb},
                               {"first_bucket_mb", candidates_[i].caps.first_bucket_mb},
                               {"predicted_s", candidates_[i].predicted_s},
                               {"measured_s", verdict.median_s[i]},
                               {"steps", counted}});
  folder_->write_metric(Json{{"kind", "autotune"},
                             {"step", t_.position().step},
                             {"bucket_mb", caps.bucket_mb},
                             {"first_bucket_mb", caps.first_bucket_mb},
                             {"config_step_s", verdict.median_s[0]},
                             {"chosen_step_s", verdict.median_s[chosen]},
                             {"gain", verdict.gain},
                             {"noise", verdict.noise},
                             {"tuning_steps", steps},
                             {"tuning_s", tuning_s_},
                             {"cost_s", std::max(cost, 0.0)}});
  write_tuned_toml(caps, line);
}

void BucketTuner::write_tuned_toml(const BucketCaps& chosen, const std::string& why) const {
  Config c = t_.config();
  c.dist.bucket_mb = chosen.bucket_mb;
  c.dist.first_bucket_mb = chosen.first_bucket_mb;
  c.dist.autotune = Autotune::kReplay;
  c.dist.autotune_trials = autotune_trials_text(state_.trials());
  const std::string text =
      str_cat("# dist.autotune ", why,
              "\n# As written, this file repeats the tuned run bit for bit (dist.autotune = \"replay\" follows "
              "dist.autotune_trials);\n# with dist.autotune = \"off\" it trains at the chosen caps from the first "
              "step.\n",
              to_toml(c));
  write_file_atomically((std::filesystem::path(c.checkpoint.dir) / "tuned.toml").string(), text);
}

}  // namespace rt
