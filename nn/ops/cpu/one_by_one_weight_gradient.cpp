// Note [1x1 weight gradient as a product] in one_by_one_weight_gradient.h.
#include "nn/ops/cpu/one_by_one_weight_gradient.h"

#include <immintrin.h>

#include <algorithm>

#include "nn/cpu_bf16.h"
#include "nn/ops/cpu/avx512_transpose.h"
#include "nn/ops/cpu/bf16_pair_product.h"
#include "nn/ops/cpu/shared_scratch.h"

#define RT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
// GCC 12 takes the intrinsics' deliberately undefined pass-through operands for uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rt::cpu {
namespace {

constexpr int64_t kLanes = 16;  // channels in one nChw16c block

// out[k][i * pixels + p] = dy[i][k][p], rows `stride` apart, 32 pixels of 16 channels at a time:
// each pair of pixels interleaved into 16 32-bit lanes (channel j: the two pixels' values), then
// those lanes transposed. A row's element past the last pixel, where the stride leaves one, is 0.
RT_AVX512 void lay_out_rows(const uint16_t* dy, int64_t n, int64_t k, int64_t pixels, int64_t stride, uint16_t* out) {
  constexpr int64_t kPixels = 2 * kLanes;
  const int64_t blocks = k / kLanes, tiles = (pixels + kPixels - 1) / kPixels, r = n * pixels;
  if (stride > r)
    for (int64_t row = 0; row < k; ++row) out[row * stride + r] = 0;
  alignas(64) static const uint16_t pairs[kPixels] = {0, 16, 1, 17, 2,  18, 3,  19, 4,  20, 5,  21, 6,  22, 7,  23,
                                                      8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31};
  const __m512i order = _mm512_load_si512(pairs);
#pragma omp parallel for collapse(3) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t kb = 0; kb < blocks; ++kb)
      for (int64_t t = 0; t < tiles; ++t) {
        const int64_t p0 = t * kPixels, count = std::min(kPixels, pixels - p0);
        const uint16_t* in = dy + ((i * blocks + kb) * pixels + p0) * kLanes;
        __m512 v[kLanes];
        for (int64_t q = 0; q < kLanes; ++q) {
          const __mmask32 valid = (2 * q < count ? 0xFFFFu : 0u) | (2 * q + 1 < count ? 0xFFFF0000u : 0u);
          v[q] = _mm512_castsi512_ps(
              _mm512_permutexvar_epi16(order, _mm512_maskz_loadu_epi16(valid, in + 2 * q * kLanes)));
        }
        transpose16x16(v);  // v[channel]: the 32 pixels' values
        const __mmask32 keep = count == kPixels ? ~0u : (1u << count) - 1;
        for (int64_t j = 0; j < kLanes; ++j)
          _mm512_mask_storeu_epi16(out + (kb * kLanes + j) * stride + i * pixels + p0, keep, _mm512_castps_si512(v[j]));
      }
}

// X (rows x c, rows = n * pixels rounded up to even) in pair panels (Note [bf16 pair products]):
// the pixels of pair j side by side, 16 channels of each at a time; a pixel past the last is 0.
// Block cb of pixel `at` of x (n * pixels pixels in all), each value in a 32-bit lane's low half.
RT_AVX512 inline __m512i pixel_block(const uint16_t* x, int64_t blocks, int64_t pixels, int64_t r, int64_t at,
                                     int64_t cb) {
  if (at >= r) return _mm512_setzero_si512();
  const int64_t i = at / pixels, p = at % pixels;
  return _mm512_cvtepu16_epi32(
      _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + ((i * blocks + cb) * pixels + p) * kLanes)));
}

RT_AVX512 void lay_out_columns(const uint16_t* x, int64_t n, int64_t c, int64_t pixels, int64_t rows, uint16_t* out) {
  const int64_t blocks = c / kLanes, r = n * pixels;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t j = 0; j < rows / 2; ++j)
    for (int64_t cb = 0; cb < blocks; ++cb) {
      const __m512i even = pixel_block(x, blocks, pixels, r, 2 * j, cb);
      const __m512i odd = pixel_block(x, blocks, pixels, r, 2 * j + 1, cb);
      _mm512_storeu_si512(out + pair_panel_index(rows, c, kPairPanelWidth, 2 * j, cb * kLanes),
                          _mm512_or_si512(even, _mm512_slli_epi32(odd, 16)));
    }
}

}  // namespace

bool OneByOneWeightGradient::runs(int64_t c, int64_t k) {
  return c % kLanes == 0 && k % kLanes == 0 && cpu_bf16().isa == "avx512_core_bf16" &&
         __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
}

bool OneByOneWeightGradient::pays(int64_t, int64_t k, int64_t pixels) {
  return (pixels % 2 == 1 || pixels <= 64) && k >= 128;
}

OneByOneWeightGradient::OneByOneWeightGradient(int64_t n, int64_t c, int64_t k, int64_t pixels)
    : n_(n), c_(c), k_(k), pixels_(pixels), rows_((n * pixels + 1) / 2 * 2) {
  // The laid-out dY and X live only inside one call (Note [Shared scratch]).
  reserve_scratch(ScratchUse::kWeightGradientRows, static_cast<size_t>(k * rows_) * sizeof(uint16_t));
  reserve_scratch(ScratchUse::kWeightGradientColumns, static_cast<size_t>(rows_ * c) * sizeof(uint16_t));
}

void OneByOneWeightGradient::operator()(const uint16_t* x, const uint16_t* dy, float* dw) {
  uint16_t* rows = scratch_as<uint16_t>(ScratchUse::kWeightGradientRows);
  uint16_t* columns = scratch_as<uint16_t>(ScratchUse::kWeightGradientColumns);
  lay_out_rows(dy, n_, k_, pixels_, rows_, rows);
  lay_out_columns(x, n_, c_, pixels_, rows_, columns);
  PairProduct p;  // dW (k x c) = dY (k x rows) X (rows x c)
  p.m = k_, p.n = c_, p.k = rows_;
  p.a = rows, p.a_row = rows_ / 2, p.a_pair = 1;
  p.b = columns;
  p.c = dw;
  multiply_pairs(p);
}

}  // namespace rt::cpu
