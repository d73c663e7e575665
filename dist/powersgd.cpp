// Note [PowerSGD] in powersgd.h. Compiled with -ffp-contract=off (dist/CMakeLists.txt): a fused
// multiply-add would round once where the loops say twice, and only on some machines.
//
// Note [PowerSGD loops]: the three products stream the n x m matrices through memory once each,
// and are written so that the compiler vectorizes them without changing any element's order of
// operations: P's dot products keep kLanes partial sums (element j into lane j % kLanes, the
// lanes added in order), Q's sums run over the rows in order, and P Q^T adds its k terms in
// order. The binary's instruction set is the build's, never the machine's, so every machine
// computes the same bits.
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

// The sum over j of a[j] b[j], element j into lane j % kLanes (Note [PowerSGD loops]).
constexpr int64_t kLanes = 16;

float lane_dot(const float* a, const float* b, int64_t count) {
  float lanes[kLanes] = {};
  int64_t j = 0;
  for (; j + kLanes <= count; j += kLanes)
    for (int64_t l = 0; l < kLanes; ++l) lanes[l] += a[j + l] * b[j + l];
  for (int64_t l = 0; j + l < count; ++l) lanes[l] += a[j + l] * b[j + l];
  float sum = 0;
  for (float lane : lanes) sum += lane;
  return sum;
}

// Sums of squares in float lanes, for the error's relative norm (a metric, not applied).
double lane_squares(const float* a, int64_t count) { return lane_dot(a, a, count); }

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
    float* column = a + c * rows;
    const double squares = agreed_sum(rows, [&](int64_t i) { return static_cast<double>(column[i]) * column[i]; });
    const auto norm = static_cast<float>(std::sqrt(squares));
    if (norm == 0) continue;
    for (int64_t i = 0; i < rows; ++i) column[i] /= norm;
    for (int64_t d = c + 1; d < k; ++d) {
      float* other = a + d * rows;
      const auto dot =
          static_cast<float>(agreed_sum(rows, [&](int64_t i) { return static_cast<double>(column[i]) * other[i]; }));
      for (int64_t i = 0; i < rows; ++i) other[i] -= dot * column[i];
    }
  }
}

void PowerSgdMatrix::compress(const float* grad, float* error, float* q, float* p) const {
  orthonormalize_columns(q, m, k);
  for (int64_t i = 0; i < n; ++i) {
    float* row = error + i * m;
    const float* g = grad + i * m;
    for (int64_t j = 0; j < m; ++j) row[j] += g[j];
    for (int64_t c = 0; c < k; ++c) p[c * n + i] = lane_dot(row, q + c * m, m);
  }
}

void PowerSgdMatrix::project(const float* error, float* p, float* q_local) const {
  orthonormalize_columns(p, n, k);
  std::fill(q_local, q_local + m * k, 0.0f);
  // Four rows at a time, each element's terms still added in row order: Q's columns are read and
  // written a quarter as often.
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const float *r0 = error + i * m, *r1 = r0 + m, *r2 = r1 + m, *r3 = r2 + m;
    for (int64_t c = 0; c < k; ++c) {
      const float* pc = p + c * n + i;
      float* out = q_local + c * m;
      for (int64_t j = 0; j < m; ++j)
        out[j] = (((out[j] + r0[j] * pc[0]) + r1[j] * pc[1]) + r2[j] * pc[2]) + r3[j] * pc[3];
    }
  }
  for (; i < n; ++i) {
    const float* row = error + i * m;
    for (int64_t c = 0; c < k; ++c) {
      const float pc = p[c * n + i];
      float* out = q_local + c * m;
      for (int64_t j = 0; j < m; ++j) out[j] += row[j] * pc;
    }
  }
}

std::pair<double, double> PowerSgdMatrix::decompress(const float* p, const float* q, float* grad, float* error) const {
  double error_squares = 0, m_squares = 0;
  for (int64_t i = 0; i < n; ++i) {
    float* out = grad + i * m;
    float* row = error + i * m;
    const float p0 = p[i];
    for (int64_t j = 0; j < m; ++j) out[j] = p0 * q[j];
    for (int64_t c = 1; c < k; ++c) {
      const float pc = p[c * n + i];
      const float* qc = q + c * m;
      for (int64_t j = 0; j < m; ++j) out[j] += pc * qc[j];
    }
    m_squares += lane_squares(row, m);
    for (int64_t j = 0; j < m; ++j) row[j] -= out[j];
    error_squares += lane_squares(row, m);
  }
  return {error_squares, m_squares};
}

}  // namespace rt
