// The paper's architectures: ResNet-50/101, VGG-16 and Inception-v3 have the parameter counts and
// forward multiply-adds torchvision publishes in its model documentation; every ResNet, VGG and
// Inception-v3 (with and without its aux head) in the table has exactly torchvision 0.14's
// parameter count and state_dict keys, asked of /usr/bin/python3's torchvision where it imports
// (skipped otherwise).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "base/check.h"
#include "models/registry.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

using testing::kPython;
using testing::python_unavailable;

// "inception_v3_noaux" in these tests is inception_v3 with model.aux_logits = false.
std::unique_ptr<Graph> planned(std::string name, int64_t size) {
  ModelOptions o;
  if (name == "inception_v3_noaux") name = "inception_v3", o.aux_logits = false;
  o.input_shape = {3, size, size};
  o.num_classes = 1000;
  o.dropout = 0.5;
  std::unique_ptr<Graph> g = build_model(name, o);
  g->plan(1, Device::kCpu);
  return g;
}

int64_t input_size(const std::string& name) { return name.rfind("inception_v3", 0) == 0 ? 299 : 224; }

int64_t total_macs(const Graph& g) {
  int64_t macs = 0;
  for (const LayerRow& r : g.layer_table()) macs += r.macs;
  return macs;
}

struct Published {
  const char* model;
  int64_t params;
  double gmacs;  // forward, per image, at input_size()
};

class PublishedFigures : public ::testing::TestWithParam<Published> {};

TEST_P(PublishedFigures, ParameterCountIsExactAndMultiplyAddsAreWithinOnePercent) {
  const Published& want = GetParam();
  const std::unique_ptr<Graph> g = planned(want.model, input_size(want.model));
  EXPECT_EQ(g->parameter_count(), want.params) << want.model;
  int64_t table_params = 0;
  for (const LayerRow& r : g->layer_table()) table_params += r.params;
  EXPECT_EQ(table_params, g->parameter_count()) << "layer_table() rows do not add up to the parameter count";
  const double gmacs = static_cast<double>(total_macs(*g)) / 1e9;
  EXPECT_NEAR(gmacs, want.gmacs, 0.01 * want.gmacs) << want.model << ": " << gmacs << " GMACs per image";
  std::printf("%s: %lld parameters, %.3f GMACs per image\n", want.model, static_cast<long long>(g->parameter_count()),
              gmacs);
}

INSTANTIATE_TEST_SUITE_P(ReferenceTable, PublishedFigures,
                         ::testing::Values(Published{"resnet101", 44549160, 7.80}, Published{"vgg16", 138357544, 15.47},
                                           Published{"inception_v3", 27161264, 5.71},
                                           Published{"inception_v3_noaux", 23834568, 5.71},
                                           Published{"resnet50", 25557032, 4.09}),
                         [](const auto& info) { return std::string(info.param.model); });

TEST(PaperModels, LayerTableRowsCarryOutputShapesParametersAndClosedFormMultiplyAdds) {
  const std::unique_ptr<Graph> g = planned("resnet50", 224);
  const std::vector<LayerRow> rows = g->layer_table();
  ASSERT_FALSE(rows.empty());
  const LayerRow& stem = rows.front();  // 7x7 stride 2: 64 x 112 x 112 outputs, 3 x 7 x 7 each
  EXPECT_EQ(stem.name, "conv1");
  EXPECT_EQ(stem.kind, "conv2d");
  EXPECT_EQ(stem.output, (Shape{1, 64, 112, 112}));
  EXPECT_EQ(stem.params, 64 * 3 * 7 * 7);
  EXPECT_EQ(stem.macs, int64_t{64} * 112 * 112 * 3 * 7 * 7);
  const LayerRow& fc = rows.back();
  EXPECT_EQ(fc.name, "fc");
  EXPECT_EQ(fc.output, (Shape{1, 1000}));
  EXPECT_EQ(fc.params, 2048 * 1000 + 1000);
  EXPECT_EQ(fc.macs, 2048 * 1000);
  for (const LayerRow& r : rows) {
    if (r.kind != "conv2d" && r.kind != "linear") {
      EXPECT_EQ(r.macs, 0) << r.name << " (" << r.kind << ")";
    }
  }
}

TEST(PaperModels, Vgg16RunsOn32x32InputsBecauseAdaptivePoolingReachesSevenBySeven) {
  const std::unique_ptr<Graph> g = planned("vgg16", 32);
  EXPECT_EQ(g->parameter_count(), 138357544);
  EXPECT_EQ(g->output_spec().shape, (Shape{1, 1000}));
  g->init_parameters(3);
  std::vector<float> image(3 * 32 * 32);
  for (size_t i = 0; i < image.size(); ++i) image[i] = std::sin(0.1f * static_cast<float>(i));
  const Tensor& logits = g->forward(image.data(), RunContext{false, 0, 0});
  for (int64_t i = 0; i < logits.numel(); ++i) ASSERT_TRUE(std::isfinite(logits.data()[i])) << "logit " << i;
}

