#include "tools/simulate.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "app/config_model.h"
#include "app/gradient_buckets.h"
#include "base/check.h"
#include "dist/statistics_group.h"
#include "dist/wire_format.h"

namespace rt {
namespace {

// Backward's part of a profile from each layer's backward seconds (rows as Graph::layer_table()):
// backward runs the layers last to first, and a layer's gradients are final when it is done.
ComputeProfile backward_profile(const Graph& graph, const std::vector<LayerRow>& rows,
                                const std::vector<double>& layer_s) {
  ComputeProfile p;
  std::map<std::string, double> done_at;
  for (size_t i = rows.size(); i-- > 0;) {
    p.backward_s += layer_s[i];
    done_at[rows[i].name] = p.backward_s;
  }
  for (const ParamRef& param : graph.params()) {
    const auto it = done_at.find(param.name.substr(0, param.name.rfind('.')));
    RT_CHECK(it != done_at.end(), "parameter ", param.name, " belongs to no layer of the table");
    p.ready_s.push_back(it->second);
  }
  return p;
}

}  // namespace

ComputeProfile profile_from_multiply_adds(const Graph& graph, double step_s) {
  const std::vector<LayerRow> rows = graph.layer_table();
  double total_macs = 0;
  for (const LayerRow& row : rows) total_macs += static_cast<double>(row.macs);
  RT_CHECK(total_macs > 0, "the model has no multiply-adds to spread backward's time over");
  const double forward_s = step_s / 3, backward_s = step_s - forward_s;
  std::vector<double> layer_s;
  for (const LayerRow& row : rows) layer_s.push_back(backward_s * static_cast<double>(row.macs) / total_macs);
  ComputeProfile p = backward_profile(graph, rows, layer_s);
  p.forward_s = forward_s;
  p.backward_s = backward_s;  // the whole, not the rounded sum of its shares
  return p;
}

ComputeProfile profile_from_measurement(const Graph& graph, const StepProfile& measured, const std::string& source) {
  const std::vector<LayerRow> rows = graph.layer_table();
  RT_CHECK(measured.layers.size() == rows.size(), source, " profiles ", measured.model, " with ",
           measured.layers.size(), " layers; the config's model has ", rows.size());
  std::vector<double> layer_s;
  for (size_t i = 0; i < rows.size(); ++i) {
    RT_CHECK(measured.layers[i].first == rows[i].name, source, ": layer ", i, " is ", measured.layers[i].first,
             ", the model's is ", rows[i].name);
    layer_s.push_back(measured.layers[i].second);
  }
  ComputeProfile p = backward_profile(graph, rows, layer_s);
  p.forward_s = measured.forward_s;
  p.optimizer_s = measured.optimizer_s;
  return p;
}

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
};

Simulation prepare_simulation(const Config& config, const std::string& network_path, double cycle_s,
                              const std::string& profile_path) {
  Simulation s{
      load_cluster_file(network_path, config.model.name, profile_path.empty()), plan_model_for_simulation(config), {}};
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
  return with_bn_group(with_accumulation(simulate_step(s.profile, planned.params, planned.buckets, p, dist.overlap,
                                                       s.f.cluster, element_bytes, h),
                                         s.profile, K),
                       p > 1 ? bn_group_step_seconds(s, config) : 0, K);
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
}  // namespace

std::string suggest_report(const Config& config, const std::vector<int>& ranks, const std::string& network_path,
                           double cycle_s, const std::string& profile_path) {
  const Simulation s = prepare_simulation(config, network_path, cycle_s, profile_path);
  std::ostringstream out;
  out << header(config, s, network_path, cycle_s, profile_path);
  out << "# the settings predicted fastest, searched over dist.hierarchy, dist.bucket_mb (0 = one collective per "
         "tensor) and dist.first_bucket_mb, against the config's ("
      << name_of(config.dist.hierarchy) << ", " << config.dist.bucket_mb << ", " << config.dist.first_bucket_mb
      << "), kept where nothing is predicted " << 100 * kWorthChanging << "% faster\n";
  out << "# ranks hierarchy bucket_mb first_bucket_mb step_ms efficiency config_step_ms config_efficiency gain\n";
  char line[256];
  std::string advice;
  for (int p : ranks) {
    const StepPrediction mine = predict(s, config, config.dist, p);
    DistConfig best = config.dist;
    StepPrediction fastest = mine;
    for (const Hierarchy h : {Hierarchy::kFlat, Hierarchy::kTwoLevel}) {
      if (h == Hierarchy::kTwoLevel && simulated_hierarchy(Hierarchy::kAuto, p, s.f.cluster) != Hierarchy::kTwoLevel)
        continue;  // one host, one rank per host, or uneven hosts: the two-level ring is the flat one or refused
      for (double cap : {0.0, 1.0, 2.0, 4.0, 8.0, 16.0, 25.0, 32.0, 64.0, 128.0, 256.0, 512.0})
        for (double first : {0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0}) {
          if (cap > 0 && first > cap) continue;
          DistConfig d = config.dist;
          d.hierarchy = h;
          d.bucket_mb = cap;
          d.first_bucket_mb = first;
          const StepPrediction st = predict(s, config, d, p);
          if (st.step_s < fastest.step_s * (1 - 1e-9)) fastest = st, best = d;
        }
    }
    // A prediction within half a percent of the config's is no reason to change it.
    if (fastest.step_s > mine.step_s * (1 - kWorthChanging)) fastest = mine, best = config.dist;
    std::snprintf(line, sizeof line, "%7d %9s %9g %15g %7.1f %10.3f %14.1f %17.3f %+5.1f%%\n", p,
                  std::string(name_of(best.hierarchy)).c_str(), best.bucket_mb, best.first_bucket_mb,
                  fastest.step_s * 1e3, fastest.efficiency, mine.step_s * 1e3, mine.efficiency,
                  100 * (mine.step_s / fastest.step_s - 1));
    out << line;
    advice =
        str_cat("# to run ", p, " ranks so: --set dist.hierarchy=", name_of(best.hierarchy),
                " --set dist.bucket_mb=", best.bucket_mb, " --set dist.first_bucket_mb=", best.first_bucket_mb, "\n");
  }
  out << advice;
  return out.str();
}

}  // namespace rt
