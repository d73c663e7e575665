// The static graph: parameter arena in backward order, the grad-ready callback, gradients summed
// over fan-out (checked by finite differences of the whole graph), deterministic initialisation.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "base/rng.h"
#include "nn/cpu_bf16.h"
#include "nn/graph.h"
#include "nn/layers/add.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/conv2d.h"
#include "nn/layers/dropout.h"
#include "nn/layers/flatten.h"
#include "nn/layers/linear.h"
#include "nn/layers/relu.h"
#include "nn/ops/reorder.h"

namespace rt::testing {
namespace {

Conv2dGeometry conv3x3(int64_t c, int64_t k) {
  Conv2dGeometry g = Conv2dGeometry::square(c, k, 3, 1, 1);
  g.bias = true;
  return g;
}

// Largest |numeric - analytic| / (floor + |numeric|) over every `stride`-th weight of p, where
// numeric is the central difference of loss() with step h and analytic is p.grad as it is now.
double worst_relative_error(ParamRef& p, const std::function<double()>& loss, float h, int64_t stride, double floor) {
  const std::vector<float> analytic(p.grad.data(), p.grad.data() + p.grad.numel());
  double worst = 0;
  for (int64_t k = 0; k < p.value.numel(); k += stride) {
    float& w = p.value.data()[k];
    const float saved = w;
    w = saved + h;
    const double lp = loss();
    w = saved - h;
    const double lm = loss();
    w = saved;
    const double numeric = (lp - lm) / (2.0 * h);
    worst = std::max(worst, std::abs(numeric - analytic[k]) / (floor + std::abs(numeric)));
  }
  return worst;
}

// input -> a -> id -> b -> add(b, id) -> flatten -> fc: id's output has two consumers. The identity
// (dropout with p = 0) keeps the loss smooth, so finite differences see no ReLU kinks.
std::unique_ptr<Graph> residual_graph() {
  auto g = std::make_unique<Graph>(Shape{3, 5, 5});
  int x = g->add("a", Conv2d(conv3x3(3, 16)), {g->input()});
  const int r = g->add("id", Dropout(0.0), {x});
  x = g->add("b", Conv2d(conv3x3(16, 16)), {r});
  x = g->add("add", Add(), {x, r});
  x = g->add("flatten", Flatten(), {x});
  g->add("fc", Linear(16 * 25, 4), {x});
  g->plan(2, Device::kCpu);
  g->init_parameters(5);
  return g;
}

TEST(Graph, ArenaHoldsParametersInBackwardOrderAlignedAndDisjoint) {
  auto g = residual_graph();
  std::vector<std::string> names;
  for (const ParamRef& p : g->params()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string>{"fc.weight", "fc.bias", "b.weight", "b.bias", "a.weight", "a.bias"}));
  int64_t end = 0;
  for (const ParamRef& p : g->params()) {
    EXPECT_EQ(p.offset % 16, 0) << p.name;
    EXPECT_GE(p.offset, end) << p.name;
    EXPECT_EQ(p.value.data(), g->param_arena() + p.offset);
    EXPECT_EQ(p.grad.data(), g->grad_arena() + p.offset);
    end = p.offset + p.value.numel();
  }
  EXPECT_LE(end, g->arena_floats());
  EXPECT_EQ(g->parameter_count(), 16 * 25 * 4 + 4 + 16 * 16 * 9 + 16 + 16 * 3 * 9 + 16);
}

TEST(Graph, GradReadyFiresOncePerParameterInArenaOrderWithTheFinalGradient) {
  auto g = residual_graph();
  std::vector<size_t> fired;
  std::vector<std::vector<float>> at_fire(g->params().size());
  g->on_grad_ready([&](size_t i) {
    fired.push_back(i);
    const Tensor& grad = g->params()[i].grad;
    at_fire[i].assign(grad.data(), grad.data() + grad.numel());
  });
  std::vector<float> x(2 * 3 * 5 * 5, 0.5f);
  const Tensor& y = g->forward(x.data(), {});
  Tensor dy(y.spec());
  for (int64_t i = 0; i < dy.numel(); ++i) dy.data()[i] = 0.1f * static_cast<float>(i % 3) - 0.1f;
  g->backward(dy, {});
  ASSERT_EQ(fired.size(), g->params().size());
  for (size_t i = 0; i < fired.size(); ++i) EXPECT_EQ(fired[i], i);
  for (size_t i = 0; i < fired.size(); ++i) {
    const Tensor& grad = g->params()[i].grad;
    EXPECT_EQ(at_fire[i], std::vector<float>(grad.data(), grad.data() + grad.numel())) << g->params()[i].name;
  }
}

// Profiled backward (bench --profile) times every layer, the host's share of each within its
// whole, and leaves the gradients as an unprofiled backward writes them.
TEST(Graph, ProfiledBackwardTimesEachLayerWithItsHostShareAndTheSameGradients) {
  auto g = residual_graph();
  std::vector<float> x(2 * 3 * 5 * 5, 0.5f);
  const Tensor& y = g->forward(x.data(), {});
  Tensor dy(y.spec());
  for (int64_t i = 0; i < dy.numel(); ++i) dy.data()[i] = 0.1f * static_cast<float>(i % 3) - 0.1f;
  g->backward(dy, {});
  const std::vector<float> plain(g->grad_arena(), g->grad_arena() + g->arena_floats());
  std::vector<double> seconds, host_seconds;
  g->time_backward_layers(&seconds, &host_seconds);
  g->backward(dy, {});
  g->backward(dy, {});  // sums over calls
  g->time_backward_layers(nullptr, nullptr);
  EXPECT_EQ(std::vector<float>(g->grad_arena(), g->grad_arena() + g->arena_floats()), plain);
  const size_t layers = g->layer_table().size();
  ASSERT_EQ(seconds.size(), layers);
  ASSERT_EQ(host_seconds.size(), layers);
  for (size_t i = 0; i < layers; ++i) {
    EXPECT_GT(seconds[i], 0.0) << g->layer_table()[i].name;
    EXPECT_GE(host_seconds[i], 0.0) << g->layer_table()[i].name;
    EXPECT_LE(host_seconds[i], seconds[i]) << g->layer_table()[i].name;
  }
}

// loss = r . y for the graph's output y on fixed random inputs x and weights r, drawn from `seed`;
// backward() runs one backward pass of it (after a forward), leaving the gradients in the graph.
class LinearLoss {
 public:
  LinearLoss(Graph& g, uint64_t seed) : g_(g), x_(2 * 3 * 5 * 5), r_(2 * 4) {
    Rng rng(seed, seed);
    for (float& v : x_) v = 2 * rng.uniform() - 1;
    for (float& v : r_) v = 2 * rng.uniform() - 1;
  }
  double operator()() const {
    const Tensor& y = g_.forward(x_.data(), {});
    double l = 0;
    for (int64_t i = 0; i < y.numel(); ++i) l += static_cast<double>(r_[i]) * y.data()[i];
    return l;
  }
  void backward() const {
    (*this)();
    Tensor dy(g_.output_spec());
    std::copy(r_.begin(), r_.end(), dy.data());
    g_.backward(dy, {});
  }

