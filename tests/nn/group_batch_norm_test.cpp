// Note [Group batch norm] against the batch-norm kernel itself: two "ranks" (threads, a barrier
// as their group) each holding half of a batch must compute what one kernel computes on the
// whole batch: outputs, input gradients, the sum of their gamma and beta gradients, and the
// running statistics, to the rounding of their sums (Note [Bounds from the sums]).
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

// The largest |v|: the scale relative_gap divides by.
double largest(const float* v, int64_t n) {
  double m = 1e-30;
  for (int64_t i = 0; i < n; ++i) m = std::max(m, std::abs(static_cast<double>(v[i])));
  return m;
}

// The largest |a - b| relative to b's largest magnitude.
double relative_gap(const float* a, const float* b, int64_t n) {
  double gap = 0;
  for (int64_t i = 0; i < n; ++i) gap = std::max(gap, std::abs(static_cast<double>(a[i]) - b[i]));
  return gap / largest(b, n);
}

// Note [Bounds from the sums]: the group and the whole-batch kernel differ only in the order of
// their per-channel sums (two halves averaged, or one sum over the M = N H W pixels in whichever
// order the instruction set's kernel takes), so each bound is the error of such a sum carried
// through batch norm's formulas to first order, computed in double from the test's own data.
// Higham and Mary's probabilistic bound for a float32 sum of M terms in any order is
// lambda sqrt(M) u sum |terms|, broken with probability at most 2 M exp(-lambda^2 / 2): lambda = 7
// puts that under 1e-6 at M = 6272. Two sums, the group's and the kernel's, give twice that.
struct GroupBounds {
  double y = 0, dx = 0, mean = 0, var = 0, dgamma = 0, dbeta = 0;  // absolute, largest over channels
};

GroupBounds group_bounds(const Tensor& x, const Tensor& dy, const Tensor& gamma, bool blocked,
                         const BatchNormOptions& options) {
  const Shape& s = x.shape();
  const int64_t C = s[1], HW = s[2] * s[3];
  const double M = static_cast<double>(s[0] * HW), u = std::ldexp(1.0, -24);
  const double sum_error = 2 * 7 * std::sqrt(M) * u;
  // Channel of flat element i: plain NCHW, or nChw16c's blocks of 16 channels a pixel.
  auto channel = [&](int64_t i) {
    return static_cast<size_t>(blocked ? (i / (16 * HW)) % (C / 16) * 16 + i % 16 : (i / HW) % C);
  };
  const size_t n = static_cast<size_t>(C);
  std::vector<double> mu(n), abs_x(n), var(n), g1(n), a1(n), g2(n), a2(n), xhat_max(n);
  for (int64_t i = 0; i < x.numel(); ++i) mu[channel(i)] += x.data()[i] / M;
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t c = channel(i);
    const double d = x.data()[i] - mu[c];
    abs_x[c] += std::abs(x.data()[i]) / M, var[c] += d * d / M;
  }
  for (int64_t i = 0; i < x.numel(); ++i) {
    const size_t c = channel(i);
    const double xhat = (x.data()[i] - mu[c]) / std::sqrt(var[c] + options.eps), g = dy.data()[i];
    xhat_max[c] = std::max(xhat_max[c], std::abs(xhat));
    g1[c] += g / M, a1[c] += std::abs(g) / M, g2[c] += g * xhat / M, a2[c] += std::abs(g * xhat) / M;
  }
  GroupBounds b;
  for (size_t c = 0; c < n; ++c) {
    const double sigma = std::sqrt(var[c] + options.eps), gam = std::abs(gamma.data()[c]);
    const double d_mu = sum_error * abs_x[c];
    const double d_var = sum_error * var[c] + 4 * u * abs_x[c] * sigma;  // the sum, and x - mu's rounding
    const double d_sigma = d_var / (2 * sigma * sigma);                  // relative
    const double d_xhat = d_mu / sigma + xhat_max[c] * d_sigma;
    const double d_g1 = sum_error * a1[c], d_g2 = sum_error * a2[c] + a1[c] * d_xhat;  // mean(dy), mean(dy xhat)
    const double dx_max = gam / sigma * (a1[c] + std::abs(g1[c]) + xhat_max[c] * std::abs(g2[c]));
    b.y = std::max(b.y, gam * d_xhat);
    b.dx = std::max(b.dx, gam / sigma * (d_g1 + xhat_max[c] * d_g2 + std::abs(g2[c]) * d_xhat) + dx_max * d_sigma);
    b.mean = std::max(b.mean, options.momentum * d_mu);
    b.var = std::max(b.var, options.momentum * d_var * M / (M - 1));
    b.dgamma = std::max(b.dgamma, M * d_g2);
    b.dbeta = std::max(b.dbeta, M * d_g1);
  }
  return b;
}

