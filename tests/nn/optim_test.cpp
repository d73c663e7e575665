// SGD against a scalar re-implementation of torch.optim.SGD's update rule (double precision), the
// learning-rate schedules against their closed forms, and the softmax cross-entropy against
// hand-computed values.
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <memory>
#include <thread>
#include <vector>

#include "base/check.h"
#include "nn/graph.h"
#include "nn/layers/batch_norm2d.h"
#include "nn/layers/conv2d.h"
#include "nn/ops/softmax_cross_entropy.h"
#include "nn/optim/lr_schedule.h"
#include "nn/optim/lars.h"
#include "nn/optim/sgd.h"

namespace rt::testing {
namespace {

// torch.optim.SGD, dampening 0: d = g + wd w; buf = m buf + d (buf = d at first); w -= lr (nesterov ? d + m buf : buf).
struct TorchSgdScalar {
  double w, buf = 0;
  bool first = true;
  void step(double g, double lr, double m, double wd, bool nesterov) {
    const double d = g + wd * w;
    buf = first ? d : m * buf + d;
    first = false;
    w -= lr * (nesterov ? d + m * buf : buf);
  }
};

// A convolution with bias and a batch norm: weights, a bias and norm parameters, with padding
// between them in the arena.
void build_conv_bn(Graph& g, uint64_t seed) {
  Conv2dGeometry c = Conv2dGeometry::square(2, 2, 1);
  c.bias = true;
  g.add("conv", Conv2d(c), {g.input()});
  g.add("bn", BatchNorm2d(2), {1});
  g.plan(1, Device::kCpu);
  g.init_parameters(seed);
}

void check_sgd(bool nesterov) {
  Graph g(Shape{2, 3, 3});
  build_conv_bn(g, 3);
  Sgd sgd(g, SgdOptions{0.9, nesterov, 0.01, false});
  std::vector<std::vector<TorchSgdScalar>> ref;
  for (ParamRef& p : g.params()) {
    ref.emplace_back();
    for (int64_t i = 0; i < p.value.numel(); ++i) ref.back().push_back({p.value.data()[i]});
  }
  for (int step = 0; step < 3; ++step) {
    const double lr = 0.1 / (step + 1);
    for (size_t k = 0; k < g.params().size(); ++k) {
      ParamRef& p = g.params()[k];
      const bool decays = p.role == ParamRole::kWeight;
      for (int64_t i = 0; i < p.value.numel(); ++i) {
        const float grad = 0.3f * static_cast<float>(i + 1) - 0.5f * static_cast<float>(step);
        p.grad.data()[i] = grad;
        ref[k][i].step(grad, lr, 0.9, decays ? 0.01 : 0.0, nesterov);
      }
    }
    sgd.step(lr);
  }
  for (size_t k = 0; k < g.params().size(); ++k)
    for (int64_t i = 0; i < g.params()[k].value.numel(); ++i)
      EXPECT_NEAR(g.params()[k].value.data()[i], ref[k][i].w, 1e-6) << g.params()[k].name << "[" << i << "]";
}

TEST(Sgd, MomentumMatchesTorchsRuleAndSparesBiasAndNormFromDecay) { check_sgd(false); }

// Note [LARS] written out from You et al. 2017 and MLPerf's reference, in double precision, per
// tensor: trust = eta ||w|| / (||g|| + wd ||w|| + eps) (1 if a norm is 0) on the true gradient
// g = grad_scale x the arena's; v = m v + lr trust (g + wd w); w -= v. Biases and batch-norm
// parameters: v = m v + lr g; w -= v.
struct LarsReference {
  std::vector<double> w, v;
  bool weight;
  void step(const std::vector<double>& g, double lr, double m, double wd, double eta, double eps) {
    double wn = 0, gn = 0;
    for (size_t i = 0; i < w.size(); ++i) wn += w[i] * w[i], gn += g[i] * g[i];
    wn = std::sqrt(wn), gn = std::sqrt(gn);
    const double trust = weight && wn > 0 && gn > 0 ? eta * wn / (gn + wd * wn + eps) : 1.0;
    for (size_t i = 0; i < w.size(); ++i) {
      v[i] = m * v[i] + lr * trust * (g[i] + (weight ? wd * w[i] : 0.0));
      w[i] -= v[i];
    }
  }
};

TEST(Lars, TwentyStepsMatchTheFormulaOnAWeightABiasAndBatchNormParameters) {
  Graph g(Shape{2, 3, 3});
  build_conv_bn(g, 11);
  const double m = 0.94, wd = 5e-5, eta = 0.001, eps = 1e-9, grad_scale = 0.25;
  Lars lars(g, SgdOptions{m, false, wd, false}, LarsOptions{eta, eps});
  std::vector<LarsReference> ref;
  for (const ParamRef& p : g.params())
    ref.push_back({std::vector<double>(p.value.data(), p.value.data() + p.value.numel()),
                   std::vector<double>(static_cast<size_t>(p.value.numel()), 0.0), p.role == ParamRole::kWeight});
  ASSERT_GE(ref.size(), 4u);  // conv weight and bias, batch-norm scale and shift
  for (int step = 0; step < 20; ++step) {
    const double lr = 10.5 * (1 - step / 20.0) * (1 - step / 20.0);  // poly, as LARS runs
    for (size_t k = 0; k < g.params().size(); ++k) {
      ParamRef& p = g.params()[k];
      std::vector<double> true_grad;
      for (int64_t i = 0; i < p.value.numel(); ++i) {
        // Gradients of varied size and sign; step 3 leaves the bias's all zero (trust 1).
        const float grad = step == 3 && p.role == ParamRole::kBias
                               ? 0.0f
                               : 0.02f * std::sin(static_cast<float>(1 + i + 7 * step + 13 * k)) * (1 + k);
        p.grad.data()[i] = grad;
        true_grad.push_back(grad * grad_scale);
      }
      ref[k].step(true_grad, lr, m, wd, eta, eps);
    }
    lars.step(lr, grad_scale);
  }
  for (size_t k = 0; k < g.params().size(); ++k) {
    const ParamRef& p = g.params()[k];
    for (int64_t i = 0; i < p.value.numel(); ++i) {
      EXPECT_NEAR(p.value.data()[i], ref[k].w[static_cast<size_t>(i)], 1e-6) << p.name << "[" << i << "]";
      EXPECT_NEAR(lars.momentum(k).data()[i], ref[k].v[static_cast<size_t>(i)], 1e-6) << p.name << "[" << i << "]";
    }
  }
}

// Note [Norms across shards] in nn/optim/shard_norms.h: three "ranks" (threads, each with its own
// replica) update their own parts of the arena, parts that cut through the weight, summing the
// norms' pieces across them; put together, the parts equal the whole update with the same cuts, bit
// for bit, step after step.
TEST(Lars, ThreeRanksUpdatingTheirPartsEndWhereTheWholeUpdateEnds) {
  constexpr int kRanks = 3;
  const SgdOptions options{0.94, false, 5e-5, false};
  std::vector<std::unique_ptr<Graph>> graphs;
  for (int r = 0; r <= kRanks; ++r) {  // the last one takes the whole update
    graphs.push_back(std::make_unique<Graph>(Shape{2, 3, 3}));
    build_conv_bn(*graphs.back(), 11);
  }
  Graph& whole_graph = *graphs.back();
  const auto& all = whole_graph.params();
  const auto found =
      std::find_if(all.begin(), all.end(), [](const ParamRef& p) { return p.role == ParamRole::kWeight; });
  ASSERT_NE(found, all.end());
  const ParamRef& weight = *found;
  ASSERT_GE(weight.value.numel(), 4);
  const int64_t n = whole_graph.arena_floats();
  // Two cuts inside the weight, one through another parameter.
  const ParamRef& other = found == all.begin() ? all.back() : all.front();
  std::vector<int64_t> cuts = {weight.offset + 1, weight.offset + 3, other.offset + 1};
  std::sort(cuts.begin(), cuts.end());
  std::vector<std::unique_ptr<Lars>> sgds;
  for (auto& g : graphs) {
    sgds.push_back(std::make_unique<Lars>(*g, options, LarsOptions{0.001, 1e-9}));
    sgds.back()->set_part_cuts(cuts);
  }
  const int64_t bounds[kRanks + 1] = {0, cuts[0], cuts[2], n};
  std::vector<std::vector<double>> posted(kRanks);
  std::barrier sync(kRanks);
  for (int step = 0; step < 5; ++step) {
    const double lr = 2.0 / (step + 1);
    for (auto& g : graphs)
      for (ParamRef& p : g->params())
        for (int64_t i = 0; i < p.value.numel(); ++i)
          p.grad.data()[i] = 0.02f * std::sin(static_cast<float>(1 + i + 7 * step + 13 * p.offset));
    sgds.back()->step(lr);
    std::vector<std::thread> ranks;
    for (int r = 0; r < kRanks; ++r)
      ranks.emplace_back([&, r] {
        sgds[r]->update_part(lr, 0, n, bounds[r], bounds[r + 1], [&](std::vector<double>& sums) {
          posted[r] = sums;
          sync.arrive_and_wait();
          for (int other = 0; other < kRanks; ++other)
            if (other != r)
              for (size_t k = 0; k < sums.size(); ++k) sums[k] += posted[other][k];
          sync.arrive_and_wait();
        });
      });
    for (std::thread& t : ranks) t.join();
    // The all-gather: every replica takes each part from its owner.
    for (int r = 0; r < kRanks; ++r)
      for (int owner = 0; owner < kRanks; ++owner) {
        std::copy(graphs[owner]->param_arena() + bounds[owner], graphs[owner]->param_arena() + bounds[owner + 1],
                  graphs[r]->param_arena() + bounds[owner]);
        std::copy(sgds[owner]->momentum_arena() + bounds[owner], sgds[owner]->momentum_arena() + bounds[owner + 1],
                  sgds[r]->momentum_arena() + bounds[owner]);
      }
    for (int r = 0; r < kRanks; ++r) {
      ASSERT_EQ(std::vector<float>(graphs[r]->param_arena(), graphs[r]->param_arena() + n),
                std::vector<float>(whole_graph.param_arena(), whole_graph.param_arena() + n))
          << "rank " << r << ", step " << step;
      ASSERT_EQ(std::vector<float>(sgds[r]->momentum_arena(), sgds[r]->momentum_arena() + n),
                std::vector<float>(sgds.back()->momentum_arena(), sgds.back()->momentum_arena() + n))
          << "rank " << r << ", step " << step;
    }
  }
  EXPECT_EQ(sgds.back()->norm_pieces(0, n).size(), 3u);  // the weight in three pieces
}

TEST(Lars, RefusesACutThroughAParameterAndABadTrustCoefficient) {
  Graph g(Shape{2, 3, 3});
  build_conv_bn(g, 11);
  Lars lars(g, SgdOptions{0.9, false, 1e-4, false}, LarsOptions{0.001, 0});
  const ParamRef& first = g.params().front();
  ASSERT_GT(first.value.numel(), 1);
  EXPECT_THROW(lars.update(0.1, first.offset, first.offset + first.value.numel() - 1), Error);
  EXPECT_THROW(Lars(g, SgdOptions{0.9, false, 1e-4, false}, LarsOptions{-0.001, 0}), Error);
}
TEST(Sgd, NesterovMatchesTorchsRule) { check_sgd(true); }

// Note [Sharded update] in dist/ring_schedule.h: ranks apply SGD to arbitrary arena ranges, cutting
// through parameters and the alignment padding between them; together the pieces must give the
// whole step, bit for bit.
TEST(Sgd, UpdatingTheArenaInPiecesEqualsOneWholeStep) {
  Graph g(Shape{2, 3, 3});
  build_conv_bn(g, 5);
  Sgd sgd(g, SgdOptions{0.9, true, 0.01, false});
  const int64_t n = g.arena_floats();
  // Parameter elements only: alignment padding is zero in every arena, as the graph makes them.
  for (const ParamRef& p : g.params())
    for (int64_t i = p.offset; i < p.offset + p.value.numel(); ++i) {
      g.grad_arena()[i] = 0.25f * static_cast<float>(i % 7) - 0.5f;
      sgd.momentum_arena()[i] = 0.125f * static_cast<float>(i % 5);
    }
  const std::vector<float> w0(g.param_arena(), g.param_arena() + n), v0(sgd.momentum_arena(), sgd.momentum_arena() + n);
  sgd.step(0.1);
  const std::vector<float> w1(g.param_arena(), g.param_arena() + n), v1(sgd.momentum_arena(), sgd.momentum_arena() + n);
  ASSERT_NE(w0, w1);
  std::copy(w0.begin(), w0.end(), g.param_arena());
  std::copy(v0.begin(), v0.end(), sgd.momentum_arena());
  const int64_t cuts[] = {0, 3, 17, n / 2 + 1, n - 1, n};
  for (size_t k = 5; k-- > 0;) sgd.update(0.1, cuts[k], cuts[k + 1]);  // in any order
  EXPECT_EQ(std::vector<float>(g.param_arena(), g.param_arena() + n), w1);
  EXPECT_EQ(std::vector<float>(sgd.momentum_arena(), sgd.momentum_arena() + n), v1);
  // Updates run across the padding between parameters (one call per run of equal steps) and
  // leave it zero.
  int64_t padding = 0;
  for (size_t k = 0; k < g.params().size(); ++k) {
    const ParamRef& p = g.params()[k];
    const int64_t next = k + 1 < g.params().size() ? g.params()[k + 1].offset : n;
    for (int64_t i = p.offset + p.value.numel(); i < next; ++i, ++padding) {
      ASSERT_EQ(g.param_arena()[i], 0.0f) << "padding float " << i;
      ASSERT_EQ(sgd.momentum_arena()[i], 0.0f) << "padding float " << i;
    }
  }
  EXPECT_GT(padding, 0);
}

TEST(LrSchedule, WarmupRisesLinearlyToTheBase) {
  LrSchedule s;
  s.base = 0.4;
  s.warmup_steps = 4;
  EXPECT_DOUBLE_EQ(s.at(0), 0.1);
  EXPECT_DOUBLE_EQ(s.at(3), 0.4);
  EXPECT_DOUBLE_EQ(s.at(100), 0.4);
}

TEST(LrSchedule, StepMultipliesAtEachMilestone) {
  LrSchedule s;
  s.kind = LrSchedule::Kind::kStep;
  s.base = 1.0;
  s.milestones = {10, 20};
  s.factor = 0.1;
  EXPECT_DOUBLE_EQ(s.at(9), 1.0);
  EXPECT_DOUBLE_EQ(s.at(10), 0.1);
  EXPECT_NEAR(s.at(25), 0.01, 1e-15);
}

TEST(LrSchedule, CosineFallsFromBaseToTheFinalFractionAfterWarmup) {
  LrSchedule s;
  s.kind = LrSchedule::Kind::kCosine;
  s.base = 2.0;
  s.warmup_steps = 10;
  s.total_steps = 110;
  s.final_fraction = 0.1;
  EXPECT_DOUBLE_EQ(s.at(10), 2.0);
  EXPECT_NEAR(s.at(60), 2.0 * (0.1 + 0.9 * 0.5), 1e-12);  // halfway: cos(pi/2) = 0
  EXPECT_NEAR(s.at(110), 0.2, 1e-12);
}

TEST(LrSchedule, PolyFallsAsAPowerOfTheStepsLeftToTheFinalFraction) {
  LrSchedule s;
  s.kind = LrSchedule::Kind::kPoly;
  s.base = 8.0;
  s.warmup_steps = 10;
  s.total_steps = 110;
  s.final_fraction = 0.01;
  s.power = 2;
  EXPECT_DOUBLE_EQ(s.at(9), 8.0);
  EXPECT_DOUBLE_EQ(s.at(10), 8.0);
  EXPECT_NEAR(s.at(60), (8.0 - 0.08) * 0.25 + 0.08, 1e-12);  // halfway: (1 - 1/2)^2
  EXPECT_NEAR(s.at(110), 0.08, 1e-12);
  EXPECT_NEAR(s.at(500), 0.08, 1e-12);  // past the end it stays there
}

TEST(LrSchedule, ScalesLinearlyWithTheGlobalBatch) {
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, 256), 0.1);
  EXPECT_DOUBLE_EQ(scaled_lr(0.1, 8192), 3.2);  // Goyal et al.: 32 x 256
}