 private:
  Graph& g_;
  std::vector<float> x_, r_;
};

TEST(Graph, FanOutGradientsAreSummedAsFiniteDifferencesSay) {
  auto g = residual_graph();
  const LinearLoss loss(*g, 3);
  loss.backward();
  // Conv "a" sits before the fan-out: its gradient is the sum over both paths.
  ParamRef& a = g->params()[4];
  ASSERT_EQ(a.name, "a.weight");
  EXPECT_LT(worst_relative_error(a, loss, 1e-2f, 17, 1e-3), 1e-2);
  // Conv "b" is the add's only producer of its first input: its gradient arrives in the add's own
  // gradient buffer (Note [Activation memory]), with no copy.
  ParamRef& b = g->params()[2];
  ASSERT_EQ(b.name, "b.weight");
  EXPECT_LT(worst_relative_error(b, loss, 1e-2f, 17, 1e-3), 1e-2);
}

// input -> a -> id -> b -> add1(b, id) -> add2(add1, id) -> flatten -> fc: add1 is add2's, and b
// is add1's, only producer of that input, so b, add1 and add2 share one gradient buffer, while
// id (three consumers) sums its gradients as before.
TEST(Graph, ChainedAddsHandTheirGradientDownAsFiniteDifferencesSay) {
  auto g = std::make_unique<Graph>(Shape{3, 5, 5});
  int x = g->add("a", Conv2d(conv3x3(3, 16)), {g->input()});
  const int r = g->add("id", Dropout(0.0), {x});
  x = g->add("b", Conv2d(conv3x3(16, 16)), {r});
  x = g->add("add1", Add(), {x, r});
  x = g->add("add2", Add(), {x, r});
  x = g->add("flatten", Flatten(), {x});
  g->add("fc", Linear(16 * 25, 4), {x});
  g->plan(2, Device::kCpu);
  g->init_parameters(6);
  const LinearLoss loss(*g, 4);
  loss.backward();
  loss.backward();  // the second pass reuses every buffer as planned
  ParamRef& a = g->params()[4];
  ParamRef& b = g->params()[2];
  ASSERT_EQ(a.name, "a.weight");
  ASSERT_EQ(b.name, "b.weight");
  EXPECT_LT(worst_relative_error(b, loss, 1e-2f, 17, 1e-3), 1e-2);
  EXPECT_LT(worst_relative_error(a, loss, 1e-2f, 17, 1e-3), 1e-2);
}

// input -> c1 -> act1 -> c2 -> act2 -> flatten -> fc1 (main output), with a second output fc2
// reading act1 through its own flatten. act is ReLU (in place over the conv output), or, where
// finite differences must not meet ReLU kinks, the identity (dropout with p = 0).
std::unique_ptr<Graph> two_output_graph(bool training, bool relu = true) {
  const auto act = [&](Graph& g, const std::string& name, int x) {
    return relu ? g.add(name, Relu(), {x}) : g.add(name, Dropout(0.0), {x});
  };
  auto g = std::make_unique<Graph>(Shape{3, 5, 5});
  int x = g->add("c1", Conv2d(conv3x3(3, 16)), {g->input()});
  const int r1 = act(*g, "act1", x);
  x = g->add("c2", Conv2d(conv3x3(16, 16)), {r1});
  x = act(*g, "act2", x);
  const int side = g->add("side_flatten", Flatten(), {r1});
  const int aux = g->add("fc2", Linear(16 * 25, 3), {side});
  x = g->add("flatten", Flatten(), {x});
  g->add("fc1", Linear(16 * 25, 4), {x});
  g->add_output(aux, 0.25);
  g->plan(2, Device::kCpu, training);
  g->init_parameters(9);
  return g;
}

TEST(Graph, InferencePlanGivesTheSameOutputsInLessMemory) {
  auto train = two_output_graph(true), infer = two_output_graph(false);
  Rng rng(5, 1);
  std::vector<float> x(2 * 3 * 5 * 5);
  for (float& v : x) v = 2 * rng.uniform() - 1;
  const RunContext eval{false, 0, 0};
  train->forward(x.data(), eval);
  infer->forward(x.data(), eval);
  for (size_t k = 0; k < 2; ++k)
    for (int64_t i = 0; i < train->output(k).numel(); ++i)
      ASSERT_EQ(train->output(k).data()[i], infer->output(k).data()[i]) << "output " << k << " element " << i;
  EXPECT_LT(infer->activation_bytes(), train->activation_bytes());
  EXPECT_THROW(infer->backward(std::span<const Tensor* const>(), eval), Error);
}

TEST(Graph, TwoOutputsGiveTheGradientOfTheirWeightedSumAsFiniteDifferencesSay) {
  auto g = two_output_graph(true, /*relu=*/false);
  ASSERT_EQ(g->output_count(), 2u);
  Rng rng(6, 2);
  std::vector<float> x(2 * 3 * 5 * 5);
  for (float& v : x) v = 2 * rng.uniform() - 1;
  std::vector<float> r0(2 * 4), r1(2 * 3);
  for (float& v : r0) v = 2 * rng.uniform() - 1;
  for (float& v : r1) v = 2 * rng.uniform() - 1;
  const double w1 = g->output_loss_weight(1);
  EXPECT_EQ(w1, 0.25);
  auto loss = [&] {
    g->forward(x.data(), {});
    double l = 0;
    for (int64_t i = 0; i < g->output(0).numel(); ++i) l += static_cast<double>(r0[i]) * g->output(0).data()[i];
    for (int64_t i = 0; i < g->output(1).numel(); ++i) l += w1 * r1[i] * g->output(1).data()[i];
    return l;
  };
  loss();
  Tensor d0(g->output_spec(0)), d1(g->output_spec(1));
  std::copy(r0.begin(), r0.end(), d0.data());
  for (size_t i = 0; i < r1.size(); ++i) d1.data()[i] = static_cast<float>(w1 * r1[i]);
  const Tensor* douts[2] = {&d0, &d1};
  g->backward(douts, {});
  // c1 feeds both outputs: its gradient must carry both paths.
  ParamRef* c1 = nullptr;
  for (ParamRef& p : g->params())
    if (p.name == "c1.weight") c1 = &p;
  ASSERT_NE(c1, nullptr);
  EXPECT_LT(worst_relative_error(*c1, loss, 1e-3f, 13, 1e-2), 2e-2);
}

// conv -> batch norm -> dropout(0.5) -> fc, on the CPU at batch 2, with its input filled.
std::unique_ptr<Graph> stepped_graph(std::vector<float>& images) {
  auto g = std::make_unique<Graph>(Shape{3, 5, 5});
  int x = g->add("conv", Conv2d(conv3x3(3, 8)), {g->input()});
  x = g->add("bn", BatchNorm2d(8), {x});
  x = g->add("drop", Dropout(0.5), {x});
  x = g->add("flatten", Flatten(), {x});
  g->add("fc", Linear(8 * 25, 4), {x});
  g->plan(2, Device::kCpu);
  g->init_parameters(9);
  Rng rng(10, 1);
  images.resize(2 * 3 * 5 * 5);
  for (float& v : images) v = static_cast<float>(rng.normal());
  return g;
}

std::vector<float> values(const Tensor& t) { return {t.data(), t.data() + t.numel()}; }

// Note [CUDA graph steps] in nn/device.h: what moves from step to step (batch norm's counter,
// dropout's step) moves in begin_forward, and forward_work does the same at every call. So the
// split calls give forward's results, and forward_work again without begin_forward repeats the last
// step, as a replayed recording does, whatever step its own context names.
TEST(Graph, ForwardWorkRepeatsTheStepThatBeginForwardSet) {
  std::vector<float> images;
  auto whole = stepped_graph(images), split = stepped_graph(images);
  const RunContext step1{true, 7, 1}, step2{true, 7, 2};
  const std::vector<float> y1 = values(whole->forward(images.data(), step1));
  const std::vector<float> y2 = values(whole->forward(images.data(), step2));
  ASSERT_NE(y1, y2) << "dropout's mask should move with the step";
  ASSERT_EQ(*whole->counters()[0].value, 2);

  split->set_input(images.data(), Device::kCpu);
  split->begin_forward(step1);
  EXPECT_EQ(values(split->forward_work(step1)), y1);
  split->begin_forward(step2);
  EXPECT_EQ(values(split->forward_work(step2)), y2);
  EXPECT_EQ(*split->counters()[0].value, 2);
  EXPECT_EQ(values(split->forward_work(step1)), y2);
  EXPECT_EQ(*split->counters()[0].value, 2);
}

TEST(Graph, InitialisationDependsOnlyOnSeedAndName) {
  auto a = residual_graph();
  auto b = residual_graph();
  EXPECT_EQ(std::vector<float>(a->param_arena(), a->param_arena() + a->arena_floats()),
            std::vector<float>(b->param_arena(), b->param_arena() + b->arena_floats()));
  b->init_parameters(6);
  EXPECT_NE(std::vector<float>(a->param_arena(), a->param_arena() + a->arena_floats()),
            std::vector<float>(b->param_arena(), b->param_arena() + b->arena_floats()));
}

// The stream of a parameter named `name` under base/rng.h: FNV-1a of the name, as graph.cpp says.
uint64_t fnv1a(const std::string& name) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ull;
  return h;
}

