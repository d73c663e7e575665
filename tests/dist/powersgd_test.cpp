// PowerSGD's method (Note [PowerSGD] in dist/powersgd.h), on ranks simulated in one process: the
// compression rule at its boundaries, the orthonormalization, the closed form at full rank, and
// three steps with error feedback and warm start against a second implementation in double.
#include "dist/powersgd.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <utility>
#include <vector>

namespace rt {
namespace {

using Matrix = std::vector<float>;

Matrix random_matrix(int64_t size, std::mt19937& rng) {
  std::normal_distribution<float> normal;
  Matrix a(static_cast<size_t>(size));
  for (float& x : a) x = normal(rng);
  return a;
}

// a: rows x k, stored column after column, as PowerSgdMatrix keeps P and Q.
double dot_of_columns(const Matrix& a, int64_t rows, int64_t c, int64_t d) {
  double s = 0;
  for (int64_t i = 0; i < rows; ++i)
    s += double{a[static_cast<size_t>(c * rows + i)]} * a[static_cast<size_t>(d * rows + i)];
  return s;
}

TEST(PowerSgdRule, IsPyTorchsStrictInequalityOverMatricesOfTwoOrMoreDimensions) {
  EXPECT_EQ(powersgd_rank({4096, 25088}, 4, 2), 4);  // VGG-16's first classifier layer
  EXPECT_EQ(powersgd_rank({64, 3, 3, 3}, 1, 2), 1);  // a convolution, viewed as 64 x 27
  EXPECT_EQ(powersgd_rank({8, 8}, 1, 2), 1);         // 1 x 16 x 2 = 32 < 64
  EXPECT_EQ(powersgd_rank({8, 8}, 1, 4), 0);         // 64 < 64 is false
  EXPECT_EQ(powersgd_rank({3, 100}, 4, 2), 0);       // k = 3: 3 x 103 x 2 = 618, not below 300
  EXPECT_EQ(powersgd_rank({4, 1000}, 8, 0.5), 4);    // k = min(n, m, rank): 4 x 1004 x 0.5 < 4000
  EXPECT_EQ(powersgd_rank({4096}, 4, 0.01), 0);      // one dimension: never (PyTorch would here)
  EXPECT_EQ(powersgd_rank({4096, 4096}, 0, 2), 0);
}

TEST(PowerSgdOrthonormalize, GivesOrthonormalColumnsSpanningTheSameSpace) {
  std::mt19937 rng(1);
  const int64_t rows = 1000, k = 4;
  Matrix a = random_matrix(rows * k, rng);
  const Matrix before = a;
  orthonormalize_columns(a.data(), rows, k);
  for (int64_t c = 0; c < k; ++c)
    for (int64_t d = 0; d < k; ++d) EXPECT_NEAR(dot_of_columns(a, rows, c, d), c == d ? 1.0 : 0.0, 1e-5);
  // Gram-Schmidt keeps the first column's direction.
  double along = 0;
  for (int64_t i = 0; i < rows; ++i) along += double{before[static_cast<size_t>(i)]} * a[static_cast<size_t>(i)];
  const double cosine = along / std::sqrt(dot_of_columns(before, rows, 0, 0));
  EXPECT_NEAR(cosine, 1.0, 1e-6);
}

TEST(PowerSgdOrthonormalize, LeavesAZeroColumnZero) {
  std::mt19937 rng(2);
  const int64_t rows = 50, k = 3;
  Matrix a = random_matrix(rows * k, rng);
  for (int64_t i = 0; i < rows; ++i) a[static_cast<size_t>(rows + i)] = 0;
  orthonormalize_columns(a.data(), rows, k);
  for (int64_t i = 0; i < rows; ++i) EXPECT_EQ(a[static_cast<size_t>(rows + i)], 0.0f);
  EXPECT_NEAR(dot_of_columns(a, rows, 0, 0), 1.0, 1e-6);
  EXPECT_NEAR(dot_of_columns(a, rows, 2, 2), 1.0, 1e-6);
  EXPECT_NEAR(dot_of_columns(a, rows, 0, 2), 0.0, 1e-6);
}

// Ranks simulated in one process; the averages are plain means, in rank order. Every rank holds
// the same averages, so rank 0's result stands for all.
struct Simulated {
  PowerSgdMatrix t;
  std::vector<Matrix> errors;
  Matrix q;  // carried: the last step's average

