// What the GPU parity suites share: the fixture that skips without a GPU, random inputs on both
// devices, the relative error they are judged by, and one training step of a model.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/rng.h"
#include "models/registry.h"
#include "nn/graph_loss.h"
#include "nn/ops/conv2d.h"
#include "nn/ops/pool2d.h"
#include "nn/ops/reorder.h"
#include "nn/optim/sgd.h"

namespace rt::testing {

constexpr Device kCpu = Device::kCpu, kGpu = Device::kCuda;

// Float32 on both sides: only the order of summation differs.
constexpr double kFp32 = 1e-5;
// TF32 keeps 10 mantissa bits of each product's inputs: relative errors near 2^-11 per product.
constexpr double kTf32 = 5e-3;

class GpuParity : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_usable(&why)) GTEST_SKIP() << "no usable GPU, so the GPU parity suite skips: " << why;
  }
};

// What the GPU side of a parity check is planned with: fp32 and the legacy cuDNN API unless a test asks.
constexpr PlanContext kFp32Plan{};
constexpr PlanContext kTf32Plan{.precision = Precision::kTf32};

struct Both {
  Tensor cpu, gpu;
};

inline Both random_both(const Shape& shape, uint64_t seed, float scale = 1.0f) {
  Tensor t(plain_spec(shape));
  Rng rng(seed, 3);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = static_cast<float>(rng.normal()) * scale;
  return {t, to_device(t, kGpu)};
}

// `plain` (CPU) in the layout `spec` that a CPU op planned.
inline Tensor in_layout(const Tensor& plain, const TensorSpec& spec) {
  if (spec.is_plain()) return plain;
  Tensor t(spec);
  reorder(plain, t);
  return t;
}

inline std::vector<float> host_values(const Tensor& t) {
  const Tensor plain = t.device() == kCpu ? to_plain(t) : to_device(to_plain(t), kCpu);
  return {plain.data(), plain.data() + plain.numel()};
}

// ||gpu - cpu|| / ||cpu||; infinite if anything is not finite.
inline double rel_error(const std::vector<float>& cpu, const std::vector<float>& gpu) {
  EXPECT_EQ(cpu.size(), gpu.size());
  double diff = 0, norm = 0;
  for (size_t i = 0; i < cpu.size() && i < gpu.size(); ++i) {
    if (!std::isfinite(gpu[i]) || !std::isfinite(cpu[i])) return INFINITY;
    diff += (double{gpu[i]} - cpu[i]) * (double{gpu[i]} - cpu[i]);
    norm += double{cpu[i]} * cpu[i];
  }
  return norm == 0 ? std::sqrt(diff) : std::sqrt(diff / norm);
}
inline double rel_error(const Tensor& cpu, const Tensor& gpu) { return rel_error(host_values(cpu), host_values(gpu)); }

#define EXPECT_PARITY(cpu, gpu, tol) EXPECT_LE(rel_error(cpu, gpu), tol) << "comparing " #cpu " with " #gpu

inline std::vector<float> arena_values(const float* arena, int64_t floats, Device device) {
  std::vector<float> v(static_cast<size_t>(floats));
  copy_bytes(v.data(), kCpu, arena, device, v.size() * sizeof(float));
  return v;
}

// The convolutions every precision is checked on: bias, the ResNet stem, a strided 1x1, an
// asymmetric kernel, grouped and dilated.
// VGG-16's max pooling, 2x2 with stride 2: disjoint windows.
inline Pool2dGeometry max_pool_2x2() {
  Pool2dGeometry g;
  g.kind = PoolKind::kMax;
  g.kernel_h = g.kernel_w = 2;
  g.stride_h = g.stride_w = 2;
  return g;
}

inline std::vector<std::pair<Conv2dGeometry, Shape>> conv_cases() {
  std::vector<std::pair<Conv2dGeometry, Shape>> cases;
  Conv2dGeometry g = Conv2dGeometry::square(16, 32, 3, 1, 1);
  g.bias = true;
  cases.push_back({g, {4, 16, 14, 14}});                                      // 3x3, bias
  cases.push_back({Conv2dGeometry::square(3, 64, 7, 2, 3), {2, 3, 32, 32}});  // the ResNet stem
  cases.push_back({Conv2dGeometry::square(32, 64, 1, 2, 0), {4, 32, 9, 9}});  // strided 1x1 shortcut
  Conv2dGeometry asym = Conv2dGeometry::square(24, 16, 1);                    // Inception's 1x7
  asym.kernel_w = 7, asym.pad_w = 3;
  cases.push_back({asym, {2, 24, 11, 11}});
  Conv2dGeometry grouped = Conv2dGeometry::square(16, 32, 3, 1, 2);
  grouped.groups = 4, grouped.dilation_h = grouped.dilation_w = 2;
  cases.push_back({grouped, {2, 16, 12, 12}});
  return cases;
}