// Initial values are drawn in parallel chunks: at 1, 2 and 3 threads they are the bits one Rng
// gives drawn in order, for a normal (two draws a value) and a uniform (one) over many chunks.
TEST(Graph, InitialValuesAreOneSequentialStreamAtAnyThreadCount) {
  Graph g(Shape{1000, 1, 1});
  const int flat = g.add("flatten", Flatten(), {g.input()});
  g.add("fc", Linear(1000, 300), {flat});  // 300,000 weights, uniform; 300 biases, uniform
  Conv2dGeometry c = conv3x3(1000, 64);
  c.bias = false;
  Conv2d conv(c);
  conv.kaiming_fan_out();  // 576,000 weights, normal
  g.add("conv", std::move(conv), {g.input()});
  g.plan(1, Device::kCpu);
  const int threads_before = omp_get_max_threads();
  for (int threads : {1, 2, 3}) {
    omp_set_num_threads(threads);
    std::memset(g.param_arena(), 0, static_cast<size_t>(g.arena_floats()) * sizeof(float));
    g.init_parameters(7);
    for (const ParamRef& p : g.params()) {
      Rng rng(7, fnv1a(p.name));
      const bool normal = p.name == "conv.weight";
      const double a = normal ? std::sqrt(2.0 / (64 * 9)) : 1.0 / std::sqrt(1000.0);
      int64_t mismatches = 0;
      for (int64_t i = 0; i < p.value.numel(); ++i) {
        const float want =
            normal ? static_cast<float>(rng.normal() * a) : static_cast<float>((2.0 * rng.uniform() - 1.0) * a);
        mismatches += std::memcmp(&want, p.value.data() + i, sizeof(float)) != 0;
      }
      EXPECT_EQ(mismatches, 0) << p.name << " at " << threads << " threads";
    }
  }
  omp_set_num_threads(threads_before);
}