  // One compressed step: the average of `grads` every rank applies.
  Matrix step(const std::vector<Matrix>& grads) {
    const size_t w = grads.size();
    std::vector<Matrix> p(w, Matrix(static_cast<size_t>(t.n * t.k)));
    std::vector<Matrix> q_local(w, Matrix(static_cast<size_t>(t.m * t.k)));
    std::vector<Matrix> q_own(w, q);
    for (size_t r = 0; r < w; ++r) t.compress(grads[r].data(), errors[r].data(), q_own[r].data(), p[r].data());
    const Matrix p_mean = mean(p);
    std::vector<Matrix> p_own(w, p_mean);
    for (size_t r = 0; r < w; ++r) t.project(errors[r].data(), p_own[r].data(), q_local[r].data());
    q = mean(q_local);
    std::vector<Matrix> out(w, Matrix(static_cast<size_t>(t.n * t.m)));
    for (size_t r = 0; r < w; ++r) t.decompress(p_own[r].data(), q.data(), out[r].data(), errors[r].data());
    return out[0];
  }

  static Matrix mean(const std::vector<Matrix>& all) {
    Matrix m(all[0].size(), 0.0f);
    for (const Matrix& a : all)
      for (size_t i = 0; i < m.size(); ++i) m[i] += a[i];
    for (float& x : m) x /= static_cast<float>(all.size());
    return m;
  }
};

Simulated simulated(int64_t n, int64_t m, int64_t k, size_t ranks, const Matrix& q0) {
  return {{n, m, k}, std::vector<Matrix>(ranks, Matrix(static_cast<size_t>(n * m), 0.0f)), q0};
}

TEST(PowerSgdStep, CompressStartsFromAnOrthonormalQ) {
  std::mt19937 rng(5);
  const PowerSgdMatrix t{6, 40, 3};
  const Matrix grad = random_matrix(t.n * t.m, rng);
  Matrix error(static_cast<size_t>(t.n * t.m), 0.0f), q = random_matrix(t.m * t.k, rng);
  Matrix p(static_cast<size_t>(t.n * t.k));
  t.compress(grad.data(), error.data(), q.data(), p.data());
  for (int64_t c = 0; c < t.k; ++c)
    for (int64_t d = 0; d < t.k; ++d) EXPECT_NEAR(dot_of_columns(q, t.m, c, d), c == d ? 1.0 : 0.0, 1e-5);
  EXPECT_EQ(error, grad);  // the error (zero) plus the gradient: M
}

TEST(PowerSgdStep, AtFullRankIsThePlainAverageAndTheErrorsCancel) {
  std::mt19937 rng(3);
  const int64_t n = 3, m = 5, k = 3;  // P is 3 x 3 and orthonormal: P P^T = I
  Simulated s = simulated(n, m, k, 3, random_matrix(m * k, rng));
  const std::vector<Matrix> grads = {random_matrix(n * m, rng), random_matrix(n * m, rng), random_matrix(n * m, rng)};
  const Matrix out = s.step(grads);
  const Matrix average = Simulated::mean(grads);
  for (size_t i = 0; i < out.size(); ++i) {
    EXPECT_NEAR(out[i], average[i], 1e-5) << "element " << i;
    EXPECT_NEAR(s.errors[0][i] + s.errors[1][i] + s.errors[2][i], 0.0, 1e-5) << "element " << i;
  }
}

// A second implementation, in double, written from the method's formulas.
struct Reference {
  int64_t n, m, k;
  std::vector<std::vector<double>> errors;
  std::vector<double> q;
  bool error_feedback = true;

  static void gram_schmidt(std::vector<double>& a, int64_t rows, int64_t k) {
    for (int64_t c = 0; c < k; ++c) {
      double norm = 0;
      for (int64_t i = 0; i < rows; ++i) norm += a[static_cast<size_t>(i * k + c)] * a[static_cast<size_t>(i * k + c)];
      norm = std::sqrt(norm);
      for (int64_t i = 0; i < rows; ++i) a[static_cast<size_t>(i * k + c)] /= norm;
      for (int64_t d = c + 1; d < k; ++d) {
        double dot = 0;
        for (int64_t i = 0; i < rows; ++i) dot += a[static_cast<size_t>(i * k + c)] * a[static_cast<size_t>(i * k + d)];
        for (int64_t i = 0; i < rows; ++i) a[static_cast<size_t>(i * k + d)] -= dot * a[static_cast<size_t>(i * k + c)];
      }
    }
  }