struct StepResult {
  double loss = 0;
  std::vector<float> grads, params;  // the arenas after backward, and after one SGD step
  std::vector<ParamRef> refs;
};

// Where a model step starts besides its seed-99 weights: whether Inception-v3 has its auxiliary
// classifier, a rounding applied to every parameter (to measure a step's sensitivity to it), and
// the GPU's precision.
struct StepStart {
  bool aux_logits = true;
  float (*round)(float) = nullptr;
  Precision precision = Precision::kFp32;
};

inline std::unique_ptr<Graph> step_graph(const std::string& name, const Shape& input, int64_t batch, double dropout,
                                         Device device, const StepStart& start) {
  ModelOptions o;
  o.input_shape = input;
  o.num_classes = 10;
  o.dropout = dropout;
  o.aux_logits = start.aux_logits;
  std::unique_ptr<Graph> g = build_model(name, o);
  g->plan(batch, device, /*training=*/true, {.precision = start.precision});
  g->init_parameters(99);
  if (start.round) {
    std::vector<float> p = arena_values(g->param_arena(), g->arena_floats(), device);
    for (float& v : p) v = start.round(v);
    copy_bytes(g->param_arena(), device, p.data(), kCpu, p.size() * sizeof(float));
  }
  return g;
}

inline Tensor step_images(const Shape& input, int64_t batch) {
  Tensor images(plain_spec({batch, input[0], input[1], input[2]}));
  Rng rng(70, 3);
  for (int64_t i = 0; i < images.numel(); ++i) images.data()[i] = static_cast<float>(rng.normal());
  return images;
}

// One step of `name` on `device` from seed-99 weights and a fixed batch. training = false runs
// batch norm on its running statistics (forward and backward), as a frozen-BN fine-tune does.
// With loss_scale, backward runs on the scaled loss and the update divides it out, as fp16 training
// does; the gradients returned are unscaled.
inline StepResult model_step(const std::string& name, const Shape& input, int64_t batch, double dropout, Device device,
                             bool training, double loss_scale = 1, const StepStart& start = {}) {
  std::unique_ptr<Graph> g = step_graph(name, input, batch, dropout, device, start);
  const Tensor images = step_images(input, batch);
  std::vector<int32_t> targets(static_cast<size_t>(batch));
  for (int64_t n = 0; n < batch; ++n) targets[n] = static_cast<int32_t>(n % 10);
  const RunContext ctx{training, 5, 3};
  g->forward(images.data(), ctx);
  OutputGradients dy(*g);
  StepResult r;
  r.loss = graph_loss(*g, targets.data(), 0.0, &dy, nullptr, loss_scale).loss;
  const std::vector<const Tensor*> views = dy.views();
  g->backward(views, ctx);
  r.grads = arena_values(g->grad_arena(), g->arena_floats(), device);
  for (float& x : r.grads) x = static_cast<float>(x / loss_scale);
  Sgd sgd(*g, SgdOptions{0.9, false, 1e-4, false});
  sgd.step(0.01, 1 / loss_scale);
  r.params = arena_values(g->param_arena(), g->arena_floats(), device);
  r.refs = g->params();
  return r;
}

// The parameter whose gradient differs most, for messages.
inline std::string worst_gradient(const StepResult& cpu, const StepResult& gpu) {
  double worst = -1;
  std::string name;
  for (const ParamRef& p : cpu.refs) {
    const auto slice = [&](const std::vector<float>& v) {
      return std::vector<float>(v.begin() + p.offset, v.begin() + p.offset + p.value.numel());
    };
    const double e = rel_error(slice(cpu.grads), slice(gpu.grads));
    if (e > worst) worst = e, name = p.name;
  }
  return str_cat(name, " (", worst, ")");
}

}  // namespace rt::testing
