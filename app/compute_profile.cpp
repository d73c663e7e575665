#include "app/compute_profile.h"

#include <map>

#include "base/check.h"

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
  for (const ParamRef& param : graph.trainable_params()) {
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

}  // namespace rt