  std::vector<double> step(const std::vector<Matrix>& grads) {
    const auto w = static_cast<double>(grads.size());
    std::vector<std::vector<double>> M;
    for (size_t r = 0; r < grads.size(); ++r) {
      M.emplace_back(grads[r].begin(), grads[r].end());
      if (error_feedback)
        for (size_t i = 0; i < M[r].size(); ++i) M[r][i] += errors[r][i];
    }
    gram_schmidt(q, m, k);
    std::vector<double> p(static_cast<size_t>(n * k), 0.0), q_new(static_cast<size_t>(m * k), 0.0);
    for (const auto& mr : M)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j)
          for (int64_t c = 0; c < k; ++c)
            p[static_cast<size_t>(i * k + c)] +=
                mr[static_cast<size_t>(i * m + j)] * q[static_cast<size_t>(j * k + c)] / w;
    gram_schmidt(p, n, k);
    for (const auto& mr : M)
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < m; ++j)
          for (int64_t c = 0; c < k; ++c)
            q_new[static_cast<size_t>(j * k + c)] +=
                mr[static_cast<size_t>(i * m + j)] * p[static_cast<size_t>(i * k + c)] / w;
    q = std::move(q_new);
    std::vector<double> out(static_cast<size_t>(n * m), 0.0);
    for (int64_t i = 0; i < n; ++i)
      for (int64_t j = 0; j < m; ++j)
        for (int64_t c = 0; c < k; ++c)
          out[static_cast<size_t>(i * m + j)] += p[static_cast<size_t>(i * k + c)] * q[static_cast<size_t>(j * k + c)];
    for (size_t r = 0; r < M.size(); ++r)
      for (size_t i = 0; i < out.size(); ++i) errors[r][i] = M[r][i] - out[i];
    return out;
  }
};

// The largest difference over three steps, relative to the largest element of the reference.
double worst_difference(bool reference_has_error_feedback) {
  std::mt19937 rng(4);
  const int64_t n = 22, m = 30, k = 2;  // n: four-row blocks and two rows after; m: lanes and a tail
  const size_t ranks = 3;
  const Matrix q0 = random_matrix(m * k, rng);              // by columns, as PowerSgdMatrix keeps it
  std::vector<double> q0_rows(static_cast<size_t>(m * k));  // the reference's m x k
  for (int64_t j = 0; j < m; ++j)
    for (int64_t c = 0; c < k; ++c) q0_rows[static_cast<size_t>(j * k + c)] = q0[static_cast<size_t>(c * m + j)];
  Simulated s = simulated(n, m, k, ranks, q0);
  Reference ref{n,       m,
                k,       std::vector<std::vector<double>>(ranks, std::vector<double>(static_cast<size_t>(n * m))),
                q0_rows, reference_has_error_feedback};
  double worst = 0;
  for (int step = 0; step < 3; ++step) {
    std::vector<Matrix> grads;
    for (size_t r = 0; r < ranks; ++r) grads.push_back(random_matrix(n * m, rng));
    const Matrix out = s.step(grads);
    const std::vector<double> expected = ref.step(grads);
    double scale = 0, diff = 0;
    for (size_t i = 0; i < out.size(); ++i) {
      scale = std::max(scale, std::abs(expected[i]));
      diff = std::max(diff, std::abs(out[i] - expected[i]));
    }
    worst = std::max(worst, diff / scale);
  }
  return worst;
}

TEST(PowerSgdStep, ThreeStepsWithErrorFeedbackAndWarmStartMatchADoubleReference) {
  constexpr double kTolerance = 1e-5;  // float32 rounding over sums of 30 terms
  const double agreed = worst_difference(true);
  EXPECT_LT(agreed, kTolerance);
  // The comparison can fail: a reference without the error term departs from the second step.
  EXPECT_GT(worst_difference(false), 100 * kTolerance);
}

}  // namespace
}  // namespace rt
