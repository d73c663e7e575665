#include "app/config_model.h"

#include "app/finetune.h"
#include "models/registry.h"

namespace rt {

Shape usual_input(const Config& config) {
  Shape input = find_model(config.model.name).default_input;
  if (config.data.image_size > 0) input[1] = input[2] = config.data.image_size;
  return input;
}

std::unique_ptr<Graph> build_config_model(const Config& config, const Shape& sample) {
  const ModelConfig& m = config.model;
  std::unique_ptr<Graph> graph = build_model(m.name, ModelOptions{sample, m.num_classes, m.dropout, m.aux_logits});
  freeze_config_layers(*graph, config.finetune);
  return graph;
}

std::unique_ptr<Graph> plan_config_model_on_cpu(const Config& config, const Shape& sample, int64_t batch, bool training,
                                                Precision precision) {
  std::unique_ptr<Graph> graph = build_config_model(config, sample);
  graph->plan(batch, Device::kCpu, training, {config.train.conv_algorithm, precision});
  return graph;
}

OptimizerOptions optimizer_options(const TrainConfig& t) {
  return OptimizerOptions{t.momentum,          t.nesterov,          t.weight_decay,
                          t.decay_bias_and_bn, t.trust_coefficient, t.lars_epsilon};
}

}  // namespace rt