TEST(Graph, KaimingFanOutHasTorchvisionsStandardDeviation) {
  Graph g(Shape{64, 8, 8});
  Conv2dGeometry c = conv3x3(64, 128);
  c.bias = false;
  Conv2d conv(c);
  conv.kaiming_fan_out();
  g.add("conv", std::move(conv), {g.input()});
  g.plan(1, Device::kCpu);
  g.init_parameters(1);
  const Tensor& w = g.params()[0].value;
  double sum = 0, sq = 0;
  for (int64_t i = 0; i < w.numel(); ++i) sum += w.data()[i], sq += static_cast<double>(w.data()[i]) * w.data()[i];
  const double n = static_cast<double>(w.numel());
  const double stdev = std::sqrt(sq / n - (sum / n) * (sum / n));
  const double expected = std::sqrt(2.0 / (128 * 9));  // fan_out = K R S
  EXPECT_NEAR(stdev / expected, 1.0, 0.02);            // 73,728 draws: sampling error ~0.3%
  EXPECT_NEAR(sum / n, 0.0, 3 * expected / std::sqrt(n));
}

TEST(Graph, BuildErrorsNameTheLayer) {
  Graph g(Shape{3, 5, 5});
  g.add("fc", Linear(7, 2), {g.input()});
  try {
    g.plan(2, Device::kCpu);
    FAIL() << "planning a linear layer on a 4-D input must fail";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer 'fc' (linear)"), std::string::npos) << e.what();
  }
  Graph h(Shape{3});
  h.add("x", Relu(), {h.input()});
  EXPECT_THROW(h.add("x", Relu(), {0}), Error);  // duplicate name
  EXPECT_THROW(h.add("y", Relu(), {5}), Error);  // node that does not exist
}

