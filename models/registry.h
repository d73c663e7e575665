// The model table: every architecture ringtrain can build, by name, in one explicit list
// (no static-initialiser registration). Unknown names are an error that lists the valid ones.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "nn/graph.h"

namespace rt {

struct ModelOptions {
  Shape input_shape = {1, 28, 28};  // one sample: (C, H, W)
  int64_t num_classes = 10;
  double dropout = 0.0;
  bool aux_logits = true;  // Inception-v3's auxiliary classifier (torchvision's default); others have none
};

struct ModelEntry {
  std::string_view name;
  std::string_view description;
  std::unique_ptr<Graph> (*build)(const ModelOptions&);
  Shape default_input = {3, 224, 224};  // (C, H, W) the model is usually trained at
  int64_t default_classes = 1000;
};

// The table's entry for `name`; rt::Error listing the valid names if there is none.
const ModelEntry& find_model(const std::string& name);

const std::vector<ModelEntry>& model_table();
// rt::Error naming the unknown model and listing the table's names.
std::unique_ptr<Graph> build_model(const std::string& name, const ModelOptions& options);

}  // namespace rt
