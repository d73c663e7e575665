#include "tools/simulate.h"

#include <cstdio>
#include <map>
#include <sstream>

#include "app/gradient_buckets.h"
#include "base/check.h"
#include "dist/wire_format.h"
#include "models/registry.h"

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
  Shape input = find_model(config.model.name).default_input;
  if (config.data.image_size > 0) input[1] = input[2] = config.data.image_size;
  const ModelOptions mo{input, config.model.num_classes, config.model.dropout, config.model.aux_logits};
  SimulatedModel m;
  m.graph = build_model(config.model.name, mo);
  m.graph->plan(1, Device::kCpu, /*training=*/true);
  m.gradients = plan_gradient_buckets(*m.graph, config.dist);
  return m;
}

std::string simulate_report(const Config& config, const std::vector<int>& ranks, const std::string& network_path,
                            double cycle_s, const std::string& profile_path) {
  ClusterFile f = load_cluster_file(network_path, config.model.name, profile_path.empty());
  f.cluster.cycle_s = cycle_s;
  const SimulatedModel m = plan_model_for_simulation(config);
  const GradientBuckets& g = m.gradients;
  ComputeProfile profile;
  if (profile_path.empty()) {
    profile = profile_from_multiply_adds(*m.graph, static_cast<double>(f.batch_per_rank) / f.images_per_s);
  } else {
    const StepProfile measured = read_step_profile(profile_path);
    RT_CHECK(measured.model == config.model.name, profile_path, " profiles ", measured.model,
             ", the config's model is ", config.model.name);
    profile = profile_from_measurement(*m.graph, measured, profile_path);
    f.batch_per_rank = measured.batch_per_rank;
    f.images_per_s = static_cast<double>(measured.batch_per_rank) / measured.step_s();
  }
  const double element_bytes = static_cast<double>(wire_bytes(parse_wire(config.dist.wire)));
  const ClusterModel& c = f.cluster;

  std::ostringstream out;
  char line[256];
  const int64_t K = config.train.accumulate_steps;
  out << "# ringtrain simulate: " << config.model.name << ", " << f.batch_per_rank << " images per rank"
      << (K > 1 ? str_cat(" x ", K, " micro-batches a step (train.accumulate_steps)") : std::string()) << ", one rank "
      << f.images_per_s << " img/s"
      << (!profile_path.empty() ? str_cat(" (measured per layer: ", profile_path, ")")
          : f.estimate          ? std::string(" (an estimate, not a measurement)")
                                : std::string(""))
      << "\n";
  std::snprintf(line, sizeof line,
                "# cluster %s: %d ranks per host; inside a host %.0f Gbit/s, %.1f us; between hosts %.0f Gbit/s, "
                "%.1f us (%.0f%% of each link's bandwidth); %s\n",
                network_path.c_str(), c.ranks_per_host, c.intra_host.bytes_per_s * 8 / 1e9 / f.bandwidth_efficiency,
                c.intra_host.latency_s * 1e6, c.inter_host.bytes_per_s * 8 / 1e9 / f.bandwidth_efficiency,
                c.inter_host.latency_s * 1e6, 100 * f.bandwidth_efficiency,
                cycle_s > 0 ? str_cat("collectives start every ", cycle_s * 1e3, " ms (Horovod's cycle)").c_str()
                            : "each bucket starts when ready (ringtrain)");
  out << line;
  std::snprintf(line, sizeof line,
                "# %zu buckets (dist.first_bucket_mb = %g, dist.bucket_mb = %g), %s backward, %s on the wire, "
                "%.1f MB of gradients\n",
                g.buckets.size(), config.dist.first_bucket_mb, config.dist.bucket_mb,
                config.dist.overlap ? "overlapped with" : "after", config.dist.wire.c_str(),
                static_cast<double>(g.params.empty() ? 0 : g.params.back().offset + g.params.back().count) * 4 / 1e6);
  out << line;
  out << "# ranks hosts step_ms compute_ms comm_busy_ms exposed_ms images_per_s speedup efficiency\n";
  for (int p : ranks) {
    const StepPrediction s = with_accumulation(
        simulate_step(profile, g.params, g.buckets, p, config.dist.overlap, c, element_bytes), profile, K);
    const double images = static_cast<double>(p * f.batch_per_rank * K) / s.step_s;
    std::snprintf(line, sizeof line, "%7d %5d %8.1f %10.1f %12.1f %10.1f %12.3f %7.1f %9.3f\n", p,
                  (p + c.ranks_per_host - 1) / c.ranks_per_host, s.step_s * 1e3, s.compute_s * 1e3, s.comm_busy_s * 1e3,
                  s.exposed_comm_s * 1e3, images, images / f.images_per_s, s.efficiency);
    out << line;
  }
  return out.str();
}

}  // namespace rt
