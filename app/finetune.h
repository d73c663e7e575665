// What a fine-tune changes in the model a config builds (Note [Fine-tuning] in app/init_weights.h):
// the layers finetune.freeze names, frozen before planning (Note [Frozen layers] in nn/graph.h),
// the classifier's rate, and how both are said.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"
#include "nn/graph.h"

namespace rt {

// "conv1, bn1,layer1" -> {"conv1", "bn1", "layer1"}; empty entries dropped.
std::vector<std::string> name_list(const std::string& comma_separated);
// finetune.freeze on a graph not yet planned; an unknown prefix is an error naming the key.
void freeze_config_layers(Graph& graph, const FinetuneConfig& finetune);
// finetune.head_lr_scale on a planned graph's classifier parameters.
void scale_head_rate(Graph& graph, double scale);
// "23,520,832 of 23,528,522 parameters train (frozen: conv1, bn1, layer1); a step averages
// 94.1 MB of gradients instead of 94.1 MB", or "" where nothing is frozen.
std::string trainable_summary(const Graph& graph, const FinetuneConfig& finetune);

}  // namespace rt
