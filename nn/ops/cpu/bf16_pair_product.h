// Batched bf16 matrix products with float32 sums, of our own, for the bf16 Winograd's products.
//
// Note [bf16 pair products]: AVX512_BF16's VDPBF16PS multiplies 16 lanes of bf16 pairs and adds
// each lane's two products to a float32 sum. So C (M x N) = A (M x K) B (K x N) runs over K two at
// a time: for each pair of rows kk of B, one pair of A's row m (two bf16, 32 bits) is broadcast to
// all lanes and multiplies 16 columns of B, whose rows 2kk and 2kk+1 are interleaved. A tile of 6
// rows by 64 columns of C (24 registers of sums) uses each load of B 6 times and each broadcast of
// A 4 times. B lies in "pair panels" of 64 columns (pair_panel_index): a panel's K/2 pair rows are
// contiguous, and stay in cache while every row of A passes them. A is read where it lies, through
// a stride between rows and one between pairs, so the transforms can write it row-major (pairs
// along a row) or pair-major (pairs of rows interleaved, rows adjacent).
//
// Why ours: on the bf16 Winograd's products (16 matrices of 256 to 896 rows by 256 to 512) oneDNN
// 2.6's batched bf16 matmul ran at 306 to 325 G multiply-adds/s on 2 cores of a Zen 5, caches
// cold, and ours at 339 to 375 (1.11x to 1.18x; bench/bf16_pair_product_shapes alternates them).
// Where the CPU has AVX-512 without BF16, the pair's two products are two float32 FMAs, in the
// instruction's order (odd element first); it flushes subnormal inputs and results, the FMAs do not.
#pragma once

#include <cstdint>

namespace rt::cpu {

constexpr int64_t kPairPanelWidth = 64;

// Where element (row, col) of a (rows x cols) bf16 matrix lies in pair panels of `width` columns
// (the last panel narrower): rows even, cols and width multiples of 16. With width = cols it is
// plain pair-major: (row / 2, col, row % 2).
inline int64_t pair_panel_index(int64_t rows, int64_t cols, int64_t width, int64_t row, int64_t col) {
  const int64_t first = col / width * width, w = cols - first < width ? cols - first : width;
  return first * rows + (row / 2) * w * 2 + (col - first) * 2 + (row & 1);
}

struct PairProduct {
  int64_t batch = 1, m = 0, n = 0, k = 0;  // C (m x n) = A (m x k) B (k x n), batch times; n % 16 = 0, k even
  // A's pair kk of row i of matrix b: the 32 bits at a + 2 * (b * a_batch + i * a_row + kk * a_pair).
  const uint16_t* a = nullptr;
  int64_t a_row = 0, a_pair = 0, a_batch = 0;
  const uint16_t* b = nullptr;  // pair panels of kPairPanelWidth, b_batch elements apart
  int64_t b_batch = 0;
  float* c = nullptr;  // row-major, n columns, c_batch elements apart
  int64_t c_batch = 0;
  bool accumulate = false;  // add to C rather than overwrite it
};

// Whether it runs here: AVX-512 F and BW; natively with AVX512_BF16.
bool pair_products_run();
// `emulate`: the two-FMA form even where AVX512_BF16 is present (the tests check both).
void multiply_pairs(const PairProduct& p, bool emulate = false);

}  // namespace rt::cpu
