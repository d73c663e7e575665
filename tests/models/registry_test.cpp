// The model table: unknown names are an error listing the valid ones; parameter counts equal the
// closed forms worked out by hand below; parameter and state-dict names are unique. That the names
// are the ones torch expects is checked by the strict load in torch_parity_test.cpp.
#include <gtest/gtest.h>

#include <set>

#include "app/checkpoint.h"
#include "base/check.h"
#include "models/registry.h"

namespace rt {
namespace {

std::unique_ptr<Graph> planned(const std::string& name) {
  std::unique_ptr<Graph> g = build_model(name, ModelOptions{});
  g->plan(2, Device::kCpu);
  return g;
}

TEST(ModelRegistry, UnknownNameIsAnErrorListingEveryValidName) {
  try {
    build_model("lenet7", ModelOptions{});
    FAIL() << "build_model accepted an unknown name";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("lenet7"), std::string::npos) << msg;
    for (const ModelEntry& m : model_table()) EXPECT_NE(msg.find(m.name), std::string::npos) << msg;
  }
}

TEST(ModelRegistry, TableListsTheThreeTeachingModels) {
  std::set<std::string> names;
  for (const ModelEntry& m : model_table()) names.insert(std::string(m.name));
  EXPECT_TRUE(names.count("lenet") && names.count("simple_cnn") && names.count("resnet_mini"));
}

TEST(ModelRegistry, ParameterCountsMatchClosedFormsAt28x28With10Classes) {
  // lenet: conv 1->6 5x5 + bias: 6*25 + 6 = 156; conv 6->16 5x5 + bias: 16*6*25 + 16 = 2416;
  // after two pools the map is 16x5x5 = 400: fc 400->120: 48000 + 120 = 48120;
  // fc 120->84: 10080 + 84 = 10164; fc 84->10: 840 + 10 = 850. Total 61706.
  EXPECT_EQ(planned("lenet")->parameter_count(), 156 + 2416 + 48120 + 10164 + 850);
  EXPECT_EQ(planned("lenet")->parameter_count(), 61706);
  // simple_cnn: conv 1->32 3x3 no bias: 288; bn 32: 64; conv 32->64 3x3: 18432; bn 64: 128;
  // fc 64*7*7 = 3136 -> 128: 401408 + 128 = 401536; fc 128->10: 1290. Total 421738.
  EXPECT_EQ(planned("simple_cnn")->parameter_count(), 288 + 64 + 18432 + 128 + 401536 + 1290);
  // resnet_mini: stem conv 1->16 3x3: 144, bn 32;
  // layer1.0: 2 x conv 16->16 3x3 (2304 each), 2 x bn 16 (32 each): 4672;
  // layer2.0: conv 16->32 3x3 4608, conv 32->32 3x3 9216, 2 x bn 32 (64 each), downsample 1x1 16->32 512 + bn 64: 14528;
  // layer3.0: conv 32->64 3x3 18432, conv 64->64 3x3 36864, 2 x bn 64 (128 each), downsample 2048 + bn 128: 57728;
  // fc 64->10: 650. Total 77754.
  EXPECT_EQ(planned("resnet_mini")->parameter_count(), 144 + 32 + 4672 + 14528 + 57728 + 650);
}

TEST(ModelRegistry, LenetParameterNamesAreTorchvisionStyle) {
  const std::unique_ptr<Graph> g = planned("lenet");
  std::set<std::string> names;
  for (const ParamRef& p : g->params()) names.insert(p.name);
  const std::set<std::string> want{
      "features.0.weight", "features.0.bias",     "features.3.weight", "features.3.bias",     "classifier.0.weight",
      "classifier.0.bias", "classifier.2.weight", "classifier.2.bias", "classifier.4.weight", "classifier.4.bias"};
  EXPECT_EQ(names, want);
}

// The paper's models (which need larger inputs) get the same check in architecture_test.cpp.
TEST(ModelRegistry, EveryTeachingModelHasUniqueParameterAndStateDictNames) {
  for (const char* name : {"lenet", "simple_cnn", "resnet_mini"}) {
    const ModelEntry m{name, "", nullptr};
    std::unique_ptr<Graph> g = planned(std::string(m.name));
    std::set<std::string> params;
    for (const ParamRef& p : g->params()) EXPECT_TRUE(params.insert(p.name).second) << m.name << ": " << p.name;
    std::set<std::string> keys;
    const StFile state = model_state(*g);
    for (const auto& [name, t] : state.tensors) EXPECT_TRUE(keys.insert(name).second) << m.name << ": " << name;
    for (const std::string& p : params) EXPECT_TRUE(keys.count(p)) << m.name << ": " << p << " not in the state dict";
  }
}

}  // namespace
}  // namespace rt
