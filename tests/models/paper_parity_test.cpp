// The paper's models against torchvision itself: tests/models/torchvision_oracle.py builds each
// model in torchvision, saves its weights and a batch, and computes one training-mode step in
// float64; `ringtrain forward --backward` runs the same step from those files. ringtrain's error
// against float64 must be no larger than 5x float32 PyTorch's own (the larger of its NCHW and
// channels_last errors), per tensor, plus a floor of 1e-6 x the largest gradient norm for
// gradients (some are exactly zero in exact arithmetic) or 1e-6 x the tensor's largest value for
// the rest. Under bf16 (Note [CPU bfloat16] in nn/cpu_bf16.h) the same against PyTorch's bf16 CPU
// autocast's own errors, which bf16's rounding sets, for a convolution stack (lenet), residual
// blocks (resnet_mini) and the three models at small sizes; through oneDNN's emulation on AVX-512
// without bf16 units (skipped below AVX-512). Skips where /usr/bin/python3 lacks torch or
// torchvision.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <ostream>

#include "formats/safetensors.h"
#include "nn/cpu_bf16.h"
#include "nn/tensor.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

using testing::kPython;
using testing::python_unavailable;

constexpr double kBudgetFactor = 5.0, kFloor = 1e-6;

std::vector<double> as_f64(const StTensor& t) {
  std::vector<double> v;
  if (t.dtype == DType::kF64) {
    v.resize(t.bytes.size() / 8);
    std::memcpy(v.data(), t.bytes.data(), t.bytes.size());
  } else if (t.dtype == DType::kI64) {
    for (size_t i = 0; i < t.bytes.size() / 8; ++i) {
      int64_t x;
      std::memcpy(&x, t.bytes.data() + 8 * i, 8);
      v.push_back(static_cast<double>(x));
    }
  } else {
    for (float f : as_f32(t, "ringtrain output")) v.push_back(f);
  }
  return v;
}

struct Case {
  const char* model;
  int64_t batch, res;
  bool bf16 = false;
};
void PrintTo(const Case& c, std::ostream* os) {
  *os << c.model << " at batch " << c.batch << ", " << c.res << "x" << c.res << (c.bf16 ? " in bf16" : "");
}

// The models of tests/models/torch_reference.py: one channel, 10 classes.
bool small_model(const std::string& model) {
  return model == "lenet" || model == "simple_cnn" || model == "resnet_mini";
}

class PaperParity : public ::testing::TestWithParam<Case> {};

