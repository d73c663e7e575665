#include "tools/simulate.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "app/run/bucket_tuner.h"
#include "app/compute_profile.h"
#include "app/config_model.h"
#include "app/gradient_buckets.h"
#include "base/check.h"
#include "dist/statistics_group.h"
#include "dist/wire_format.h"

namespace rt {
std::vector<int> parse_rank_list(const std::string& text) {
  std::vector<int> ranks;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    int n = 0;
    size_t used = 0;
    try {
      n = std::stoi(item, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    RT_CHECK(used == item.size() && n >= 1, "--ranks expects positive integers separated by commas (8,16,32), got '",
             item, "' in '", text, "'");
    ranks.push_back(n);
  }
  RT_CHECK(!ranks.empty(), "--ranks expects positive integers separated by commas (8,16,32)");
  return ranks;
}

SimulatedModel plan_model_for_simulation(const Config& config) {
  SimulatedModel m;
  m.graph = plan_config_model_on_cpu(config, usual_input(config), 1, /*training=*/true);
  m.gradients = plan_gradient_buckets(*m.graph, config.dist);
  return m;
}

namespace {

// What every report works from: the cluster, the model and its compute profile.
struct Simulation {
  ClusterFile f;
  SimulatedModel m;
  ComputeProfile profile;
  std::string network_path;
};

Simulation prepare_simulation(const Config& config, const std::string& network_path, double cycle_s,
                              const std::string& profile_path) {
  Simulation s{load_cluster_file(network_path, config.model.name, profile_path.empty()),
               plan_model_for_simulation(config),
               {},
               network_path};
  s.f.cluster.cycle_s = cycle_s;
  if (profile_path.empty()) {
    s.profile = profile_from_multiply_adds(*s.m.graph, static_cast<double>(s.f.batch_per_rank) / s.f.images_per_s);
  } else {
    const StepProfile measured = read_step_profile(profile_path);
    RT_CHECK(measured.model == config.model.name, profile_path, " profiles ", measured.model,
             ", the config's model is ", config.model.name);
    s.profile = profile_from_measurement(*s.m.graph, measured, profile_path);
    s.f.batch_per_rank = measured.batch_per_rank;
    s.f.images_per_s = static_cast<double>(measured.batch_per_rank) / measured.step_s();
  }
  return s;
}

// "1.4 ns per element at rank 1, 0.2 per rank more (measured)", for the reports' headers.
std::string products_price(const Simulation& s) {
  if (!s.f.prices_powersgd()) return "not priced by the cluster file";
  return str_cat(s.f.powersgd_s_per_element * 1e9, " ns per element of a compressed gradient at rank 1, ",
                 s.f.powersgd_s_per_rank * 1e9, " per rank more (",
                 s.f.powersgd_estimate ? "an estimate, not a measurement" : "measured", ", from ", s.network_path, ")");
}

// Each batch-norm layer's channels, for Note [Group batch norm cost].
std::vector<int64_t> batch_norm_channels(const Graph& graph) {
  std::vector<int64_t> channels;
  for (const LayerRow& row : graph.layer_table())
    if (row.kind == "batch_norm2d") channels.push_back(row.output.at(1));
  return channels;
}

// train.bn_group's averages, per micro-batch: none where the group is one rank.
double bn_group_step_seconds(const Simulation& s, const Config& config) {
  return bn_group_seconds(batch_norm_channels(*s.m.graph), static_cast<int>(config.train.bn_group), s.f.cluster);
}

// Note [Compression cost] for each bucket of `planned` under dist.compression = "powersgd", at the
// cluster file's price of the products; empty without compression.
std::vector<BucketRounds> compression_rounds(const Simulation& s, const GradientBuckets& planned,
                                             const DistConfig& dist) {
  if (dist.compression != Compression::kPowerSgd) return {};
  RT_CHECK(s.f.prices_powersgd(), "simulate: dist.compression = \"powersgd\" costs products the cluster file ",
           s.network_path, " does not price: give its [compute] powersgd_ns_per_element and powersgd_ns_per_rank, ",
           "as bench/powersgd_products measures them on the ranks' device");
  std::vector<BucketRounds> rounds;
  for (const PowerSgdRounds& r :
       powersgd_rounds(planned.params, planned.shapes, planned.buckets, powersgd_options(dist)))
    rounds.push_back({r.first_floats, r.second_floats,
                      static_cast<double>(r.elements) * s.f.powersgd_s_per_element +
                          static_cast<double>(r.element_ranks - r.elements) * s.f.powersgd_s_per_rank});
  return rounds;
}

// The step under `dist` at p ranks; buckets re-planned where dist's caps differ from the config's.
StepPrediction predict(const Simulation& s, const Config& config, const DistConfig& dist, int p) {
  const GradientBuckets planned = plan_gradient_buckets(*s.m.graph, dist);
  const double element_bytes = static_cast<double>(wire_bytes(dist.wire));
  const Hierarchy h = simulated_hierarchy(dist.hierarchy, p, s.f.cluster);
  const int64_t K = config.train.accumulate_steps;
  if (config.train.bn_group > 1) {
    // As the trainer refuses it (Note [Group batch norm]).
    const std::string refusal =
        statistics_group_refusal(static_cast<int>(config.train.bn_group), block_layout(p, s.f.cluster.ranks_per_host));
    RT_CHECK(refusal.empty(), "at ", p, " ranks: ", refusal);
  }
  return with_bn_group(
      with_accumulation(simulate_step(s.profile, planned.params, planned.buckets, p, dist.overlap, s.f.cluster,
                                      element_bytes, h, compression_rounds(s, planned, dist)),
                        s.profile, K),
      p > 1 ? bn_group_step_seconds(s, config) : 0, K);
}

// What a compressed step sends under the config's buckets (s.m.gradients), and what its products
// are priced at (Note [Compression cost]).
std::string compression_line(const Simulation& s, const DistConfig& dist) {
  const GradientBuckets& planned = s.m.gradients;
  const PowerSgdFloats f = powersgd_floats(planned.params, planned.shapes, planned.buckets, powersgd_options(dist));
  char sizes[128];
  std::snprintf(sizes, sizeof sizes, "%.2f MB of float32 a step instead of %.1f MB",
                static_cast<double>(f.compressed) * 4 / 1e6, static_cast<double>(f.plain) * 4 / 1e6);
  return str_cat("# dist.compression = powersgd at rank ", dist.powersgd_rank, " (the steps from ",
                 dist.powersgd_start_step + 1, " on): ", sizes, "; products ", products_price(s), "\n");
}

std::string header(const Config& config, const Simulation& s, const std::string& network_path, double cycle_s,
                   const std::string& profile_path) {
  std::ostringstream out;
  char line[256];
  const int64_t K = config.train.accumulate_steps;
  const ClusterModel& c = s.f.cluster;
  out << "# ringtrain simulate: " << config.model.name << ", " << s.f.batch_per_rank << " images per rank"
      << (K > 1 ? str_cat(" x ", K, " micro-batches a step (train.accumulate_steps)") : std::string()) << ", one rank "
      << s.f.images_per_s << " img/s"
      << (!profile_path.empty() ? str_cat(" (measured per layer: ", profile_path, ")")
          : s.f.estimate        ? std::string(" (an estimate, not a measurement)")
                                : std::string(""))
      << "\n";
  std::snprintf(line, sizeof line,
                "# cluster %s: %d ranks per host; inside a host %.0f Gbit/s, %.1f us; between hosts %.0f Gbit/s, "
                "%.1f us (%.0f%% of each link's bandwidth); %s\n",
                network_path.c_str(), c.ranks_per_host, c.intra_host.bytes_per_s * 8 / 1e9 / s.f.bandwidth_efficiency,
                c.intra_host.latency_s * 1e6, c.inter_host.bytes_per_s * 8 / 1e9 / s.f.bandwidth_efficiency,
                c.inter_host.latency_s * 1e6, 100 * s.f.bandwidth_efficiency,
                cycle_s > 0 ? str_cat("collectives start every ", cycle_s * 1e3, " ms (Horovod's cycle)").c_str()
                            : "each bucket starts when ready (ringtrain)");
  out << line;
  if (config.dist.compression == Compression::kPowerSgd) out << compression_line(s, config.dist);
  if (config.train.bn_group > 1)
    out << "# train.bn_group = " << config.train.bn_group << ": " << bn_group_step_seconds(s, config) * 1e3
        << " ms of batch-norm averages per micro-batch, inside a host (in step_ms and exposed_ms)\n";
  return out.str();
}

}  // namespace

std::string simulate_report(const Config& config, const std::vector<int>& ranks, const std::string& network_path,
                            double cycle_s, const std::string& profile_path, double straggler) {
  Simulation s = prepare_simulation(config, network_path, cycle_s, profile_path);
  const ComputeProfile even = s.profile;
  const GradientBuckets& g = s.m.gradients;
  const ClusterModel& c = s.f.cluster;
  std::ostringstream out;
  out << header(config, s, network_path, cycle_s, profile_path);
  char line[256];
  std::snprintf(line, sizeof line,
                "# %zu buckets (dist.first_bucket_mb = %g, dist.bucket_mb = %g), %s backward, %s on the wire, "
                "%.1f MB of gradients, dist.hierarchy = %s\n",
                g.buckets.size(), config.dist.first_bucket_mb, config.dist.bucket_mb,
                config.dist.overlap ? "overlapped with" : "after", std::string(name_of(config.dist.wire)).c_str(),
                static_cast<double>(g.params.empty() ? 0 : g.params.back().offset + g.params.back().count) * 4 / 1e6,
                std::string(name_of(config.dist.hierarchy)).c_str());
  out << line;
  if (straggler > 0)
    out << "# one rank " << 100 * straggler << "% slower in compute (--straggler): every rank waits for it; "
        << "straggler_step_ms and straggler_efficiency (against the one-rank step without it) say what it costs\n";
  out << "# ranks hosts step_ms compute_ms comm_busy_ms exposed_ms images_per_s speedup efficiency ring"
      << (straggler > 0 ? " straggler_step_ms straggler_efficiency" : "") << "\n";
  const int64_t K = config.train.accumulate_steps;
  for (int p : ranks) {
    s.profile = even;
    const StepPrediction st = predict(s, config, config.dist, p);
    const double images = static_cast<double>(p * s.f.batch_per_rank * K) / st.step_s;
    std::snprintf(line, sizeof line, "%7d %5d %8.1f %10.1f %12.1f %10.1f %12.3f %7.1f %9.3f %s", p,
                  (p + c.ranks_per_host - 1) / c.ranks_per_host, st.step_s * 1e3, st.compute_s * 1e3,
                  st.comm_busy_s * 1e3, st.exposed_comm_s * 1e3, images, images / s.f.images_per_s, st.efficiency,
                  std::string(name_of(simulated_hierarchy(config.dist.hierarchy, p, c))).c_str());
    out << line;
    if (straggler > 0) {
      s.profile = slowed(even, 1 + straggler);
      const StepPrediction slow = predict(s, config, config.dist, p);
      std::snprintf(line, sizeof line, " %17.1f %20.3f", slow.step_s * 1e3, st.compute_s / slow.step_s);
      out << line;
    }
    out << "\n";
  }
  return out.str();
}

namespace {

constexpr double kWorthChanging = 0.005;
// Compression costs accuracy (docs/distributed.md): proposed only where its fastest rank gains this
// much over the fastest plain settings, and then at the highest rank whose step is within
// kRankTolerance of the fastest rank's (the higher the rank, the less it loses).
constexpr double kWorthCompressing = 0.05;
constexpr double kRankTolerance = 0.01;

struct Choice {
  DistConfig dist;
  StepPrediction step;
};

// The fastest dist.hierarchy, dist.bucket_mb and dist.first_bucket_mb with base's other settings.
Choice fastest_layout(const Simulation& s, const Config& config, const DistConfig& base, int p) {
  Choice best{base, predict(s, config, base, p)};
  for (const Hierarchy h : {Hierarchy::kFlat, Hierarchy::kTwoLevel}) {
    if (h == Hierarchy::kTwoLevel && simulated_hierarchy(Hierarchy::kAuto, p, s.f.cluster) != Hierarchy::kTwoLevel)
      continue;  // one host, one rank per host, or uneven hosts: the two-level ring is the flat one or refused
    for (double cap : {0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 25.0, 32.0, 64.0, 128.0, 256.0, 512.0})
      for (double first : {0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0}) {
        if (cap > 0 && first > cap) continue;
        DistConfig d = base;
        d.hierarchy = h;
        d.bucket_mb = cap;
        d.first_bucket_mb = first;
        const StepPrediction st = predict(s, config, d, p);
        if (st.step_s < best.step.step_s * (1 - 1e-9)) best = {d, st};
      }
  }
  return best;
}

// The fastest plain settings, or PowerSGD where the cluster file prices it and it pays.
Choice fastest(const Simulation& s, const Config& config, int p) {
  DistConfig plain = config.dist;
  plain.compression = Compression::kNone;
  const Choice best_plain = fastest_layout(s, config, plain, p);
  if (!s.f.prices_powersgd()) return best_plain;
  std::vector<Choice> ranked;
  for (const int64_t k : {1, 2, 4, 8, 16, 32}) {
    DistConfig d = config.dist;
    d.compression = Compression::kPowerSgd;
    d.powersgd_rank = k;
    ranked.push_back(fastest_layout(s, config, d, p));
  }
  double quickest = ranked.front().step.step_s;
  for (const Choice& c : ranked) quickest = std::min(quickest, c.step.step_s);
  const Choice* chosen = nullptr;
  for (const Choice& c : ranked)
    if (c.step.step_s <= quickest * (1 + kRankTolerance)) chosen = &c;
  // Compression at its fastest must pay; then the highest rank near that pace.
  return quickest < best_plain.step.step_s * (1 - kWorthCompressing) ? *chosen : best_plain;
}

std::string compression_name(const DistConfig& d) {
  return d.compression == Compression::kPowerSgd ? str_cat("powersgd:", d.powersgd_rank) : std::string("none");
}

}  // namespace

std::string suggest_report(const Config& config, const std::vector<int>& ranks, const std::string& network_path,
                           double cycle_s, const std::string& profile_path) {
  const Simulation s = prepare_simulation(config, network_path, cycle_s, profile_path);
  std::ostringstream out;
  out << header(config, s, network_path, cycle_s, profile_path);
  out << "# the settings predicted fastest, searched over dist.hierarchy, dist.bucket_mb (0 = one collective per "
         "tensor) and dist.first_bucket_mb, against the config's ("
      << name_of(config.dist.hierarchy) << ", " << config.dist.bucket_mb << ", " << config.dist.first_bucket_mb << ", "
      << compression_name(config.dist) << "), kept where nothing is predicted " << 100 * kWorthChanging << "% faster\n";
  if (s.f.prices_powersgd())
    out << "# and over dist.compression = powersgd at ranks 1 to 32, proposed only where it is predicted "
        << 100 * kWorthCompressing << "% faster than the fastest plain settings (it costs accuracy), at the highest "
        << "rank within " << 100 * kRankTolerance << "% of the fastest rank's step; products " << products_price(s)
        << "\n";
  else
    out << "# dist.compression = powersgd not searched: the cluster file does not price its products\n";
  out << "# ranks hierarchy bucket_mb first_bucket_mb compression step_ms efficiency config_step_ms "
         "config_efficiency gain\n";
  char line[256];
  std::string advice;
  for (int p : ranks) {
    const StepPrediction mine = predict(s, config, config.dist, p);
    Choice best = fastest(s, config, p);
    // A prediction within half a percent of the config's is no reason to change it.
    if (best.step.step_s > mine.step_s * (1 - kWorthChanging)) best = {config.dist, mine};
    std::snprintf(line, sizeof line, "%7d %9s %9g %15g %11s %7.1f %10.3f %14.1f %17.3f %+5.1f%%\n", p,
                  std::string(name_of(best.dist.hierarchy)).c_str(), best.dist.bucket_mb, best.dist.first_bucket_mb,
                  compression_name(best.dist).c_str(), best.step.step_s * 1e3, best.step.efficiency, mine.step_s * 1e3,
                  mine.efficiency, 100 * (mine.step_s / best.step.step_s - 1));
    out << line;
    const DistConfig& d = best.dist;
    advice = str_cat("# to run ", p, " ranks so: --set dist.hierarchy=", name_of(d.hierarchy),
                     " --set dist.bucket_mb=", d.bucket_mb, " --set dist.first_bucket_mb=", d.first_bucket_mb,
                     " --set dist.compression=", name_of(d.compression),
                     d.compression == Compression::kPowerSgd ? str_cat(" --set dist.powersgd_rank=", d.powersgd_rank)
                                                             : std::string(),
                     "\n");
  }
  out << advice;
  return out.str();
}

std::string autotune_report(const Config& config, const std::vector<int>& ranks, const std::string& network_path,
                            double cycle_s, const std::string& profile_path) {
  const Simulation s = prepare_simulation(config, network_path, cycle_s, profile_path);
  const BucketCaps own{config.dist.bucket_mb, config.dist.first_bucket_mb};
  const double element_bytes = static_cast<double>(wire_bytes(config.dist.wire));
  std::ostringstream out;
  out << header(config, s, network_path, cycle_s, profile_path);
  out << "# dist.autotune (docs/distributed.md): the config's caps (" << own.text() << ") and the " << kCandidates
      << " the simulator ranks fastest with other buckets, each measured on the job's steps; "
      << "it keeps the config's unless one is " << 100 * kMinGain
      << "% faster or more (more where its steps are noisier).\n"
      << "# On a cluster it prices buckets from their measured averages; here from this cluster file, so the "
         "choice below is what it settles on where the steps go as predicted.\n"
      << "# ranks hierarchy candidates (bucket_mb/first_bucket_mb: step_ms) -> choice gain\n";
  for (int p : ranks) {
    if (p < 2) continue;  // one rank averages nothing
    const Hierarchy h = simulated_hierarchy(config.dist.hierarchy, p, s.f.cluster);
    const std::vector<RankedCaps> ranked =
        rank_bucket_caps(*s.m.graph, config.dist, s.profile, p, s.f.cluster, h, element_bytes,
                         config.train.accumulate_steps, own, kCandidates);
    size_t best = 0;
    for (size_t i = 1; i < ranked.size(); ++i)
      if (ranked[i].predicted_s < ranked[best].predicted_s) best = i;
    const double gain = 1 - ranked[best].predicted_s / ranked[0].predicted_s;
    const size_t chosen = gain > kMinGain ? best : 0;
    char head[64];
    std::snprintf(head, sizeof head, "%7d %9s ", p, std::string(name_of(h)).c_str());
    out << head;
    for (size_t i = 0; i < ranked.size(); ++i) {
      char item[64];
      std::snprintf(item, sizeof item, "%s%s: %.1f", i ? ", " : "", ranked[i].caps.text().c_str(),
                    ranked[i].predicted_s * 1e3);
      out << item;
    }
    char tail[128];
    if (chosen)
      std::snprintf(tail, sizeof tail, " -> %s %+.1f%%\n", ranked[chosen].caps.text().c_str(), 100 * gain);
    else if (best == 0)
      std::snprintf(tail, sizeof tail, " -> the config's (the fastest)\n");
    else
      std::snprintf(tail, sizeof tail, " -> the config's (the best other %+.1f%%)\n", 100 * gain);
    out << tail;
  }
  return out.str();
}

}  // namespace rt
