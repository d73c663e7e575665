// Note [PowerSGD]: low-rank gradient compression (Vogels, Karimireddy and Jaggi, NeurIPS 2019) as
// PyTorch 1.13's powerSGD_hook does it. A gradient of two or more dimensions is viewed as an
// n x m matrix (shape[0] by the rest). With this rank's error from the last step added in, M = g + e:
//   P = M Q        Q (m x k) carried from the last step, orthonormal, the same on every rank
//   P <- average of P over ranks, its columns orthonormalized
//   Q = M^T P      then averaged over ranks (and carried to the next step)
//   g <- P Q^T     the average every rank applies; e <- M - P Q^T, this rank's error
// Instead of n m numbers a rank sends k (n + m). What every rank applies is a function of the two
// averages alone, which the ring makes bit-identical on every rank; so the orthonormalization and
// P Q^T are plain loops in one fixed order (Note [Agreed reductions]), never a library whose
// summation order follows the instruction set or the thread count. The local products may differ
// between ranks without harm, but use the same loops, so that a resumed run repeats its bits.
// The phases below take one tensor; the caller averages P and Q between them. P and Q are kept
// column by column (k x n and k x m, row-major), so that each column is contiguous for the
// orthonormalization and the products (Note [PowerSGD loops] in powersgd.cpp).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

namespace rt {

// The rank a tensor of `shape` is compressed at, 0 where it is not: PyTorch's rule, with
// k = min(n, m, rank), compressed where k (n + m) min_ratio < n m (strictly), except that a tensor
// of one dimension never is (PyTorch compresses one, as n x 1, where min_ratio < 1).
int64_t powersgd_rank(const std::vector<int64_t>& shape, int64_t rank, double min_ratio);

// The columns of a rows x k matrix, stored column after column, made orthonormal in place, by modified
// Gram-Schmidt (PyTorch's method at k <= 2; its QR at k > 2 gives other columns spanning the same
// space, and so the same P Q^T). Norms and dots are agreed reductions: the bits depend on the data
// alone. A zero column stays zero (PyTorch divides by zero there).
void orthonormalize_columns(float* a, int64_t rows, int64_t k);

// One tensor's state and phases. grad and error row-major n x m; p and q by columns (k x n, k x m).
struct PowerSgdMatrix {
  int64_t n = 0, m = 0, k = 0;
  // Phase 1: error += grad (error then holds M), q orthonormalized, p = M q.
  void compress(const float* grad, float* error, float* q, float* p) const;
  // Phase 2, p averaged over ranks: p orthonormalized, q_local = M^T p.
  void project(const float* error, float* p, float* q_local) const;
  // Phase 3, q averaged over ranks: grad = p q^T, error = M - p q^T. Returns the squared norms
  // of the error and of M (this rank's; each row's in float lanes), for the error's relative norm.
  std::pair<double, double> decompress(const float* p, const float* q, float* grad, float* error) const;
};

}  // namespace rt
