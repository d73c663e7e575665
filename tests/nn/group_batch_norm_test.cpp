// Note [Group batch norm] against the batch-norm kernel itself: two "ranks" (threads, a barrier
// as their group) each holding half of a batch must compute what one kernel computes on the
// whole batch: outputs, input gradients, the sum of their gamma and beta gradients, and the
// running statistics, to float rounding.
#include "nn/layers/group_batch_norm.h"

#include <gtest/gtest.h>

#include <barrier>
#include <cmath>
#include <random>
#include <thread>
#include <vector>

#include "nn/ops/cpu/dnnl_util.h"

namespace rt {
namespace {

// Two members whose average() meet at a barrier: each contributes, both read the same sums.
struct ThreadPair {
  std::barrier<> meet{2};
  std::vector<float> given[2];
  BatchNormGroup member(int r) {
    return BatchNormGroup{2, [this, r](float* v, int64_t n) {
                            given[r].assign(v, v + n);
                            meet.arrive_and_wait();
                            for (int64_t i = 0; i < n; ++i) v[i] = (given[0][i] + given[1][i]) / 2;
                            meet.arrive_and_wait();
                          }};
  }
};

// Plain NCHW, or oneDNN's nChw16c (aBcd16b) as convolutions hand it to batch norm on the CPU.
TensorSpec spec_in(Shape shape, bool blocked) {
  if (!blocked) return plain_spec(shape);
  const dnnl::memory::dims dims(shape.begin(), shape.end());
  return cpu::spec_of(shape, dnnl::memory::desc(dims, dnnl::memory::data_type::f32, dnnl::memory::format_tag::aBcd16b));
}

Tensor random_tensor(const TensorSpec& spec, std::mt19937& rng, float mean, float sd) {
  Tensor t(spec);
  std::normal_distribution<float> d(mean, sd);
  for (int64_t i = 0; i < t.numel(); ++i) t.data()[i] = d(rng);
  return t;
}

// Images [first, first + count): N is the outermost dimension in both layouts.
Tensor rows(const Tensor& t, int64_t first, int64_t count, bool blocked) {
  Shape s = t.shape();
  const int64_t per_row = t.numel() / s[0];
  s[0] = count;
  Tensor r(spec_in(s, blocked));
  std::copy(t.data() + first * per_row, t.data() + (first + count) * per_row, r.data());
  return r;
}

// The largest |a - b| relative to b's largest magnitude.
double relative_gap(const float* a, const float* b, int64_t n) {
  double gap = 0, scale = 1e-30;
  for (int64_t i = 0; i < n; ++i) {
    gap = std::max(gap, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return gap / scale;
}

class GroupBatchNormIn : public testing::TestWithParam<bool> {};  // blocked?

TEST_P(GroupBatchNormIn, TwoRanksOfSixteenComputeWhatOneRankOfThirtyTwoDoes) {
  const bool blocked = GetParam();
  // The blocked case at the size of a ResNet stage's batch norm.
  const int64_t C = blocked ? 64 : 5, H = blocked ? 14 : 4, W = blocked ? 14 : 3, half = 16;
  std::mt19937 rng(7);
  // Far from 0: the variance's cancellation would show.
  const Tensor x = random_tensor(spec_in({2 * half, C, H, W}, blocked), rng, 3.0f, 0.7f);
  const Tensor dy = random_tensor(spec_in({2 * half, C, H, W}, blocked), rng, 0.1f, 1.0f);
  const Tensor gamma = random_tensor(plain_spec({C}), rng, 1.0f, 0.3f);
  const Tensor beta = random_tensor(plain_spec({C}), rng, 0.0f, 0.3f);
  const BatchNormOptions options{1e-5, 0.1};

  // One rank, the whole batch.
  std::unique_ptr<BatchNormOp> whole = make_batch_norm(options, x.spec());
  Tensor y(x.spec()), dx(x.spec()), dgamma(plain_spec({C})), dbeta(plain_spec({C}));
  Tensor running_mean(plain_spec({C})), running_var(plain_spec({C}));
  for (int64_t c = 0; c < C; ++c) running_mean.data()[c] = 0.5f, running_var.data()[c] = 2.0f;
  whole->forward_training(x, gamma, beta, y, running_mean, running_var);
  whole->backward_training(x, gamma, beta, dy, dx, dgamma, dbeta);

  // Two ranks of half each; the input gradient in memory of its own, and as the memory plan may
  // place it: over the input, or over the output gradient.
  enum class Dx { kOwn, kOverX, kOverDy };
  struct Rank {
    Tensor x, dy, y, dx, dgamma, dbeta, mean, var;
  };
  std::vector<Rank> ranks;
  for (Dx where : {Dx::kOwn, Dx::kOverX, Dx::kOverDy}) {
    SCOPED_TRACE(where == Dx::kOwn ? "dx apart" : where == Dx::kOverX ? "dx over x" : "dx over dy");
    ThreadPair pair;
    ranks.clear();
    for (int r = 0; r < 2; ++r) {
      Rank k{rows(x, r * half, half, blocked),
             rows(dy, r * half, half, blocked),
             Tensor(),
             Tensor(),
             Tensor(plain_spec({C})),
             Tensor(plain_spec({C})),
             Tensor(plain_spec({C})),
             Tensor(plain_spec({C}))};
      k.y = Tensor(k.x.spec());
      k.dx = where == Dx::kOwn ? Tensor(k.x.spec()) : where == Dx::kOverX ? k.x : k.dy;  // shares storage
      for (int64_t c = 0; c < C; ++c) k.mean.data()[c] = 0.5f, k.var.data()[c] = 2.0f;
      ranks.push_back(std::move(k));
    }
    std::vector<std::thread> threads;
    for (int r = 0; r < 2; ++r)
      threads.emplace_back([&, r] {
        Rank& k = ranks[static_cast<size_t>(r)];
        const BatchNormGroup group = pair.member(r);
        std::unique_ptr<BatchNormOp> op = make_batch_norm(options, k.x.spec());
        GroupBatchNorm g(group, options, k.x.spec());
        g.forward_training(*op, k.x, gamma, beta, k.y, k.mean, k.var);
        g.backward_training(*op, k.x, gamma, beta, k.dy, k.dx, k.dgamma, k.dbeta);
      });
    for (std::thread& t : threads) t.join();

    const int64_t n = ranks[0].y.numel();
    for (int r = 0; r < 2; ++r) {
      const Rank& k = ranks[static_cast<size_t>(r)];
      EXPECT_LT(relative_gap(k.y.data(), y.data() + r * n, n), 1e-5) << "rank " << r << "'s outputs";
      EXPECT_LT(relative_gap(k.dx.data(), dx.data() + r * n, n), 1e-5) << "rank " << r << "'s input gradients";
      EXPECT_LT(relative_gap(k.mean.data(), running_mean.data(), C), 1e-6) << "rank " << r << "'s running mean";
      EXPECT_LT(relative_gap(k.var.data(), running_var.data(), C), 1e-5) << "rank " << r << "'s running variance";
    }
    std::vector<float> dgamma_sum(static_cast<size_t>(C)), dbeta_sum(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      dgamma_sum[static_cast<size_t>(c)] = ranks[0].dgamma.data()[c] + ranks[1].dgamma.data()[c];
      dbeta_sum[static_cast<size_t>(c)] = ranks[0].dbeta.data()[c] + ranks[1].dbeta.data()[c];
    }
    // Sums of thousands of float products, in another order.
    EXPECT_LT(relative_gap(dgamma_sum.data(), dgamma.data(), C), 1e-4);
    EXPECT_LT(relative_gap(dbeta_sum.data(), dbeta.data(), C), 1e-4);
  }
  // Each half normalised alone, as without a group, is far from the whole batch: the checks above
  // can fail.
  const Tensor x0 = rows(x, 0, half, blocked), dy0 = rows(dy, 0, half, blocked);
  const int64_t n = x0.numel();
  std::unique_ptr<BatchNormOp> alone = make_batch_norm(options, x0.spec());
  Tensor y_alone(x0.spec()), dx_alone(x0.spec()), m(plain_spec({C})), v(plain_spec({C}));
  alone->forward_training(x0, gamma, beta, y_alone, m, v);
  alone->backward_training(x0, gamma, beta, dy0, dx_alone, m, v);
  EXPECT_GT(relative_gap(y_alone.data(), y.data(), n), 1e-3);
  EXPECT_GT(relative_gap(dx_alone.data(), dx.data(), n), 1e-3);
}

INSTANTIATE_TEST_SUITE_P(Layouts, GroupBatchNormIn, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& p) { return p.param ? "nChw16c" : "plain"; });

}  // namespace
}  // namespace rt
