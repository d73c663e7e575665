#include "app/finetune.h"

#include <algorithm>
#include <cstdio>

#include "base/check.h"

namespace rt {

std::vector<std::string> name_list(const std::string& comma_separated) {
  std::vector<std::string> names;
  size_t at = 0;
  while (at <= comma_separated.size()) {
    size_t end = comma_separated.find(',', at);
    if (end == std::string::npos) end = comma_separated.size();
    std::string name = comma_separated.substr(at, end - at);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    if (!name.empty()) names.push_back(std::move(name));
    at = end + 1;
  }
  return names;
}

void freeze_config_layers(Graph& graph, const FinetuneConfig& finetune) {
  const std::vector<std::string> prefixes = name_list(finetune.freeze);
  if (prefixes.empty()) return;
  try {
    graph.freeze(prefixes, finetune.frozen_bn_training);
  } catch (const Error& e) {
    throw Error(str_cat("finetune.freeze: ", e.what()));
  }
}

void scale_head_rate(Graph& graph, double scale) {
  for (const std::string& head : graph.head_layers())
    for (ParamRef& p : graph.params())
      if (name_under(p.name, head)) p.lr_scale = scale;
}

std::string trainable_summary(const Graph& graph, const FinetuneConfig& finetune) {
  if (graph.trainable_count() == graph.params().size()) return "";
  int64_t trained = 0;
  for (const ParamRef& p : graph.trainable_params()) trained += p.value.numel();
  std::string frozen;
  for (const std::string& n : name_list(finetune.freeze)) frozen += (frozen.empty() ? "" : ", ") + n;
  char mb[128];
  std::snprintf(mb, sizeof mb, "%lld gradient floats (%.3g MB) instead of %lld (%.3g MB)",
                static_cast<long long>(graph.grad_floats()), 4e-6 * static_cast<double>(graph.grad_floats()),
                static_cast<long long>(graph.arena_floats()), 4e-6 * static_cast<double>(graph.arena_floats()));
  return str_cat(trained, " of ", graph.parameter_count(), " parameters in ", graph.trainable_count(), " of ",
                 graph.params().size(), " tensors train (frozen: ", frozen,
                 finetune.frozen_bn_training ? "; their batch norm still trains its statistics" : "",
                 "); a step averages ", mb);
}

}  // namespace rt