// input -> block1 (conv, bn, relu) -> block2 (conv, bn, relu) -> flatten -> fc, the layers of
// `frozen` frozen; `smooth`: identities (dropout with p = 0) for the ReLUs, for finite differences.
std::unique_ptr<Graph> two_blocks(const std::vector<std::string>& frozen, bool statistics_training,
                                  bool smooth = false) {
  auto g = std::make_unique<Graph>(Shape{3, 5, 5});
  int x = g->input();
  for (const char* block : {"block1", "block2"}) {
    x = g->add(str_cat(block, ".conv"), Conv2d(conv3x3(x == g->input() ? 3 : 8, 8)), {x});
    x = g->add(str_cat(block, ".bn"), BatchNorm2d(8), {x});
    x = smooth ? g->add(str_cat(block, ".relu"), Dropout(0.0), {x}) : g->add(str_cat(block, ".relu"), Relu(), {x});
  }
  x = g->add("flatten", Flatten(), {x});
  g->add("fc", Linear(8 * 25, 4), {x});
  if (!frozen.empty()) g->freeze(frozen, statistics_training);
  g->plan(2, Device::kCpu);
  g->init_parameters(5);
  return g;
}

const ParamRef& param_named(const Graph& g, const std::string& name) {
  for (const ParamRef& p : g.params())
    if (p.name == name) return p;
  throw Error("no parameter " + name);
}

