// Note [PowerSGD] in powersgd.h. Compiled with -ffp-contract=off (dist/CMakeLists.txt): a fused
// multiply-add would round once where the loops say twice, and only on some machines.
#include "dist/powersgd.h"

#include <algorithm>
#include <cmath>

namespace rt {
namespace {

// Element i of the chunk into lane i % 8, the lanes added in order, the chunks in order (Note
// [Agreed reductions]): a fixed order whatever the machine.
constexpr int64_t kChunk = int64_t{1} << 16;

template <typename Term>
double agreed_sum(int64_t n, Term term) {
  double total = 0;
  for (int64_t begin = 0; begin < n; begin += kChunk) {
    double lanes[8] = {};
    const int64_t end = std::min(n, begin + kChunk);
    for (int64_t i = begin; i < end; ++i) lanes[(i - begin) % 8] += term(i);
    double chunk = 0;
    for (double lane : lanes) chunk += lane;
    total += chunk;
  }
  return total;
}

}  // namespace

int64_t powersgd_rank(const std::vector<int64_t>& shape, int64_t rank, double min_ratio) {
  if (shape.size() < 2 || rank < 1) return 0;
  const int64_t n = shape[0];
  int64_t m = 1;
  for (size_t i = 1; i < shape.size(); ++i) m *= shape[i];
  const int64_t k = std::min({n, m, rank});
  const double sent = static_cast<double>(k * (n + m)) * min_ratio;
  return sent < static_cast<double>(n) * static_cast<double>(m) ? k : 0;
}

void orthonormalize_columns(float* a, int64_t rows, int64_t k) {
  for (int64_t c = 0; c < k; ++c) {
    const double squares = agreed_sum(rows, [&](int64_t i) {
      const double x = a[i * k + c];
      return x * x;
    });
    const auto norm = static_cast<float>(std::sqrt(squares));
    if (norm == 0) continue;
    for (int64_t i = 0; i < rows; ++i) a[i * k + c] /= norm;
    for (int64_t d = c + 1; d < k; ++d) {
      const auto dot = static_cast<float>(
          agreed_sum(rows, [&](int64_t i) { return static_cast<double>(a[i * k + c]) * a[i * k + d]; }));
      for (int64_t i = 0; i < rows; ++i) a[i * k + d] -= dot * a[i * k + c];
    }
  }
}

void PowerSgdMatrix::compress(const float* grad, float* error, float* q, float* p) const {
  orthonormalize_columns(q, m, k);
  for (int64_t i = 0; i < n; ++i) {
    float* row = error + i * m;
    const float* g = grad + i * m;
    float* out = p + i * k;
    std::fill(out, out + k, 0.0f);
    for (int64_t j = 0; j < m; ++j) {
      row[j] += g[j];
      for (int64_t c = 0; c < k; ++c) out[c] += row[j] * q[j * k + c];
    }
  }
}

void PowerSgdMatrix::project(const float* error, float* p, float* q_local) const {
  orthonormalize_columns(p, n, k);
  std::fill(q_local, q_local + m * k, 0.0f);
  for (int64_t i = 0; i < n; ++i) {
    const float* row = error + i * m;
    const float* pi = p + i * k;
    for (int64_t j = 0; j < m; ++j)
      for (int64_t c = 0; c < k; ++c) q_local[j * k + c] += row[j] * pi[c];
  }
}

std::pair<double, double> PowerSgdMatrix::decompress(const float* p, const float* q, float* grad, float* error) const {
  double error_squares = 0, m_squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    const float* pi = p + i * k;
    for (int64_t j = 0; j < m; ++j) {
      float sum = 0;
      for (int64_t c = 0; c < k; ++c) sum += pi[c] * q[j * k + c];
      grad[i * m + j] = sum;
      const double whole = error[i * m + j];
      error[i * m + j] -= sum;
      m_squares += whole * whole;
      error_squares += static_cast<double>(error[i * m + j]) * error[i * m + j];
    }
  }
  return {error_squares, m_squares};
}

}  // namespace rt
