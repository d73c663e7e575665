#include "dist/step_simulator.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "base/check.h"
#include "dist/ring_schedule.h"

namespace rt {

double ring_allreduce_seconds(double bytes, int ranks, const ClusterModel& cluster) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const LinkModel& link = ranks > cluster.ranks_per_host ? cluster.inter_host : cluster.intra_host;
  const double per_step = link.latency_s + bytes / ranks / link.bytes_per_s;
  return ring_step_count(ranks) * per_step;
}

double two_level_allreduce_seconds(double bytes, double bytes_across, int ranks, const ClusterModel& cluster) {
  if (ranks <= 1 || bytes <= 0) return 0;
  const int L = std::min(cluster.ranks_per_host, ranks), H = (ranks + L - 1) / L;
  const LinkModel &in = cluster.intra_host, &across = cluster.inter_host;
  return ring_step_count(L) * (in.latency_s + bytes / L / in.bytes_per_s) +
         ring_step_count(H) * (across.latency_s + bytes_across / H / across.bytes_per_s);
}

Hierarchy simulated_hierarchy(Hierarchy setting, int ranks, const ClusterModel& cluster) {
  const int per_host = std::max(1, cluster.ranks_per_host);
  RT_CHECK(setting != Hierarchy::kTwoLevel || ranks % per_host == 0, "simulate: dist.hierarchy = \"two_level\" at ",
           ranks, " ranks would leave the last host with ", ranks % per_host,
           " of the cluster file's ranks_per_host = ", per_host,
           ", and the two-level ring needs as many on every host: simulate a multiple of ", per_host,
           ", or dist.hierarchy = \"auto\"");
  return resolve_hierarchy(setting, block_layout(ranks, per_host));
}

namespace {

// When backward has done `work` seconds of its own compute, if it runs 1 + slowdown times slower
// while a collective is in flight (`busy`: the collectives' intervals, in order).
double time_for_work(double work, const std::vector<std::pair<double, double>>& busy, double slowdown) {
  double t = 0, done = 0;
  for (auto [from, to] : busy) {
    if (to <= t) continue;
    from = std::max(from, t);
    if (done + (from - t) >= work) return t + (work - done);
    done += from - t;
    t = from;
    const double slowed = (to - from) / (1 + slowdown);
    if (done + slowed >= work) return t + (work - done) * (1 + slowdown);
    done += slowed;
    t = to;
  }
  return t + (work - done);
}

}  // namespace

StepPrediction simulate_step(const ComputeProfile& profile, const std::vector<ParamExtent>& params,
                             const std::vector<Bucket>& buckets, int ranks, bool overlap, const ClusterModel& cluster,
                             double bytes_per_element, Hierarchy hierarchy, const std::vector<BucketRounds>& rounds) {
  RT_CHECK(profile.ready_s.size() == params.size(), "the compute profile has ", profile.ready_s.size(),
           " gradients, the model ", params.size());
  RT_CHECK(rounds.empty() || rounds.size() == buckets.size(), rounds.size(), " buckets' rounds for ", buckets.size(),
           " buckets");
  const auto allreduce_s = [&](int64_t floats) {
    const double bytes = static_cast<double>(floats) * bytes_per_element;
    return hierarchy == Hierarchy::kTwoLevel
               ? two_level_allreduce_seconds(static_cast<double>(floats) * 4, bytes, ranks, cluster)
               : ring_allreduce_seconds(bytes, ranks, cluster);
  };
  StepPrediction p;
  p.ranks = ranks;
  p.compute_s = profile.forward_s + profile.backward_s + profile.optimizer_s;
  double launched = 0, comm_free = 0;           // from backward's start
  std::vector<std::pair<double, double>> busy;  // the collectives' intervals
  const double slowdown = cluster.overlap_slowdown;
  if (ranks > 1) {
    for (size_t bucket = 0; bucket < buckets.size(); ++bucket) {
      const Bucket& b = buckets[bucket];
      double work = 0;  // backward's own compute up to this bucket's last gradient
      for (size_t i = b.first_param; i < b.end_param; ++i) work = std::max(work, profile.ready_s[i]);
      const double ready = overlap ? time_for_work(work, busy, slowdown) : profile.backward_s;
      launched = std::max(launched, ready);  // in arena order, never ahead of an earlier bucket
      double start = std::max(launched, comm_free);
      // The next cycle boundary; a start on a boundary (up to rounding) stays.
      if (cluster.cycle_s > 0) start = std::ceil(start / cluster.cycle_s - 1e-9) * cluster.cycle_s;
      const double t = rounds.empty() ? allreduce_s(b.count)
                                      : rounds[bucket].products_s + allreduce_s(rounds[bucket].first_floats) +
                                            allreduce_s(rounds[bucket].second_floats);
      p.comm_busy_s += t;
      comm_free = start + t;
      busy.emplace_back(start, comm_free);
    }
  }
  const double backward_end = time_for_work(profile.backward_s, busy, slowdown);
  p.step_s = profile.forward_s + std::max(backward_end, comm_free) + profile.optimizer_s;
  p.exposed_comm_s = p.step_s - p.compute_s;
  p.efficiency = p.compute_s / p.step_s;
  return p;
}

double bn_group_seconds(const std::vector<int64_t>& bn_channels, int group, const ClusterModel& cluster) {
  if (group <= 1) return 0;
  RT_CHECK(group <= cluster.ranks_per_host, "train.bn_group = ", group, " is larger than a host's ",
           cluster.ranks_per_host, " ranks");
  double seconds = 0;
  for (int64_t c : bn_channels) {
    const double floats = static_cast<double>(c);
    seconds +=
        2 * ring_allreduce_seconds(4 * floats, group, cluster) + ring_allreduce_seconds(8 * floats, group, cluster);
  }
  return seconds;
}

StepPrediction with_bn_group(const StepPrediction& step, double seconds_per_micro_batch, int64_t micro_batches) {
  StepPrediction p = step;
  const double added = seconds_per_micro_batch * static_cast<double>(micro_batches);
  p.step_s += added;
  p.exposed_comm_s += added;
  p.efficiency = p.compute_s / p.step_s;
  return p;
}

ComputeProfile slowed(const ComputeProfile& profile, double factor) {
  ComputeProfile p = profile;
  p.forward_s *= factor;
  p.backward_s *= factor;
  p.optimizer_s *= factor;
  for (double& t : p.ready_s) t *= factor;
  return p;
}

StepPrediction with_accumulation(const StepPrediction& one, const ComputeProfile& profile, int64_t micro_batches) {
  StepPrediction p = one;
  const double earlier = static_cast<double>(micro_batches - 1) * (profile.forward_s + profile.backward_s);
  p.step_s += earlier;
  p.compute_s += earlier;
  p.efficiency = p.compute_s / p.step_s;
  return p;
}

}  // namespace rt