// Note [Frozen layers] in nn/graph.h: the frozen block's parameters sit after the rest and get no gradient slot,
// the others' gradients are bit for bit what the whole graph computes, and the grad-ready
// callback fires for the trainable ones alone, in arena order.
TEST(Graph, FrozenLayersGetNoGradientAndTheOthersTheSameOnes) {
  auto whole = two_blocks({}, false);
  auto part = two_blocks({"block1"}, /*statistics_training=*/true);
  ASSERT_EQ(part->trainable_count(), 6u);  // block2's conv and bn, fc: weight and bias each
  EXPECT_EQ(part->arena_floats(), whole->arena_floats());
  EXPECT_EQ(part->grad_floats(), param_named(*part, "block1.bn.weight").offset);
  EXPECT_LT(part->grad_floats(), part->arena_floats());
  for (size_t i = 0; i < part->params().size(); ++i) {
    const ParamRef& p = part->params()[i];
    EXPECT_EQ(p.trainable, p.name.rfind("block1.", 0) != 0) << p.name;
    EXPECT_EQ(p.trainable, p.grad.defined() && p.grad.data() != nullptr) << p.name;
    EXPECT_EQ(std::memcmp(p.value.data(), param_named(*whole, p.name).value.data(), p.value.bytes()), 0) << p.name;
  }
  std::vector<size_t> fired;
  part->on_grad_ready([&](size_t i) { fired.push_back(i); });
  std::vector<float> x(2 * 3 * 5 * 5);
  Rng rng(3, 4);
  for (float& v : x) v = static_cast<float>(rng.uniform() - 0.5);
  for (Graph* g : {whole.get(), part.get()}) {
    const Tensor& y = g->forward(x.data(), {});
    Tensor dy(y.spec());
    for (int64_t i = 0; i < dy.numel(); ++i) dy.data()[i] = 0.1f * static_cast<float>(i % 3) - 0.1f;
    g->backward(dy, {});
  }
  ASSERT_EQ(fired.size(), part->trainable_count());
  for (size_t i = 0; i < fired.size(); ++i) EXPECT_EQ(fired[i], i);
  for (const ParamRef& p : part->trainable_params()) {
    const ParamRef& q = param_named(*whole, p.name);
    EXPECT_EQ(std::memcmp(p.grad.data(), q.grad.data(), p.grad.bytes()), 0) << p.name;
  }
}

