// The GPU parity suite at bf16 and fp16 (CTest label "gpu"; Note [Mixed precision] in
// nn/ops/cuda/gpu_layout.h): every op that runs in 16 bits against the CPU's float32, one training
// step of each paper model, and short training runs, fp16's with loss scaling. Without a usable
// GPU every test skips, saying why.
//
// Tolerances. The op tests give the CPU exactly the values the GPU holds: inputs (and convolution
// weights) are rounded to the 16-bit type first, so the only differences are the GPU's rounding of
// each output to 16 bits and the order of float32 sums. One rounding to nearest errs by at most
// the unit roundoff u (2^-8 for bf16's 8 significant bits, 2^-11 for fp16's 11), and by about
// 0.4 u in root mean square; each op is held to u in relative L2 error. Ops that only move values
// (ReLU, max pooling's forward, concat, flatten) must be exact. A model step is held to its own
// sensitivity (Note [Sixteen-bit model steps]).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <iostream>
#include <string>
#include <vector>

#include "base/half_float.h"
#include "nn/ops/add.h"
#include "nn/ops/batch_norm.h"
#include "nn/ops/concat.h"
#include "nn/ops/flatten.h"
#include "nn/ops/pool2d.h"
#include "nn/ops/relu.h"
#include "nn/ops/sgd_update.h"
#include "nn/optim/loss_scale.h"
#include "tests/nn/gpu_parity.h"

