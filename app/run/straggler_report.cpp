#include "app/run/straggler_report.h"

#include <algorithm>
#include <cstdio>

#include "base/check.h"
#include "base/median.h"

namespace rt {
namespace {

enum Field { kCompute, kSteps, kLastSteps, kPrev, kNext, kAveragesWait, kArrivalS, kArrivalBytes };

}  // namespace

void StragglerTally::begin_epoch() {
  compute_s_ = averages_wait_s_ = 0;
  from_prev_ = {};
  steps_ = last_steps_ = 0;
}

void StragglerTally::add_step(double compute_s, double averages_wait_s, const Links& now) {
  const Links before = last_;
  last_ = now;
  if (!warmed_up_) {
    warmed_up_ = true;
    return;
  }
  from_prev_.seconds += now.from_prev.seconds - before.from_prev.seconds;
  from_prev_.bytes += now.from_prev.bytes - before.from_prev.bytes;
  compute_s_ += compute_s;
  ++steps_;
  averages_wait_s_ += averages_wait_s;
  if (averages_wait_s < 1e-3 && averages_wait_s < 0.1 * compute_s) ++last_steps_;
}

void StragglerTally::write(double* all, int rank) const {
  double* f = all + static_cast<size_t>(rank) * kFields;
  f[kCompute] = compute_s_;
  f[kSteps] = static_cast<double>(steps_);
  f[kArrivalS] = from_prev_.seconds;
  f[kArrivalBytes] = from_prev_.bytes;
  f[kLastSteps] = static_cast<double>(last_steps_);
  f[kPrev] = last_.prev;
  f[kNext] = last_.next;
  f[kAveragesWait] = averages_wait_s_;
}

StragglerVerdict judge_stragglers(const double* all, const std::vector<std::string>& hosts) {
  const int world = static_cast<int>(hosts.size());
  const auto at = [&](int r, Field f) { return all[static_cast<size_t>(r) * StragglerTally::kFields + f]; };
  const auto per_step = [&](int r, Field f) { return at(r, kSteps) > 0 ? at(r, f) / at(r, kSteps) : 0.0; };
  const auto who = [&](int r) { return str_cat("rank ", r, " (", hosts[static_cast<size_t>(r)], ")"); };
  StragglerVerdict v;
  std::vector<double> compute;
  for (int r = 0; r < world; ++r) compute.push_back(per_step(r, kCompute));
  if (world < 2 || at(0, kSteps) == 0) return v;
  const double med = median(compute);
  v.worst_rank = static_cast<int>(std::max_element(compute.begin(), compute.end()) - compute.begin());
  v.compute_ms_median = 1e3 * med;
  v.compute_ms_worst = 1e3 * compute[static_cast<size_t>(v.worst_rank)];
  // The link into the rank whose bytes arrived slowest, against the median of the others'. Every
  // rank must have timed its receives: the transport does where it sees bytes arrive.
  std::vector<double> pace;  // seconds a byte
  for (int r = 0; r < world; ++r)
    if (at(r, kArrivalBytes) > 0 && at(r, kPrev) >= 0) pace.push_back(at(r, kArrivalS) / at(r, kArrivalBytes));
  int slow = -1, prev = -1;
  if (static_cast<int>(pace.size()) == world) {
    slow = static_cast<int>(std::max_element(pace.begin(), pace.end()) - pace.begin());
    std::vector<double> others = pace;
    others.erase(others.begin() + slow);
    const double others_med = median(others);
    prev = static_cast<int>(at(slow, kPrev));
    v.worst_link = str_cat(prev, "->", slow);
    v.worst_link_ratio = pace[static_cast<size_t>(slow)] / std::max(others_med, 1e-15);
    v.worst_link_ms = 1e3 * (per_step(slow, kArrivalS) - others_med * per_step(slow, kArrivalBytes));
  }
  const double excess = compute[static_cast<size_t>(v.worst_rank)] - med;
  // The others waited for it: its own wait for the step's averages is under half theirs.
  std::vector<double> waits_of_others;
  for (int r = 0; r < world; ++r)
    if (r != v.worst_rank) waits_of_others.push_back(per_step(r, kAveragesWait));
  const bool waited_for = per_step(v.worst_rank, kAveragesWait) < 0.5 * median(waits_of_others);
  char text[256];
  if (excess > kComputeMargin * med && excess > kFloorS && waited_for) {
    std::snprintf(text, sizeof text, " computed %.0f ms a step over the median (+%.0f%%)", 1e3 * excess,
                  100 * excess / med);
    v.line = who(v.worst_rank) + text;
    if (at(v.worst_rank, kNext) >= 0) {
      std::snprintf(text, sizeof text, "; the ring waited on it in %.0f%% of steps",
                    100 * per_step(v.worst_rank, kLastSteps));
      v.line += text;
    }
  } else if (slow >= 0 && v.worst_link_ratio > kLinkFactor && v.worst_link_ms > 1e3 * kFloorS) {
    std::snprintf(text, sizeof text, " took %.1fx the others' (%.0f ms a step more)", v.worst_link_ratio,
                  v.worst_link_ms);
    v.line = "transfers from " + who(prev) + " to " + who(slow) + text;
  }
  return v;
}

std::string StragglerVerdict::on_demand() const {
  if (!line.empty()) return line;
  if (worst_rank < 0) return "nothing to compare (one rank, or no step yet this epoch)";
  char text[200];
  std::snprintf(text, sizeof text,
                "no rank or link stands out: compute %.1f ms a step at the median, %.1f ms on rank %d",
                compute_ms_median, compute_ms_worst, worst_rank);
  return text;
}

void StragglerVerdict::add_to(Json& record) const {
  if (worst_rank < 0) return;
  record["compute_ms_median"] = compute_ms_median;
  record["compute_ms_worst"] = compute_ms_worst;
  record["worst_rank"] = worst_rank;
  if (!worst_link.empty()) {
    record["worst_link"] = worst_link;
    record["worst_link_ratio"] = worst_link_ratio;
    record["worst_link_ms"] = worst_link_ms;
  }
  if (!line.empty()) record["straggler"] = line;
}

}  // namespace rt