// Batch norm in a frozen layer normalises with its running statistics and leaves them, and its
// counter, as they were; the gradient below it is then eval-mode batch norm's, as finite
// differences say.
TEST(Graph, FrozenBatchNormKeepsItsStatisticsAndPassesTheEvalGradient) {
  auto g = two_blocks({"block2.bn"}, /*statistics_training=*/false, /*smooth=*/true);
  std::vector<float> x(2 * 3 * 5 * 5);
  Rng rng(3, 5);
  for (float& v : x) v = static_cast<float>(rng.uniform() - 0.5);
  std::vector<std::vector<float>> before;
  for (const BufferRef& b : g->buffers()) before.emplace_back(b.value.data(), b.value.data() + b.value.numel());
  const Tensor& y = g->forward(x.data(), {});
  Tensor dy(y.spec());
  for (int64_t i = 0; i < dy.numel(); ++i) dy.data()[i] = 0.1f * static_cast<float>(i % 3) - 0.1f;
  g->backward(dy, {});
  for (size_t i = 0; i < g->buffers().size(); ++i) {
    const BufferRef& b = g->buffers()[i];
    const bool frozen = b.name.rfind("block2.bn.", 0) == 0;
    EXPECT_EQ(b.frozen, frozen) << b.name;
    EXPECT_EQ(std::vector<float>(b.value.data(), b.value.data() + b.value.numel()) == before[i], frozen) << b.name;
  }
  for (const CounterRef& c : g->counters()) EXPECT_EQ(*c.value, c.name == "block2.bn.num_batches_tracked" ? 0 : 1);
  // The loss sum(y * dy) through the frozen batch norm: its gradient at block2's conv.
  const auto loss = [&] {
    const Tensor& out = g->forward(x.data(), {});
    double sum = 0;
    for (int64_t i = 0; i < out.numel(); ++i) sum += double{out.data()[i]} * dy.data()[i];
    return sum;
  };
  ParamRef& w = const_cast<ParamRef&>(param_named(*g, "block2.conv.weight"));
  g->forward(x.data(), {});
  g->backward(dy, {});
  EXPECT_LT(worst_relative_error(w, loss, 1e-2f, 7, 1e-2), 2e-2);
}

// input -> block1 (conv, bn, relu) -> block2 (conv, bn, then both relu and add read the bn) ->
// add -> relu -> flatten -> fc: block1's ReLU is the batch norm's only reader, the others not.
// `block1_relu` false: an identity (dropout with p = 0) in its place.
std::unique_ptr<Graph> relu_blocks(bool relu_in_batch_norm, Precision precision, bool training,
                                   bool block1_relu = true) {
  auto g = std::make_unique<Graph>(Shape{3, 6, 6});
  int x = g->add("block1.conv", Conv2d(conv3x3(3, 16)), {g->input()});
  x = g->add("block1.bn", BatchNorm2d(16), {x});
  x = block1_relu ? g->add("block1.relu", Relu(), {x}) : g->add("block1.relu", Dropout(0.0), {x});
  x = g->add("block2.conv", Conv2d(conv3x3(16, 16)), {x});
  const int bn = g->add("block2.bn", BatchNorm2d(16), {x});
  x = g->add("block2.relu", Relu(), {bn});
  x = g->add("add", Add(), {x, bn});
  x = g->add("relu", Relu(), {x});
  x = g->add("flatten", Flatten(), {x});
  g->add("fc", Linear(16 * 36, 5), {x});
  PlanContext context;
  context.precision = precision;
  context.relu_in_batch_norm = relu_in_batch_norm;
  g->plan(4, Device::kCpu, training, context);
  g->init_parameters(8);
  return g;
}

// One step of g on x, backward from a fixed output gradient where training; returns the output.
std::vector<float> step(Graph& g, const std::vector<float>& x, bool training = true) {
  const Tensor& y = g.forward(x.data(), {.training = training});
  std::vector<float> out(y.data(), y.data() + y.numel());
  if (training) {
    Tensor dy(y.spec());
    for (int64_t i = 0; i < dy.numel(); ++i) dy.data()[i] = 0.1f * static_cast<float>(i % 7) - 0.3f;
    g.backward(dy, {});
  }
  return out;
}

void expect_same_gradients(const Graph& a, const Graph& b) {
  for (const ParamRef& p : a.params()) {
    const ParamRef& q = param_named(b, p.name);
    ASSERT_EQ(p.grad.bytes(), q.grad.bytes());
    EXPECT_EQ(std::memcmp(p.grad.data(), q.grad.data(), p.grad.bytes()), 0) << p.name;
  }
}

