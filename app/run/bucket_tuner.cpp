#include "app/run/bucket_tuner.h"

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
      base_.step_s.push_back(step_s);
      base_.compute_s.push_back(compute_s);
      base_.bucket_s.push_back(t_.reducer()->bucket_seconds());
      if (static_cast<int64_t>(base_.step_s.size()) == kBaseSteps) plan();
      return;
    case Phase::kTrials:
      tuning_s_ += step_s;
      if (visit_step_ > 0)
        measured_[visits_[visit_].first][static_cast<size_t>(visits_[visit_].second)].push_back(step_s);
      if (++visit_step_ <= visit_len_) return;
      if (++visit_ == visits_.size()) return settle();
      visit_step_ = 0;
      apply(plan_.candidates[visits_[visit_].first].caps, false);
      return;
  }
}

// Rank 0 plans from its base steps (its steps are everyone's: the ranks step together) and every
// rank receives the plan as numbers; no numbers: the plan failed on rank 0.
void BucketTuner::plan() {
  const World& world = t_.world();
  std::vector<double> numbers;
  std::string failed;
  if (world.rank() == 0) try {
      for (const Bucket& b : t_.reducer()->buckets()) base_.bucket_floats.push_back(b.count);
      numbers = plan_trials(base_, t_.graph(), t_.config().dist, world.size(), t_.config().train.accumulate_steps,
                            t_.bucket_caps())
                    .numbers();
    } catch (const Error& e) {
      failed = e.what();  // an optional speed-up must not end the run
      numbers.clear();
    }
  world.broadcast(numbers, 0, {&t_.between_steps(), str_cat("step ", t_.position().step, ": the tuner's candidates")});
  if (numbers.empty()) {
    phase_ = Phase::kDone;
    if (world.rank() == 0)
      t_.out() << "ringtrain: dist.autotune could not plan its trials (" << failed << "); kept the config's "
               << caps_keys(t_.bucket_caps()) << "\n";
    return;
  }
  plan_ = TrialPlan::from_numbers(numbers);
  if (plan_.candidates.size() == 1) return keep_the_only_candidate();
  start_trials();
}

void BucketTuner::keep_the_only_candidate() {
  apply(plan_.candidates[0].caps, /*settled=*/true);
  phase_ = Phase::kDone;
  const std::string line = str_cat("kept the config's ", caps_keys(plan_.candidates[0].caps),
                                   ": every other caps cut this model's gradients into the same buckets");
  if (t_.world().rank() != 0) return;
  t_.out() << "ringtrain: dist.autotune " << line << "\n" << std::flush;
  if (folder_) write_tuned_toml(plan_.candidates[0].caps, line);
}

void BucketTuner::start_trials() {
  const std::vector<RankedCaps>& candidates = plan_.candidates;
  visit_len_ = visit_steps(plan_.spread);
  measured_.assign(candidates.size(), std::vector<std::vector<double>>(kRounds));
  for (int r = 0; r < kRounds; ++r)
    for (size_t i = 0; i < candidates.size(); ++i) visits_.push_back({r % 2 == 0 ? i : candidates.size() - 1 - i, r});
  if (t_.world().rank() == 0) {
    std::string tried;
    for (size_t i = 1; i < candidates.size(); ++i) tried += str_cat(i > 1 ? ", " : "", caps_short(candidates[i].caps));
    char cost[96];
    std::snprintf(cost, sizeof cost, "a bucket's average %.3g ms + %.3g ms a MB", plan_.fit.fixed_s * 1e3,
                  plan_.fit.s_per_byte * 1e9);
    t_.out() << "ringtrain: dist.autotune: " << base_.step_s.size() << " steps at the config's "
             << caps_short(candidates[0].caps) << " (steps spread " << percent(plan_.spread) << "; " << cost
             << "); trying " << tried << " against them, " << kRounds << " rounds of " << visit_len_ << " steps each\n"
             << std::flush;
  }
  phase_ = Phase::kTrials;
  visit_ = 0;
  visit_step_ = 0;
  apply(candidates[visits_[0].first].caps, false);
}

