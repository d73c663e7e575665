#include "models/registry.h"

#include "base/check.h"
#include "models/teaching.h"

namespace rt {

const std::vector<ModelEntry>& model_table() {
  static const std::vector<ModelEntry> table{
      {"lenet", "LeNet-5 with ReLU and max pooling (61k parameters at 28x28)", build_lenet},
      {"simple_cnn", "two conv+BN blocks and a dropout fc layer", build_simple_cnn},
      {"resnet_mini", "residual network with three basic-block stages (16/32/64)", build_resnet_mini},
  };
  return table;
}

std::unique_ptr<Graph> build_model(const std::string& name, const ModelOptions& options) {
  std::string names;
  for (const ModelEntry& e : model_table()) {
    if (e.name == name) return e.build(options);
    names += str_cat(names.empty() ? "" : ", ", e.name);
  }
  RT_CHECK(false, "unknown model '", name, "': valid models are ", names);
  return nullptr;
}

}  // namespace rt
