// The model a config describes (the [model] keys), built and planned as every command does it:
// the trainer, and the commands that look at a model without training it (info, forward,
// predict, simulate).
#pragma once

#include <cstdint>
#include <memory>

#include "config/config.h"
#include "nn/graph.h"
#include "nn/optim/optimizer.h"

namespace rt {

// One sample's shape (C, H, W) where no data set says: the model table's usual input, with
// data.image_size as its side where that is given.
Shape usual_input(const Config& config);
// model.name with model.num_classes, dropout and aux_logits, for samples of shape `sample`, the
// layers of finetune.freeze frozen (every graph of one config has the same parameter arena).
std::unique_ptr<Graph> build_config_model(const Config& config, const Shape& sample);
// The same, planned on the CPU for `batch` samples with train.conv_algorithm, in float32 or, with
// `precision` bf16, as a bf16 run computes (Note [CPU bfloat16] in nn/cpu_bf16.h).
std::unique_ptr<Graph> plan_config_model_on_cpu(const Config& config, const Shape& sample, int64_t batch, bool training,
                                                Precision precision = Precision::kFp32);

// train.* as make_optimizer reads them.
OptimizerOptions optimizer_options(const TrainConfig& train);

}  // namespace rt
