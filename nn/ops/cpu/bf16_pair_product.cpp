// Note [bf16 pair products] in bf16_pair_product.h.
#include "nn/ops/cpu/bf16_pair_product.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <cstdint>

// Both forms compile for AVX512_BF16; the emulated one uses only AVX-512 F and BW instructions (a
// compiler does not turn FMAs into VDPBF16PS), so it runs on CPUs without BF16.
#define RT_PAIRS __attribute__((target("avx512f,avx512bw,avx512bf16")))
// GCC 12 takes the intrinsics' deliberately undefined pass-through operands for uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rt::cpu {
namespace {

constexpr int kLanes = 16;

// sum[i][j] (+)= the product of rows i of A and the kBlocks x 16 columns of one panel, over
// `pairs` pairs; a points at row 0's pair 0, b at the panel's first pair row.
template <bool kNative, int kRows, int kBlocks>
RT_PAIRS void tile(const uint32_t* a, int64_t a_row, int64_t a_pair, const uint32_t* b, int64_t pairs, float* c,
                   int64_t ldc, bool accumulate, bool stream) {
  __m512 sum[kRows][kBlocks];
  for (int i = 0; i < kRows; ++i)
    for (int j = 0; j < kBlocks; ++j)
      sum[i][j] = accumulate ? _mm512_loadu_ps(c + i * ldc + j * kLanes) : _mm512_setzero_ps();
  const __m512i high = _mm512_set1_epi32(static_cast<int>(0xffff0000u));
  for (int64_t kk = 0; kk < pairs; ++kk) {
    const uint32_t* row = b + kk * kBlocks * kLanes;
    if constexpr (kNative) {
      __m512bh columns[kBlocks];
      for (int j = 0; j < kBlocks; ++j) columns[j] = (__m512bh)_mm512_loadu_si512(row + j * kLanes);
      for (int i = 0; i < kRows; ++i) {
        const __m512bh pair = (__m512bh)_mm512_set1_epi32(static_cast<int>(a[i * a_row + kk * a_pair]));
        for (int j = 0; j < kBlocks; ++j) sum[i][j] = _mm512_dpbf16_ps(sum[i][j], pair, columns[j]);
      }
    } else {
      // A bf16 is the top half of its float32: the odd element is the pair's high half.
      __m512 odd[kBlocks], even[kBlocks];
      for (int j = 0; j < kBlocks; ++j) {
        const __m512i v = _mm512_loadu_si512(row + j * kLanes);
        odd[j] = _mm512_castsi512_ps(_mm512_and_si512(v, high));
        even[j] = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
      }
      for (int i = 0; i < kRows; ++i) {
        const __m512i pair = _mm512_set1_epi32(static_cast<int>(a[i * a_row + kk * a_pair]));
        const __m512 a_odd = _mm512_castsi512_ps(_mm512_and_si512(pair, high));
        const __m512 a_even = _mm512_castsi512_ps(_mm512_slli_epi32(pair, 16));
        for (int j = 0; j < kBlocks; ++j)
          sum[i][j] = _mm512_fmadd_ps(a_even, even[j], _mm512_fmadd_ps(a_odd, odd[j], sum[i][j]));
      }
    }
  }
  // A new C goes past the caches: stored through them, each of its lines would first be read from
  // memory. bench/bf16_pair_product_shapes: streaming took the forward's products from 0.74-0.97x
  // oneDNN's speed to 1.01-1.22x (panels of 48 then).
  if (stream)
    for (int i = 0; i < kRows; ++i)
      for (int j = 0; j < kBlocks; ++j) _mm512_stream_ps(c + i * ldc + j * kLanes, sum[i][j]);
  else
    for (int i = 0; i < kRows; ++i)
      for (int j = 0; j < kBlocks; ++j) _mm512_storeu_ps(c + i * ldc + j * kLanes, sum[i][j]);
}

// Rows i0 .. i1 of A against one panel of kBlocks x 16 columns, over pairs kk0 .. kk1. The tallest
// tile whose sums, columns and broadcast fit AVX-512's 32 registers; the emulated form needs two
// registers a column block.
template <bool kNative, int kBlocks>
RT_PAIRS void panel(const PairProduct& p, const uint32_t* a, const uint32_t* b, float* c, int64_t i0, int64_t i1,
                    int64_t kk0, int64_t kk1, bool accumulate, bool stream) {
  constexpr int kTall = !kNative ? 4 : kBlocks == 4 ? 6 : kBlocks == 3 ? 8 : kBlocks == 2 ? 14 : 24;
  a += kk0 * p.a_pair;
  b += kk0 * kBlocks * kLanes;
  int64_t i = i0;
  for (; i + kTall <= i1; i += kTall)
    tile<kNative, kTall, kBlocks>(a + i * p.a_row, p.a_row, p.a_pair, b, kk1 - kk0, c + i * p.n, p.n, accumulate,
                                  stream);
  for (; i < i1; ++i)
    tile<kNative, 1, kBlocks>(a + i * p.a_row, p.a_row, p.a_pair, b, kk1 - kk0, c + i * p.n, p.n, accumulate, stream);
}

// Rows i0 .. i1 of matrix m against panel q.
template <bool kNative>
void multiply_panel(const PairProduct& p, int64_t m, int64_t q, int64_t i0, int64_t i1, int64_t kk0, int64_t kk1,
                    bool accumulate, bool stream) {
  const int64_t first = q * kPairPanelWidth, width = std::min(kPairPanelWidth, p.n - first);
  const auto* a = reinterpret_cast<const uint32_t*>(p.a) + m * p.a_batch;
  const auto* b = reinterpret_cast<const uint32_t*>(p.b + m * p.b_batch + first * p.k);
  float* c = p.c + m * p.c_batch + first;
  if (width == 4 * kLanes)
    panel<kNative, 4>(p, a, b, c, i0, i1, kk0, kk1, accumulate, stream);
  else if (width == 3 * kLanes)
    panel<kNative, 3>(p, a, b, c, i0, i1, kk0, kk1, accumulate, stream);
  else if (width == 2 * kLanes)
    panel<kNative, 2>(p, a, b, c, i0, i1, kk0, kk1, accumulate, stream);
  else
    panel<kNative, 1>(p, a, b, c, i0, i1, kk0, kk1, accumulate, stream);
}

// Sums longer than kLongestUnblocked pairs, where A is read across (pair-major: each pair of a
// tile's rows on another cache line), run in blocks of kBlockPairs: a block of A (up to 256 KiB
// for 512 rows) stays in L2 while every panel passes it, and a panel's block (32 KiB) in L1. On
// the bf16 Winograd's backward weights of VGG-16's 56 x 56 layers (3,136 pairs) that took ours
// from 0.91-0.95x oneDNN's speed to 1.10x; the forward's 256 pairs ran faster unblocked, and so
// did the 1x1 weight gradient's 784 to 1,156 (A row-major: its rows stream from memory).
constexpr int64_t kLongestUnblocked = 256, kBlockPairs = 128;

template <bool kNative>
void multiply(const PairProduct& p) {
  const int64_t panels = (p.n + kPairPanelWidth - 1) / kPairPanelWidth, pairs = p.k / 2;
  if (pairs <= kLongestUnblocked || p.a_row > p.a_pair) {
    const bool stream =
        !p.accumulate && reinterpret_cast<uintptr_t>(p.c) % 64 == 0 && p.n % kLanes == 0 && p.c_batch % kLanes == 0;
#pragma omp parallel
    {
#pragma omp for collapse(2) schedule(static) nowait
      for (int64_t m = 0; m < p.batch; ++m)
        for (int64_t q = 0; q < panels; ++q) multiply_panel<kNative>(p, m, q, 0, p.m, 0, pairs, p.accumulate, stream);
      _mm_sfence();  // streamed stores are weakly ordered: each thread's are out before the caller reads C
    }
    return;
  }
  // A long sum in blocks of pairs: a block of A stays in L2 while every panel passes it. Each
  // thread takes whole matrices, or, where there are fewer than threads, a range of their rows (a
  // multiple of the widest panels' 6-row tile).
  const int64_t parts = std::max<int64_t>(1, omp_get_max_threads() / p.batch);
  const int64_t part_rows = ((p.m + parts - 1) / parts + 5) / 6 * 6;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t m = 0; m < p.batch; ++m)
    for (int64_t part = 0; part < parts; ++part) {
      const int64_t i0 = std::min(p.m, part * part_rows), i1 = std::min(p.m, i0 + part_rows);
      for (int64_t kk0 = 0; kk0 < pairs; kk0 += kBlockPairs)
        for (int64_t q = 0; q < panels; ++q)
          multiply_panel<kNative>(p, m, q, i0, i1, kk0, std::min(pairs, kk0 + kBlockPairs), p.accumulate || kk0 > 0,
                                  false);
    }
}

}  // namespace

bool pair_products_run() { return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"); }

void multiply_pairs(const PairProduct& p, bool emulate) {
  if (!emulate && __builtin_cpu_supports("avx512bf16"))
    multiply<true>(p);
  else
    multiply<false>(p);
}

}  // namespace rt::cpu
