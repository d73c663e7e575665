#include "models/registry.h"

#include "base/check.h"
#include "models/paper_models.h"
#include "models/teaching.h"

namespace rt {

const std::vector<ModelEntry>& model_table() {
  static const std::vector<ModelEntry> table{
      {"lenet", "LeNet-5 with ReLU and max pooling (61k parameters at 28x28)", build_lenet, {1, 28, 28}, 10},
      {"simple_cnn", "two conv+BN blocks and a dropout fc layer", build_simple_cnn, {1, 28, 28}, 10},
      {"resnet_mini", "residual network with three basic-block stages (16/32/64)", build_resnet_mini, {1, 28, 28}, 10},
      {"resnet18", "ResNet-18 (torchvision; basic blocks 2-2-2-2)", build_resnet18},
      {"resnet34", "ResNet-34 (torchvision; basic blocks 3-4-6-3)", build_resnet34},
      {"resnet50", "ResNet-50 v1.5 (torchvision; bottlenecks 3-4-6-3)", build_resnet50},
      {"resnet101", "ResNet-101 v1.5 (torchvision; bottlenecks 3-4-23-3)", build_resnet101},
      {"resnet152", "ResNet-152 v1.5 (torchvision; bottlenecks 3-8-36-3)", build_resnet152},
      {"vgg11", "VGG-11 (torchvision, configuration A)", build_vgg11},
      {"vgg11_bn", "VGG-11 with batch norm", build_vgg11_bn},
      {"vgg13", "VGG-13 (torchvision, configuration B)", build_vgg13},
      {"vgg13_bn", "VGG-13 with batch norm", build_vgg13_bn},
      {"vgg16", "VGG-16 (torchvision, configuration D)", build_vgg16},
      {"vgg16_bn", "VGG-16 with batch norm", build_vgg16_bn},
      {"vgg19", "VGG-19 (torchvision, configuration E)", build_vgg19},
      {"vgg19_bn", "VGG-19 with batch norm", build_vgg19_bn},
      {"inception_v3",
       "Inception-v3 (torchvision; aux head per model.aux_logits; inputs >= 75x75, >= 299x299 with aux)",
       build_inception_v3,
       {3, 299, 299}},
  };
  return table;
}

const ModelEntry& find_model(const std::string& name) {
  std::string names;
  for (const ModelEntry& e : model_table()) {
    if (e.name == name) return e;
    names += str_cat(names.empty() ? "" : ", ", e.name);
  }
  throw ConfigError(str_cat("unknown model '", name, "': valid models are ", names));
}

std::unique_ptr<Graph> build_model(const std::string& name, const ModelOptions& options) {
  return find_model(name).build(options);
}

}  // namespace rt