// A bound on an absolute error as relative_gap's figure against reference v, plus a few roundings
// of the elementwise steps both sides take.
double relative_bound(double absolute, const float* v, int64_t n) {
  return absolute / largest(v, n) + 8 * std::ldexp(1.0, -24);
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
  const GroupBounds bound = group_bounds(x, dy, gamma, blocked, options);  // Note [Bounds from the sums]

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
      EXPECT_LT(relative_gap(k.y.data(), y.data() + r * n, n), relative_bound(bound.y, y.data() + r * n, n))
          << "rank " << r << "'s outputs";
      EXPECT_LT(relative_gap(k.dx.data(), dx.data() + r * n, n), relative_bound(bound.dx, dx.data() + r * n, n))
          << "rank " << r << "'s input gradients";
      EXPECT_LT(relative_gap(k.mean.data(), running_mean.data(), C), relative_bound(bound.mean, running_mean.data(), C))
          << "rank " << r << "'s running mean";
      EXPECT_LT(relative_gap(k.var.data(), running_var.data(), C), relative_bound(bound.var, running_var.data(), C))
          << "rank " << r << "'s running variance";
    }
    std::vector<float> dgamma_sum(static_cast<size_t>(C)), dbeta_sum(static_cast<size_t>(C));
    for (int64_t c = 0; c < C; ++c) {
      dgamma_sum[static_cast<size_t>(c)] = ranks[0].dgamma.data()[c] + ranks[1].dgamma.data()[c];
      dbeta_sum[static_cast<size_t>(c)] = ranks[0].dbeta.data()[c] + ranks[1].dbeta.data()[c];
    }
    EXPECT_LT(relative_gap(dgamma_sum.data(), dgamma.data(), C), relative_bound(bound.dgamma, dgamma.data(), C));
    EXPECT_LT(relative_gap(dbeta_sum.data(), dbeta.data(), C), relative_bound(bound.dbeta, dbeta.data(), C));
  }
  // Each half normalised alone, as without a group, is ten bounds away from the whole batch: the
  // checks above can fail.
  const Tensor x0 = rows(x, 0, half, blocked), dy0 = rows(dy, 0, half, blocked);
  const int64_t n = x0.numel();
  std::unique_ptr<BatchNormOp> alone = make_batch_norm(options, x0.spec());
  Tensor y_alone(x0.spec()), dx_alone(x0.spec()), m(plain_spec({C})), v(plain_spec({C}));
  alone->forward_training(x0, gamma, beta, y_alone, m, v);
  alone->backward_training(x0, gamma, beta, dy0, dx_alone, m, v);
  EXPECT_GT(relative_gap(y_alone.data(), y.data(), n), 10 * relative_bound(bound.y, y.data(), n));
  EXPECT_GT(relative_gap(dx_alone.data(), dx.data(), n), 10 * relative_bound(bound.dx, dx.data(), n));
}

INSTANTIATE_TEST_SUITE_P(Layouts, GroupBatchNormIn, testing::Values(false, true),
                         [](const testing::TestParamInfo<bool>& p) { return p.param ? "nChw16c" : "plain"; });

}  // namespace
}  // namespace rt