TEST(SoftmaxCrossEntropy, ALabelOutsideTheClassesNamesItsSample) {
  Tensor z(plain_spec({3, 4}));
  const int32_t targets[3] = {0, 4, 1};
  try {
    softmax_cross_entropy(z, targets, 0.0, nullptr);
    FAIL() << "label 4 of 4 classes was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("sample 1 of the batch has label 4, expected 0..3"), std::string::npos)
        << e.what();
  }
}

TEST(SoftmaxCrossEntropy, MatchesHandComputedLossGradientAndTopK) {
  // Logits (0, ln 2, ln 3): softmax = (1, 2, 3) / 6.
  Tensor z(plain_spec({2, 3}));
  const float l2 = std::log(2.0f), l3 = std::log(3.0f);
  const float values[] = {0, l2, l3, 0, l2, l3};
  std::copy(values, values + 6, z.data());
  const int32_t t[] = {2, 0};
  Tensor dz(z.spec());
  const LossResult r = softmax_cross_entropy(z, t, 0.0, &dz);
  EXPECT_NEAR(r.loss, (-std::log(3.0 / 6) - std::log(1.0 / 6)) / 2, 1e-6);
  EXPECT_EQ(r.correct1, 1);
  EXPECT_EQ(r.correct5, 2);
  const double p[] = {1.0 / 6, 2.0 / 6, 3.0 / 6};
  for (int k = 0; k < 3; ++k) {
    EXPECT_NEAR(dz.data()[k], (p[k] - (k == 2)) / 2, 1e-6);
    EXPECT_NEAR(dz.data()[3 + k], (p[k] - (k == 0)) / 2, 1e-6);
  }
  // Label smoothing 0.3 on K = 3: q = 0.7 one_hot + 0.1.
  const LossResult s = softmax_cross_entropy(z, t, 0.3, &dz);
  double expect = 0;
  for (int n = 0; n < 2; ++n)
    for (int k = 0; k < 3; ++k) expect -= ((k == t[n]) * 0.7 + 0.1) * std::log(p[k]) / 2;
  EXPECT_NEAR(s.loss, expect, 1e-6);
  EXPECT_NEAR(dz.data()[0], (p[0] - 0.1) / 2, 1e-6);
  // A diverged model's logits: NaN compares false with everything, which must not make every
  // row count as right (a run whose loss went to NaN once scored 100% top-1).
  std::fill(z.data(), z.data() + 6, std::nanf(""));
  const LossResult nan = softmax_cross_entropy(z, t, 0.0, nullptr);
  EXPECT_EQ(nan.correct1, 0);
  EXPECT_EQ(nan.correct5, 0);
}

}  // namespace
}  // namespace rt::testing