namespace rt::testing {
namespace {

struct Half {
  Precision precision;
  double u;  // unit roundoff of the 16-bit type
  const char* name;
};
constexpr Half kBf16{Precision::kBf16, 1.0 / 256, "bf16"};
constexpr Half kFp16{Precision::kFp16, 1.0 / 2048, "fp16"};

class GpuMixedPrecision : public GpuParity, public ::testing::WithParamInterface<Half> {
 protected:
  const Half& half() const { return GetParam(); }
};

float round_bf16(float v) { return bf16_to_float(float_to_bf16(v)); }
float round_fp16(float v) { return fp16_to_float(float_to_fp16(v)); }
// The rounding to h's 16-bit type, as a function the model steps can also take (StepStart::round).
auto rounding_of(const Half& h) { return h.precision == Precision::kBf16 ? round_bf16 : round_fp16; }
float round_to(const Half& h, float v) { return rounding_of(h)(v); }

// Random values already rounded to the 16-bit type: on the CPU plain float32; on the GPU in
// `gpu_layout` (16-bit NHWC for activations; plain for weights, which stay float32).
Both random_half(const Half& h, const Shape& shape, uint64_t seed, float scale, const TensorSpec* gpu_layout) {
  Both b = random_both(shape, seed, scale);
  for (int64_t i = 0; i < b.cpu.numel(); ++i) b.cpu.data()[i] = round_to(h, b.cpu.data()[i]);
  b.gpu = to_device(b.cpu, kGpu);
  if (gpu_layout) b.gpu = in_layout(b.gpu, *gpu_layout);
  return b;
}

// What the GPU's ops are planned with at h's precision.
PlanContext plan_of(const Half& h, CudnnGraphUse cudnn_graph = CudnnGraphUse::kNever) {
  return {.precision = h.precision, .cudnn_graph = cudnn_graph};
}

// The 16-bit NHWC spec the GPU's activations of `shape` have at h's precision: what a convolution
// of that output shape plans.
TensorSpec activation_spec(const Half& h, const Shape& shape) {
  const Conv2dGeometry g = Conv2dGeometry::square(shape[1], shape[1], 1);
  return make_conv2d(g, plain_spec(shape, kGpu), false, plan_of(h))->y_spec();
}

TEST_P(GpuMixedPrecision, ConvolutionsWriteSixteenBitNhwc) {
  const TensorSpec s = activation_spec(half(), {2, 8, 5, 5});
  EXPECT_EQ(s.bytes(), size_t{2 * 8 * 5 * 5 * 2});
  EXPECT_NE(s.describe().find("nhwc"), std::string::npos) << s.describe();
}

// Returns how many convolution directions ran a plan of cuDNN's graph API.
int expect_conv2d_parity(const Half& h, const std::vector<std::pair<Conv2dGeometry, Shape>>& cases = conv_cases(),
                         CudnnGraphUse cudnn_graph = CudnnGraphUse::kNever) {
  int graph_directions = 0;
  for (const auto& [g, x_shape] : cases) {
    SCOPED_TRACE(str_cat(h.name, " conv ", shape_str(x_shape), " -> ", g.out_channels, " k", g.kernel_h, "x",
                         g.kernel_w, " g", g.groups));
    const TensorSpec x_spec = activation_spec(h, x_shape);
    const Both x = random_half(h, x_shape, 1, 1.0f, &x_spec), w = random_half(h, g.weight_shape(), 2, 0.1f, nullptr);
    const Both b = random_both({g.out_channels}, 3);
    // Both the staged path (a plain float32 input, as the graph's images) and the 16-bit one.
    for (const bool staged : {false, true}) {
      SCOPED_TRACE(staged ? "input plain float32" : "input 16-bit nhwc");
      const Tensor xg = staged ? to_device(x.cpu, kGpu) : x.gpu;
      auto cpu = make_conv2d(g, x.cpu.spec(), true), gpu = make_conv2d(g, xg.spec(), true, plan_of(h, cudnn_graph));
      graph_directions += gpu->cudnn_graph_directions();
      Tensor yc(cpu->y_spec()), yg(gpu->y_spec());
      cpu->forward(x.cpu, w.cpu, g.bias ? &b.cpu : nullptr, yc);
      gpu->forward(xg, w.gpu, g.bias ? &b.gpu : nullptr, yg);
      EXPECT_PARITY(yc, yg, h.u);
      const Both dy = random_half(h, g.output_shape(x_shape), 4, 1.0f, &gpu->y_spec());
      Tensor dxc(x.cpu.spec()), dxg(xg.spec()), dwc(w.cpu.spec()), dwg(w.gpu.spec()), dbc(b.cpu.spec()),
          dbg(b.gpu.spec());
      const Tensor dyc = in_layout(dy.cpu, cpu->y_spec());
      cpu->backward_data(dyc, w.cpu, dxc);
      gpu->backward_data(dy.gpu, w.gpu, dxg);
      cpu->backward_weights(x.cpu, dyc, dwc, g.bias ? &dbc : nullptr);
      gpu->backward_weights(xg, dy.gpu, dwg, g.bias ? &dbg : nullptr);
      EXPECT_PARITY(dxc, dxg, h.u);
      EXPECT_PARITY(dwc, dwg, h.u);
      if (g.bias) {
        EXPECT_PARITY(dbc, dbg, 1e-5);  // summed in float32 from exactly the CPU's values
      }
    }
  }
  return graph_directions;
}

TEST_P(GpuMixedPrecision, Conv2d) { expect_conv2d_parity(half()); }

// The 16-bit bias's own kernels (channel_tiles.h) where their walk has several slices, a channel
// tile cut short (40 = 32 + 8) and rows left over: 2 x 24 x 24 = 1152 rows in 5 slices.
TEST_P(GpuMixedPrecision, Conv2dBiasOverSeveralSlices) {
  Conv2dGeometry g = Conv2dGeometry::square(8, 40, 3, 1, 1);
  g.bias = true;
  expect_conv2d_parity(half(), {{g, {2, 8, 24, 24}}});
}

// The same through cuDNN's graph API wherever it has a plan (Note [cuDNN graph API]).
TEST_P(GpuMixedPrecision, Conv2dThroughTheGraphApi) {
  const int used = expect_conv2d_parity(half(), conv_cases(), CudnnGraphUse::kAlways);
  // 5 cases x 2 inputs x 3 directions; cuDNN may lack a plan for some (grouped, dilated).
  std::cout << half().name << ": the graph API ran " << used << " of 30 convolution directions\n";
  EXPECT_GE(used, 24);
}

// train.cudnn_graph = "where_faster": the legacy algorithm or the graph API's plan, whichever timed faster
// on the same ConvTimer. Either may win, and the test asserts only that the results agree with the CPU
// either way; how often the graph API won is printed.
TEST_P(GpuMixedPrecision, Conv2dAgreesWhicheverCudnnApiTimesFaster) {
  const int used = expect_conv2d_parity(half(), conv_cases(), CudnnGraphUse::kWhereFaster);
  std::cout << half().name << ": the graph API was faster on " << used << " of 30 convolution directions\n";
}

TEST_P(GpuMixedPrecision, BatchNormTrainingAndInference) {
  const Half& h = half();
  const Shape shape{4, 8, 6, 5};
  const TensorSpec spec = activation_spec(h, shape);
  const Both x = random_half(h, shape, 7, 2.0f, &spec), dy = random_half(h, shape, 10, 1.0f, &spec);
  const Both gamma = random_both({8}, 8), beta = random_both({8}, 9);
  BatchNormOptions o;
  o.eps = 1e-3;
  auto cpu = make_batch_norm(o, x.cpu.spec()), gpu = make_batch_norm(o, spec);
  Both rm = random_both({8}, 11, 0.1f), rv = random_both({8}, 12, 0.1f);
  for (int c = 0; c < 8; ++c) rv.cpu.data()[c] = 1.0f + std::fabs(rv.cpu.data()[c]);
  rv.gpu = to_device(rv.cpu, kGpu);
  Tensor yc(x.cpu.spec()), yg(spec);
  cpu->forward_training(x.cpu, gamma.cpu, beta.cpu, yc, rm.cpu, rv.cpu);
  gpu->forward_training(x.gpu, gamma.gpu, beta.gpu, yg, rm.gpu, rv.gpu);
  EXPECT_PARITY(yc, yg, h.u);
  EXPECT_PARITY(rm.cpu, rm.gpu, 1e-5);  // float32 statistics of identical inputs
  EXPECT_PARITY(rv.cpu, rv.gpu, 1e-5);
  Tensor dxc(x.cpu.spec()), dxg(spec), dgc(plain_spec({8})), dgg(plain_spec({8}, kGpu)), dbc(plain_spec({8})),
      dbg(plain_spec({8}, kGpu));
  cpu->backward_training(x.cpu, gamma.cpu, beta.cpu, dy.cpu, dxc, dgc, dbc);
  gpu->backward_training(x.gpu, gamma.gpu, beta.gpu, dy.gpu, dxg, dgg, dbg);
  EXPECT_PARITY(dxc, dxg, h.u);
  EXPECT_PARITY(dgc, dgg, 1e-4);
  EXPECT_PARITY(dbc, dbg, 1e-5);
  cpu->forward_inference(x.cpu, gamma.cpu, beta.cpu, yc, rm.cpu, rv.cpu);
  gpu->forward_inference(x.gpu, gamma.gpu, beta.gpu, yg, rm.gpu, rv.gpu);
  EXPECT_PARITY(yc, yg, h.u);
  cpu->backward_inference(x.cpu, gamma.cpu, beta.cpu, dy.cpu, dxc, dgc, dbc, rm.cpu, rv.cpu);
  gpu->backward_inference(x.gpu, gamma.gpu, beta.gpu, dy.gpu, dxg, dgg, dbg, rm.gpu, rv.gpu);
  EXPECT_PARITY(dxc, dxg, h.u);
  EXPECT_PARITY(dgc, dgg, 1e-4);
  EXPECT_PARITY(dbc, dbg, 1e-5);
}

// Pooling of `shape` at bf16 / fp16 against the CPU's float32.
void expect_pooling_parity(const Half& h, const Shape& shape) {
  const TensorSpec spec = activation_spec(h, shape);
  const Both x = random_half(h, shape, 20, 1.0f, &spec);
  const auto check = [&](std::unique_ptr<Pool2dOp> cpu, std::unique_ptr<Pool2dOp> gpu, double forward_tol, double tol) {
    Tensor yc(cpu->y_spec()), yg(gpu->y_spec());
    cpu->forward(x.cpu, yc, true);
    gpu->forward(x.gpu, yg, true);
    EXPECT_PARITY(yc, yg, forward_tol);
    const Both dy = random_half(h, gpu->y_spec().shape, 21, 1.0f, &gpu->y_spec());
    Tensor dxc(x.cpu.spec()), dxg(spec);
    cpu->backward(in_layout(dy.cpu, cpu->y_spec()), dxc);
    gpu->backward(dy.gpu, dxg);
    EXPECT_PARITY(dxc, dxg, tol);
  };
  for (const PoolKind kind : {PoolKind::kMax, PoolKind::kAvg}) {
    Pool2dGeometry g;
    g.kind = kind;
    g.kernel_h = g.kernel_w = 3;
    g.stride_h = g.stride_w = 2;
    g.pad_h = g.pad_w = 1;
    SCOPED_TRACE(kind == PoolKind::kMax ? "max" : "avg");
    // Max pooling moves values: its forward is exact. Its gradient is not: these windows overlap,
    // so an input that is the arg-max of two sums two gradients, rounded once to 16 bits.
    check(make_pool2d(g, x.cpu.spec()), make_pool2d(g, spec), kind == PoolKind::kMax ? 0.0 : h.u, h.u);
  }
  {
    // VGG's 2x2/2: disjoint windows, so each input takes at most one gradient, unrounded: exact
    // both ways (and max pooling's backward scatters there).
    SCOPED_TRACE("max 2x2/2");
    check(make_pool2d(max_pool_2x2(), x.cpu.spec()), make_pool2d(max_pool_2x2(), spec), 0.0, 0.0);
  }
  SCOPED_TRACE("adaptive 5x4");
  check(make_adaptive_avg_pool2d(5, 4, x.cpu.spec()), make_adaptive_avg_pool2d(5, 4, spec), h.u, h.u);
}

// 8 channels are one 16-byte pack of 16-bit values per pixel; 24 are three, so the kernels' pack
// indexing is checked across packs too.
TEST_P(GpuMixedPrecision, Pooling) {
  for (const int64_t channels : {8, 24}) {
    SCOPED_TRACE(str_cat(channels, " channels"));
    expect_pooling_parity(half(), {2, channels, 13, 12});
  }
}

TEST_P(GpuMixedPrecision, ReluAddAccumulateConcatFlatten) {
  const Half& h = half();
  const TensorSpec sa = activation_spec(h, {2, 3, 4, 5}), sc = activation_spec(h, {2, 6, 4, 5});
  const Both a = random_half(h, {2, 3, 4, 5}, 30, 1.0f, &sa), b = random_half(h, {2, 3, 4, 5}, 31, 1.0f, &sa);
  const Both c = random_half(h, {2, 6, 4, 5}, 32, 1.0f, &sc);
  Tensor yg(sa), dxg(sa), yc(a.cpu.spec()), dxc(a.cpu.spec());
  make_relu(sa)->forward(a.gpu, yg);
  make_relu(a.cpu.spec())->forward(a.cpu, yc);
  EXPECT_EQ(rel_error(yc, yg), 0);
  make_relu(sa)->backward(yg, b.gpu, dxg);
  make_relu(a.cpu.spec())->backward(yc, b.cpu, dxc);
  EXPECT_EQ(rel_error(dxc, dxg), 0);

  make_add(sa, sa)->forward(a.gpu, b.gpu, yg);
  make_add(a.cpu.spec(), b.cpu.spec())->forward(a.cpu, b.cpu, yc);
  EXPECT_PARITY(yc, yg, h.u);
  accumulate(yg, a.gpu);
  accumulate(yc, a.cpu);
  EXPECT_PARITY(yc, yg, 2 * h.u);  // two roundings: the add's and the accumulation's

  auto cat_gpu = make_concat({sa, sc});
  auto cat_cpu = make_concat({a.cpu.spec(), c.cpu.spec()});
  Tensor catg(cat_gpu->y_spec()), catc(cat_cpu->y_spec());
  cat_gpu->forward({&a.gpu, &c.gpu}, catg);
  cat_cpu->forward({&a.cpu, &c.cpu}, catc);
  EXPECT_EQ(rel_error(catc, catg), 0);
  const Both dcat = random_half(h, cat_gpu->y_spec().shape, 33, 1.0f, &cat_gpu->y_spec());
  Tensor da_g(sa), dc_g(sc), da_c(a.cpu.spec()), dc_c(c.cpu.spec());
  cat_gpu->backward(dcat.gpu, {&da_g, &dc_g});
  cat_cpu->backward(in_layout(dcat.cpu, cat_cpu->y_spec()), {&da_c, &dc_c});
  EXPECT_EQ(rel_error(da_c, da_g), 0);
  EXPECT_EQ(rel_error(dc_c, dc_g), 0);

  // Flatten returns to plain float32 in PyTorch's (C, H, W) order, and back for the gradient.
  auto flat_gpu = make_flatten(sc);
  EXPECT_TRUE(flat_gpu->y_spec().is_plain());
  Tensor fg(flat_gpu->y_spec()), fc(make_flatten(c.cpu.spec())->y_spec());
  flat_gpu->forward(c.gpu, fg);
  make_flatten(c.cpu.spec())->forward(c.cpu, fc);
  EXPECT_EQ(rel_error(fc, fg), 0);
  const Both dflat = random_half(h, fc.shape(), 34, 1.0f, nullptr);
  Tensor dcg(sc), dcc(c.cpu.spec());
  flat_gpu->backward(dflat.gpu, dcg);
  make_flatten(c.cpu.spec())->backward(dflat.cpu, dcc);
  EXPECT_EQ(rel_error(dcc, dcg), 0);
}

// Note [Sixteen-bit model steps]: a model's training step in 16 bits against the CPU's float32 on
// the same weights and images. Its error is not a sum of roundings: wherever two candidates of a
// max-pooling window lie within a rounding of each other, the 16-bit forward may pick the other
// one, and the gradient lands on another element; batch norm at a small batch amplifies what is
// left. So the error grows as about sqrt(u), not u (the first H100 runs: VGG-16's gradients 10%
// off in bf16, 4-5% in fp16, ResNet-101's and Inception-v3's more). The bound is therefore the
// step's own sensitivity, measured on the CPU as in Note [Batch-norm conditioning]: the CPU step
// again with every weight rounded to the 16-bit type (a perturbation the GPU also makes), and the
// GPU held to 4 times that spread, and never to less than 30 u. A wrong layout, a missing
// loss-scale division or a lost gradient gives errors near 1, far above. Inception-v3 runs
// without its auxiliary classifier, whose batch norm sees one value per sample and channel.
//
// Measured on an H100: VGG-16's GPU error is 1.5 times the CPU's spread (bf16 0.11 against 0.074,
// fp16 0.037 against 0.026). ResNet-101's and Inception-v3's training steps at these batches are
// chaotic: rounding the weights alone moves the CPU's gradients by 70-140% and its loss by up to 6%,
// so for them this test only catches gross failures (non-finite gradients, a loss far off); their
// ops are held to u above, and resnet_mini's 16-bit training must converge below.
//
// fp16 backs off its loss scale as GradScaler does: from 1024, halved until every gradient is
// finite. At 1024 the stem's weight gradient of both overflows fp16 (it is written in 16 bits,
// as autocast's is) in this initialisation's exploding-gradient regime.
void expect_half_step(const Half& h, const std::string& name, const Shape& input, int64_t batch, double dropout,
                      bool aux = true) {
  SCOPED_TRACE(str_cat(h.name, " ", name, " training step"));
  StepStart plain, rounded, on_gpu;
  plain.aux_logits = rounded.aux_logits = on_gpu.aux_logits = aux;
  rounded.round = rounding_of(h);
  on_gpu.precision = h.precision;
  const StepResult cpu = model_step(name, input, batch, dropout, kCpu, true, 1, plain);
  const StepResult cpu_rounded = model_step(name, input, batch, dropout, kCpu, true, 1, rounded);
  double scale = h.precision == Precision::kFp16 ? 1024 : 1;
  StepResult gpu = model_step(name, input, batch, dropout, kGpu, true, scale, on_gpu);
  const auto finite = [](const std::vector<float>& v) {
    return std::all_of(v.begin(), v.end(), [](float x) { return std::isfinite(x); });
  };
  while (!finite(gpu.grads) && scale > 1.0 / 1024) {
    scale /= 2;
    gpu = model_step(name, input, batch, dropout, kGpu, true, scale, on_gpu);
  }
  const double spread = rel_error(cpu.grads, cpu_rounded.grads), e = rel_error(cpu.grads, gpu.grads);
  const double bound = std::max(30 * h.u, 4 * spread);
  // The loss's own spread comes from one perturbation, the weights'; the GPU also rounds every
  // activation. Measured: GPU error 4.5-7 times that spread (Inception-v3), so 8 times, or 60 u.
  const double loss_bound = std::max(60 * h.u * std::fabs(cpu.loss), 8 * std::fabs(cpu_rounded.loss - cpu.loss));
  std::cout << h.name << " " << name << " batch " << batch << ": loss cpu " << cpu.loss << " (weights rounded "
            << cpu_rounded.loss << ") gpu " << gpu.loss << "; gradients rel. error " << e
            << ", the CPU's spread under rounded weights " << spread << ", bound " << bound << "; loss scale " << scale
            << "; worst " << worst_gradient(cpu, gpu) << "\n";
  EXPECT_NEAR(gpu.loss, cpu.loss, loss_bound);
  EXPECT_LE(e, bound);
  EXPECT_LE(rel_error(cpu.params, gpu.params), bound) << "parameters after one SGD step";
}

TEST_P(GpuMixedPrecision, Vgg16Step) { expect_half_step(half(), "vgg16", {3, 32, 32}, 2, 0.5); }
TEST_P(GpuMixedPrecision, ResNet101Step) { expect_half_step(half(), "resnet101", {3, 64, 64}, 8, 0.0); }
TEST_P(GpuMixedPrecision, InceptionV3Step) {
  expect_half_step(half(), "inception_v3", {3, 299, 299}, 4, 0.0, /*aux=*/false);
}

// resnet_mini on one fixed batch, as the float32 suite's run. fp16 starts from a loss scale of
// 2^30, far above what fp16 holds (gradients of ~1/32 times 2^30 overflow), so the first steps
// must be skipped and the scale halved until they fit; training must then still converge.
TEST_P(GpuMixedPrecision, ShortTrainingRunLossFalls) {
  const Half& h = half();
  ModelOptions o;
  auto graph = build_model("resnet_mini", o);
  graph->plan(32, kGpu, /*training=*/true, plan_of(h));
  graph->init_parameters(3);
  Sgd sgd(*graph, SgdOptions{0.9, false, 0, false});
  LossScaleOptions lo;
  lo.initial = h.precision == Precision::kFp16 ? std::ldexp(1.0, 30) : 1;
  lo.growth_interval = 1000;
  LossScaler scaler(lo);
  const Both images = random_both({32, 1, 28, 28}, 80);
  std::vector<int32_t> targets(32);
  for (int n = 0; n < 32; ++n) targets[n] = n % 10;
  OutputGradients dy(*graph);
  double first = 0, last = 0;
  const int steps = 60;
  for (uint64_t step = 0; step < steps; ++step) {
    const RunContext ctx{true, 1, step};
    graph->forward(images.cpu.data(), ctx);
    const double scale = scaler.scale();
    last = graph_loss(*graph, targets.data(), 0.0, &dy, nullptr, scale).loss;
    if (step == 0) first = last;
    const std::vector<const Tensor*> views = dy.views();
    graph->backward(views, ctx);
    if (scaler.update(all_finite(kGpu, graph->grad_arena(), graph->arena_floats()), static_cast<int64_t>(step)))
      sgd.step(0.05, 1 / scale);
  }
  std::cout << h.name << " resnet_mini on one fixed batch: loss " << first << " -> " << last << " in " << steps
            << " steps, " << scaler.skipped_steps() << " skipped, loss scale now " << scaler.scale() << "\n";
  EXPECT_NEAR(first, std::log(10.0), 0.5);
  EXPECT_LT(last, 0.2 * first);
  if (h.precision == Precision::kFp16) {
    EXPECT_GE(scaler.skipped_steps(), 5) << "2^30 should overflow fp16 gradients";
    EXPECT_LE(scaler.skipped_steps(), 40);
    EXPECT_LT(scaler.scale(), lo.initial);
  } else {
    EXPECT_EQ(scaler.skipped_steps(), 0) << "bf16 has float32's range";
  }
}

INSTANTIATE_TEST_SUITE_P(Precisions, GpuMixedPrecision, ::testing::Values(kBf16, kFp16),
                         [](const ::testing::TestParamInfo<Half>& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace rt::testing
