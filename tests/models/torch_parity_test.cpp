// Model parity against PyTorch, the independent oracle: lenet, simple_cnn and resnet_mini with the
// same weights and batch give the same logits, loss, parameter gradients and batch-norm running
// statistics (after one training forward) as the same torch.nn architectures run in float64 by
// tests/models/torch_reference.py. Skips when /usr/bin/python3 or its torch is unavailable.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <sstream>

#include "app/checkpoint.h"
#include "formats/safetensors.h"
#include "base/rng.h"
#include "models/registry.h"
#include "nn/ops/softmax_cross_entropy.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

using testing::kPython;
using testing::python_unavailable;

constexpr int64_t kBatch = 4, kClasses = 10;

std::vector<double> f64_values(const StTensor& t) {
  std::vector<double> v(t.bytes.size() / sizeof(double));
  std::memcpy(v.data(), t.bytes.data(), v.size() * sizeof(double));
  return v;
}

// Compares `got` (float32, ringtrain) with the float64 reference `name` in `ref`:
// max |got - want| <= rel_tol * max |want| + abs_floor. Also checks the shape.
void expect_close(const std::string& name, const float* got, const Shape& shape, const StFile& ref, double rel_tol,
                  double abs_floor) {
  const StTensor* t = ref.find(name);
  ASSERT_NE(t, nullptr) << "the reference wrote no tensor '" << name << "'";
  ASSERT_EQ(t->dtype, DType::kF64) << name;
  ASSERT_EQ(t->shape, shape) << name << ": reference shape " << shape_str(t->shape) << ", ringtrain "
                             << shape_str(shape);
  const std::vector<double> want = f64_values(*t);
  double max_ref = 0, max_abs = 0;
  int64_t worst = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    max_ref = std::max(max_ref, std::abs(want[i]));
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    if (err > max_abs) max_abs = err, worst = static_cast<int64_t>(i);
  }
  const double tol = rel_tol * max_ref + abs_floor;
  EXPECT_LE(max_abs, tol) << name << " " << shape_str(shape) << ": largest abs error " << max_abs << " at "
                          << index_str(worst, shape) << " (ringtrain " << got[worst] << ", torch " << want[worst]
                          << "), relative to max |torch| = " << max_ref << ": " << max_abs / std::max(max_ref, 1e-300)
                          << "; tolerance " << tol;
}

class TorchParity : public ::testing::TestWithParam<std::string> {};

TEST_P(TorchParity, LogitsLossGradientsAndRunningStatsMatchFloat64Torch) {
  const std::string& missing = python_unavailable("torch");
  if (!missing.empty()) GTEST_SKIP() << "no PyTorch oracle: " << missing;
  const std::string model = GetParam();
  ModelOptions options;
  options.input_shape = {1, 28, 28};
  options.num_classes = kClasses;
  options.dropout = 0.0;
  std::unique_ptr<Graph> graph = build_model(model, options);
  graph->plan(kBatch, Device::kCpu);
  graph->init_parameters(7);
  // Move norm parameters off their (1, 0) initial values so the oracle sees them used.
  Rng rng(11, 3);
  for (ParamRef& p : graph->params()) {
    if (p.role == ParamRole::kNormScale)
      for (int64_t i = 0; i < p.value.numel(); ++i) p.value.data()[i] = 0.5f + rng.uniform();
    if (p.role == ParamRole::kNormShift)
      for (int64_t i = 0; i < p.value.numel(); ++i) p.value.data()[i] = rng.uniform() - 0.5f;
  }

  std::vector<float> input(kBatch * 28 * 28);
  for (float& v : input) v = 2 * rng.uniform() - 1;
  std::vector<int32_t> target(kBatch);
  std::vector<int64_t> target64(kBatch);
  for (int64_t i = 0; i < kBatch; ++i) target64[i] = target[i] = static_cast<int32_t>(rng.below(kClasses));

  StFile in = model_state(*graph);
  in.tensors.push_back({"input", make_f32_tensor({kBatch, 1, 28, 28}, input.data())});
  StTensor t64;
  t64.dtype = DType::kI64;
  t64.shape = {kBatch};
  t64.bytes.resize(kBatch * sizeof(int64_t));
  std::memcpy(t64.bytes.data(), target64.data(), t64.bytes.size());
  in.tensors.push_back({"target", t64});

  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("rt_torch_parity_" + std::to_string(getpid()) + "_" + model);
  std::filesystem::create_directories(dir);
  const std::string in_path = (dir / "in.safetensors").string(), out_path = (dir / "out.safetensors").string();
  write_safetensors(in_path, in);
  const std::string cmd = std::string(kPython) + " " + RT_SOURCE_DIR + "/tests/models/torch_reference.py " + model +
                          " " + in_path + " " + out_path;
  ASSERT_EQ(std::system(cmd.c_str()), 0) << "reference failed: " << cmd;
  const StFile ref = read_safetensors(out_path);
  std::filesystem::remove_all(dir);

  RunContext ctx;
  ctx.training = true;
  const Tensor& logits = graph->forward(input.data(), ctx);
  ASSERT_TRUE(logits.is_plain());
  ASSERT_EQ(logits.shape(), (Shape{kBatch, kClasses}));
  Tensor dlogits(logits.spec());
  const LossResult loss = softmax_cross_entropy(logits, target.data(), 0.0, &dlogits);
  graph->backward(dlogits, ctx);

  expect_close("logits", logits.data(), logits.shape(), ref, 1e-5, 0);
  const float loss_f = static_cast<float>(loss.loss);
  expect_close("loss", &loss_f, {}, ref, 1e-5, 0);

  double max_grad = 0;
  for (const ParamRef& p : graph->params())
    if (const StTensor* g = ref.find("grad." + p.name))
      for (double v : f64_values(*g)) max_grad = std::max(max_grad, std::abs(v));
  int64_t grads_in_ref = 0;
  for (const auto& [name, t] : ref.tensors) grads_in_ref += name.rfind("grad.", 0) == 0;
  EXPECT_EQ(grads_in_ref, static_cast<int64_t>(graph->params().size()))
      << "torch and ringtrain parameter counts differ";
  for (const ParamRef& p : graph->params())
    expect_close("grad." + p.name, p.grad.data(), p.grad.shape(), ref, 1e-4, 1e-6 * max_grad);

  for (const BufferRef& b : graph->buffers()) expect_close(b.name, b.value.data(), b.value.shape(), ref, 1e-5, 1e-7);
  for (const CounterRef& c : graph->counters()) {
    const float v = static_cast<float>(*c.value);
    expect_close(c.name, &v, {}, ref, 0, 0);
  }
}

INSTANTIATE_TEST_SUITE_P(Models, TorchParity, ::testing::Values("lenet", "simple_cnn", "resnet_mini"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace rt