TEST_P(PaperParity, LogitsLossGradientsAndRunningStatsAreWithinFiveTimesTorchsOwnError) {
  const std::string& missing = python_unavailable("torch, torchvision");
  if (!missing.empty()) GTEST_SKIP() << "no torchvision oracle: " << missing;
  const Case c = GetParam();
  if (c.bf16 && !cpu_bf16().runs)
    GTEST_SKIP() << "oneDNN 2.6 has no bf16 kernels on " << cpu_bf16().isa << " (it needs AVX-512)";
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() /
      ("rt_paper_parity_" + std::to_string(getpid()) + "_" + c.model + (c.bf16 ? "_bf16" : ""));
  std::filesystem::create_directories(dir);
  const std::string d = dir.string();
  const std::string oracle = std::string(kPython) + " " + RT_SOURCE_DIR + "/tests/models/torchvision_oracle.py " +
                             c.model + " " + std::to_string(c.batch) + " " + std::to_string(c.res) + " " + d +
                             (c.bf16 ? " bf16" : "");
  ASSERT_EQ(std::system(oracle.c_str()), 0) << "oracle failed: " << oracle;
  const std::string forward = std::string(RT_BINARY_DIR) + "/ringtrain forward --model " + c.model + " --weights " + d +
                              "/weights.safetensors --batch " + d + "/batch.safetensors --out " + d +
                              "/out.safetensors --backward" +
                              (small_model(c.model) ? " --set model.num_classes=10" : "") +
                              (c.bf16 ? " --set train.precision=bf16 --set train.bf16_emulation=true" : "");
  ASSERT_EQ(std::system(forward.c_str()), 0) << "ringtrain failed: " << forward;
  const StFile ref = read_safetensors(d + "/reference.safetensors");
  const StFile got = read_safetensors(d + "/out.safetensors");
  std::filesystem::remove_all(dir);

  double max_grad_norm = 0;
  for (const auto& [name, t] : ref.tensors) {
    if (name.rfind("grad.", 0) != 0) continue;
    double sq = 0;
    for (double v : as_f64(t)) sq += v * v;
    max_grad_norm = std::max(max_grad_norm, std::sqrt(sq));
  }
  ASSERT_GT(max_grad_norm, 0) << "the reference holds no gradients";

  int64_t compared = 0;
  double worst_ratio = 0, worst_rel = 0;
  std::string worst_name, worst_rel_name;
  for (const auto& [name, want_t] : ref.tensors) {
    if (name.rfind("budget.", 0) == 0) continue;
    const StTensor* budget_t = ref.find("budget." + name);
    ASSERT_NE(budget_t, nullptr) << "the reference has no budget for " << name;
    const StTensor* got_t = got.find(name);
    ASSERT_NE(got_t, nullptr) << "ringtrain wrote no '" << name << "'";
    ASSERT_EQ(got_t->shape, want_t.shape) << name;
    const std::vector<double> want = as_f64(want_t), have = as_f64(*got_t);
    double max_ref = 0, max_err = 0;
    size_t at = 0;
    for (size_t i = 0; i < want.size(); ++i) {
      max_ref = std::max(max_ref, std::abs(want[i]));
      const double err = std::abs(have[i] - want[i]);
      if (!(err <= max_err)) max_err = err, at = i;  // NaN counts as worst
    }
    const double budget = as_f64(*budget_t)[0];
    const bool is_grad = name.rfind("grad.", 0) == 0;
    const double tol = kBudgetFactor * budget + kFloor * (is_grad ? max_grad_norm : max_ref);
    EXPECT_LE(max_err, tol) << c.model << " " << name << " " << shape_str(want_t.shape) << ": largest error " << max_err
                            << " at " << index_str(static_cast<int64_t>(at), want_t.shape) << " (ringtrain " << have[at]
                            << ", float64 torch " << want[at] << "); " << (c.bf16 ? "bf16 autocast" : "float32")
                            << " torch's error " << budget << ", tolerance " << tol;
    const double ratio = max_err / tol;
    if (ratio > worst_ratio) worst_ratio = ratio, worst_name = name;
    // Relative error only where the tensor is not zero in exact arithmetic (bias before batch norm).
    const double rel = max_err / std::max(max_ref, 1e-300);
    if (rel > worst_rel && max_ref > 1e3 * kFloor * (is_grad ? max_grad_norm : max_ref))
      worst_rel = rel, worst_rel_name = name;
    ++compared;
  }
  EXPECT_GT(compared, 3);
  // The two figures printed per model: how close the worst tensor came to its tolerance, and the
  // largest error relative to the tensor's own scale.
  std::printf("%s%s: %lld tensors compared; worst error / tolerance %.3f (%s); worst error / max|ref| %.2e (%s)\n",
              c.model, c.bf16 ? " (bf16)" : "", static_cast<long long>(compared), worst_ratio, worst_name.c_str(),
              worst_rel, worst_rel_name.c_str());
}

INSTANTIATE_TEST_SUITE_P(Torchvision, PaperParity,
                         ::testing::Values(Case{"resnet101", 4, 112}, Case{"vgg16", 2, 64}, Case{"vgg16_bn", 2, 64},
                                           Case{"inception_v3", 2, 299}),
                         [](const auto& info) { return std::string(info.param.model); });
INSTANTIATE_TEST_SUITE_P(Bf16, PaperParity,
                         ::testing::Values(Case{"lenet", 4, 28, true}, Case{"resnet_mini", 4, 28, true},
                                           Case{"resnet101", 2, 64, true}, Case{"vgg16", 2, 32, true},
                                           Case{"inception_v3", 2, 299, true}),
                         [](const auto& info) { return std::string(info.param.model); });

}  // namespace
}  // namespace rt
