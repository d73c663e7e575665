// Note [1x1 weight gradient as a product] in one_by_one_weight_gradient.h.
#include "nn/ops/cpu/one_by_one_weight_gradient.h"

#include <immintrin.h>

#include <algorithm>
#include <vector>

#include "nn/cpu_bf16.h"
#include "nn/ops/cpu/avx512_transpose.h"
#include "nn/ops/cpu/dnnl_util.h"

#define RT_AVX512 __attribute__((target("avx512f,avx512bw,avx512vl")))
// GCC 12 takes the intrinsics' deliberately undefined pass-through operands for uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rt::cpu {
namespace {

constexpr int64_t kLanes = 16;  // channels in one nChw16c block

// The laid-out dY and X live only inside one call, so every instance shares them, sized at plan
// time for the largest.
std::vector<uint16_t>& rows_buffer() {
  static std::vector<uint16_t> b;
  return b;
}
std::vector<uint16_t>& columns_buffer() {
  static std::vector<uint16_t> b;
  return b;
}

// out[k][i * pixels + p] = dy[i][k][p], 32 pixels of 16 channels at a time: each pair of pixels
// interleaved into 16 32-bit lanes (channel j: the two pixels' values), then those lanes transposed.
RT_AVX512 void lay_out_rows(const uint16_t* dy, int64_t n, int64_t k, int64_t pixels, uint16_t* out) {
  constexpr int64_t kPixels = 2 * kLanes;
  const int64_t blocks = k / kLanes, tiles = (pixels + kPixels - 1) / kPixels, r = n * pixels;
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
          _mm512_mask_storeu_epi16(out + (kb * kLanes + j) * r + i * pixels + p0, keep, _mm512_castps_si512(v[j]));
      }
}

// out[i * pixels + p][c] = x[i][c][p]: each pixel's blocks of 16 channels side by side.
RT_AVX512 void lay_out_columns(const uint16_t* x, int64_t n, int64_t c, int64_t pixels, uint16_t* out) {
  const int64_t blocks = c / kLanes;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t i = 0; i < n; ++i)
    for (int64_t p = 0; p < pixels; ++p)
      for (int64_t cb = 0; cb < blocks; ++cb)
        _mm256_storeu_si256(
            reinterpret_cast<__m256i*>(out + (i * pixels + p) * c + cb * kLanes),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x + ((i * blocks + cb) * pixels + p) * kLanes)));
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
    : n_(n), c_(c), k_(k), pixels_(pixels) {
  const int64_t r = n * pixels;
  rows_md_ = md({k, r}, dt::bf16, tag::ab);
  columns_md_ = md({r, c}, dt::bf16, tag::ab);
  dw_md_ = md({k, c}, dt::f32, tag::ab);
  product_ = dnnl::matmul(dnnl::matmul::primitive_desc(dnnl::matmul::desc(rows_md_, columns_md_, dw_md_), engine()));
  if (rows_buffer().size() < static_cast<size_t>(k * r)) rows_buffer().resize(static_cast<size_t>(k * r));
  if (columns_buffer().size() < static_cast<size_t>(r * c)) columns_buffer().resize(static_cast<size_t>(r * c));
}

void OneByOneWeightGradient::operator()(const uint16_t* x, const uint16_t* dy, float* dw) {
  uint16_t* rows = rows_buffer().data();
  uint16_t* columns = columns_buffer().data();
  lay_out_rows(dy, n_, k_, pixels_, rows);
  lay_out_columns(x, n_, c_, pixels_, columns);
  product_.execute(stream(), {{DNNL_ARG_SRC, dnnl::memory(rows_md_, engine(), rows)},
                              {DNNL_ARG_WEIGHTS, dnnl::memory(columns_md_, engine(), columns)},
                              {DNNL_ARG_DST, dnnl::memory(dw_md_, engine(), dw)}});
  stream().wait();
}

}  // namespace rt::cpu