std::string algorithm_of(const Graph& g, const std::string& name) {
  for (const LayerRow& row : g.layer_table())
    if (row.name == name) return row.algorithm;
  throw Error("no layer " + name);
}

// Note [ReLU in batch norm] in nn/graph.cpp: where a ReLU is the batch norm's only reader the
// batch norm applies it, and the outputs, every gradient and the running statistics are bit for
// bit those of the two layers apart; in training and in an inference plan.
void expect_relu_in_batch_norm_changes_nothing(Precision precision) {
  std::vector<float> x(4 * 3 * 6 * 6);
  Rng rng(3, 6);
  for (float& v : x) v = static_cast<float>(rng.uniform() - 0.5);
  for (bool training : {true, false}) {
    SCOPED_TRACE(training ? "training" : "inference");
    auto fused = relu_blocks(true, precision, training), apart = relu_blocks(false, precision, training);
    EXPECT_EQ(algorithm_of(*fused, "block1.relu"), "in batch norm");
    EXPECT_EQ(algorithm_of(*fused, "block2.relu"), "");  // the add reads the batch norm too
    EXPECT_EQ(algorithm_of(*fused, "relu"), "");
    EXPECT_EQ(algorithm_of(*apart, "block1.relu"), "");
    EXPECT_EQ(step(*fused, x, training), step(*apart, x, training));
    if (!training) continue;
    expect_same_gradients(*fused, *apart);
    for (size_t i = 0; i < fused->buffers().size(); ++i) {
      const Tensor &a = fused->buffers()[i].value, &b = apart->buffers()[i].value;
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.bytes()), 0) << fused->buffers()[i].name;
    }
    // The ReLU's mask matters here: without it block1's weight gradient differs.
    auto identity = relu_blocks(true, precision, training, /*block1_relu=*/false);
    step(*identity, x);
    const Tensor &masked = param_named(*fused, "block1.conv.weight").grad,
                 &unmasked = param_named(*identity, "block1.conv.weight").grad;
    EXPECT_NE(std::memcmp(masked.data(), unmasked.data(), masked.bytes()), 0);
  }
}

// A graph that ends in batch norm and ReLU: the ReLU's gradient is the caller's, copied to the
// batch norm's buffer, and the gradients are those of the two apart.
TEST(Graph, ReluInBatchNormAtTheGraphsEndTakesTheCallersGradient) {
  std::vector<std::unique_ptr<Graph>> graphs;
  for (bool relu_in_batch_norm : {true, false}) {
    auto g = std::make_unique<Graph>(Shape{3, 5, 5});
    int x = g->add("conv", Conv2d(conv3x3(3, 16)), {g->input()});
    x = g->add("bn", BatchNorm2d(16), {x});
    g->add("relu", Relu(), {x});
    PlanContext context;
    context.relu_in_batch_norm = relu_in_batch_norm;
    g->plan(2, Device::kCpu, true, context);
    g->init_parameters(4);
    graphs.push_back(std::move(g));
  }
  EXPECT_EQ(algorithm_of(*graphs[0], "relu"), "in batch norm");
  std::vector<float> x(2 * 3 * 5 * 5);
  Rng rng(5, 6);
  for (float& v : x) v = static_cast<float>(rng.uniform() - 0.5);
  EXPECT_EQ(step(*graphs[0], x), step(*graphs[1], x));
  expect_same_gradients(*graphs[0], *graphs[1]);
}

TEST(Graph, ReluInBatchNormChangesNoValueOrGradient) { expect_relu_in_batch_norm_changes_nothing(Precision::kFp32); }

TEST(Graph, ReluInBatchNormChangesNoBf16ValueOrGradient) {
  if (!cpu_bf16().runs) GTEST_SKIP() << "oneDNN 2.6 has no bf16 kernels on " << cpu_bf16().isa;
  expect_relu_in_batch_norm_changes_nothing(Precision::kBf16);
}

}  // namespace
}  // namespace rt::testing