// Rank 0 judges and every rank receives the choice, as a number.
void BucketTuner::settle() {
  const World& world = t_.world();
  TrialVerdict verdict;
  std::vector<double> chosen_number;
  if (world.rank() == 0) {
    verdict = judge_trials(measured_);
    chosen_number = {static_cast<double>(verdict.chosen)};
  }
  world.broadcast(chosen_number, 0,
                  {&t_.between_steps(), str_cat("step ", t_.position().step, ": the tuner's choice")});
  const size_t chosen = static_cast<size_t>(chosen_number.at(0));
  const BucketCaps caps = plan_.candidates.at(chosen).caps;
  apply(caps, /*settled=*/true);
  phase_ = Phase::kDone;
  if (world.rank() != 0) return;
  const int64_t steps = t_.position().step - started_step_;
  const double cost = tuning_s_ - static_cast<double>(steps - kWarmupSteps) * verdict.median_s[chosen];
  const std::string line = str_cat(chosen != 0 ? "settled on " : "kept the config's ", caps_keys(caps), " after ",
                                   steps, " steps of tuning (", seconds(tuning_s_), ", ", seconds(std::max(cost, 0.0)),
                                   " more than at the choice): ", why(verdict));
  t_.out() << "ringtrain: dist.autotune " << line << "\n" << std::flush;
  if (!folder_) return;
  write_records(verdict, steps, std::max(cost, 0.0));
  write_tuned_toml(caps, line);
}

// Why the verdict chose as it did, with the medians it compared.
std::string BucketTuner::why(const TrialVerdict& verdict) const {
  const std::vector<RankedCaps>& candidates = plan_.candidates;
  const auto counted = static_cast<int64_t>(kRounds) * visit_len_;
  const size_t chosen = verdict.chosen;
  if (chosen != 0)
    return str_cat(percent(verdict.gain), " faster a step than the config's ", caps_short(candidates[0].caps), " (",
                   seconds(verdict.median_s[chosen]), " against ", seconds(verdict.median_s[0]), ", medians of ",
                   counted, " steps each; noise ", percent(verdict.noise), ")");
  if (verdict.fastest == 0)
    return str_cat("the config's own were the fastest (", seconds(verdict.median_s[0]), " a step, medians of ", counted,
                   " steps each; noise ", percent(verdict.noise), ")");
  return str_cat("the fastest, ", caps_short(candidates[verdict.fastest].caps), ", gained ",
                 percent(1 - verdict.median_s[verdict.fastest] / verdict.median_s[0]), ", within the noise (",
                 percent(verdict.noise), "; medians of ", counted, " steps each)");
}

// metrics.jsonl: each candidate as predicted and measured, then the choice.
void BucketTuner::write_records(const TrialVerdict& verdict, int64_t steps, double cost_s) const {
  const std::vector<RankedCaps>& candidates = plan_.candidates;
  const auto counted = static_cast<int64_t>(kRounds) * visit_len_;
  const BucketCaps& caps = candidates[verdict.chosen].caps;
  for (size_t i = 0; i < candidates.size(); ++i)
    folder_->write_metric(Json{{"kind", "autotune_candidate"},
                               {"step", t_.position().step},
                               {"bucket_mb", candidates[i].caps.bucket_mb},
                               {"first_bucket_mb", candidates[i].caps.first_bucket_mb},
                               {"predicted_s", candidates[i].predicted_s},
                               {"measured_s", verdict.median_s[i]},
                               {"steps", counted}});
  folder_->write_metric(Json{{"kind", "autotune"},
                             {"step", t_.position().step},
                             {"bucket_mb", caps.bucket_mb},
                             {"first_bucket_mb", caps.first_bucket_mb},
                             {"config_step_s", verdict.median_s[0]},
                             {"chosen_step_s", verdict.median_s[verdict.chosen]},
                             {"gain", verdict.gain},
                             {"noise", verdict.noise},
                             {"tuning_steps", steps},
                             {"tuning_s", tuning_s_},
                             {"cost_s", cost_s}});
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