TEST(PaperModels, SmallInputsAreAClearErrorNamingTheMinimum) {
  ModelOptions o;
  // The message of the rt::Error that building throws; "" when it builds.
  const auto error_of = [&o](const Shape& input) {
    o.input_shape = input;
    try {
      build_model("inception_v3", o);
      return std::string();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  const std::string too_small = error_of({3, 74, 299});
  EXPECT_NE(too_small.find("75x75"), std::string::npos) << "74x299: '" << too_small << "'";
  const std::string aux_too_small = error_of({3, 298, 298});
  EXPECT_NE(aux_too_small.find("299x299"), std::string::npos) << "298x298 with the aux head: '" << aux_too_small << "'";
  o.aux_logits = false;
  EXPECT_NO_THROW(build_model("inception_v3", o));
  o.input_shape = {3, 31, 31};
  EXPECT_THROW(build_model("vgg11", o), Error);
}

// torchvision's parameter count and sorted state_dict keys for `model`, one per line after the
// count; "" when torchvision cannot be asked.
std::string torchvision_answer(const std::string& model, std::string* why_not) {
  if (!python_unavailable("torch, torchvision").empty()) {
    *why_not = python_unavailable("torch, torchvision");
    return "";
  }
  const std::string cmd =
      std::string(kPython)
          .append(
              " -c 'import sys, torch, torchvision\n"
              // Initialisation plays no part in counts and names; skipping it saves seconds per VGG.
              "for f in (\"kaiming_normal_\", \"kaiming_uniform_\", \"normal_\", \"uniform_\", \"constant_\", "
              "\"trunc_normal_\"):\n"
              "    setattr(torch.nn.init, f, lambda t, *a, **k: t)\n"
              "name, kw = sys.argv[1], {}\n"
              "if name.startswith(\"inception_v3\"):\n"
              "    kw = dict(aux_logits=not name.endswith(\"_noaux\"), init_weights=False)\n"
              "    name = \"inception_v3\"\n"
              "m = getattr(torchvision.models, name)(weights=None, **kw)\n"
              "print(sum(p.numel() for p in m.parameters()))\n"
              "print(\"\\n\".join(sorted(m.state_dict())))' ")
          .append(model)
          .append(" 2>/dev/null");
  FILE* pipe = popen(cmd.c_str(), "r");
  if (!pipe) {
    *why_not = "popen failed";
    return "";
  }
  std::string out;
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof buf, pipe)) > 0;) out.append(buf, n);
  if (pclose(pipe) != 0 || out.empty()) {
    *why_not = std::string("`import torchvision` or building the model fails in ").append(kPython);
    return "";
  }
  return out;
}

class AgainstTorchvision : public ::testing::TestWithParam<std::string> {};

TEST_P(AgainstTorchvision, ParameterCountAndStateDictKeysAreTorchvisions) {
  const std::string model = GetParam();
  std::string why_not;
  const std::string answer = torchvision_answer(model, &why_not);
  if (answer.empty()) GTEST_SKIP() << "no torchvision oracle: " << why_not;
  std::istringstream lines(answer);
  int64_t want_params = 0;
  lines >> want_params;
  std::set<std::string> want;
  for (std::string key; lines >> key;) want.insert(key);

  const std::unique_ptr<Graph> g = planned(model, input_size(model));
  EXPECT_EQ(g->parameter_count(), want_params) << model;
  std::set<std::string> got;
  size_t entries = 0;
  for (const ParamRef& p : g->params()) got.insert(p.name), ++entries;
  for (const BufferRef& b : g->buffers()) got.insert(b.name), ++entries;
  for (const CounterRef& c : g->counters()) got.insert(c.name), ++entries;
  EXPECT_EQ(entries, got.size()) << model << ": some state-dict name occurs twice";
  for (const std::string& k : want)
    EXPECT_TRUE(got.count(k)) << model << ": torchvision has " << k << ", ringtrain not";
  for (const std::string& k : got)
    EXPECT_TRUE(want.count(k)) << model << ": ringtrain has " << k << ", torchvision not";
}

INSTANTIATE_TEST_SUITE_P(PaperModels, AgainstTorchvision,
                         ::testing::Values("resnet18", "resnet34", "resnet50", "resnet101", "resnet152", "vgg11",
                                           "vgg11_bn", "vgg13", "vgg13_bn", "vgg16", "vgg16_bn", "vgg19", "vgg19_bn",
                                           "inception_v3", "inception_v3_noaux"),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace rt
