// Note [1x1 weight reorders] in weight_reorders.h.
#include "nn/ops/cpu/weight_reorders.h"

#include <immintrin.h>

#include "nn/cpu_bf16.h"
#include "nn/ops/cpu/avx512_transpose.h"
#include "nn/ops/cpu/dnnl_util.h"

#define RT_AVX512 __attribute__((target("avx512f")))
#define RT_AVX512_BF16 __attribute__((target("avx512f,avx512bw,avx512bf16")))
// GCC 12 takes the intrinsics' deliberately undefined pass-through operands for uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rt::cpu {
namespace {

constexpr int64_t kSide = 16;             // a tile is 16 x 16 of (K, C)
constexpr int64_t kTile = kSide * kSide;  // elements in one block of the blocked layouts

// Rows kb * 16 .. + 16 of a plain (K, C) matrix, columns cb * 16 .. + 16.
RT_AVX512 inline void load_tile(const float* plain, int64_t c, int64_t kb, int64_t cb, __m512 r[kSide]) {
  for (int64_t i = 0; i < kSide; ++i) r[i] = _mm512_loadu_ps(plain + (kb * kSide + i) * c + cb * kSide);
}

// a0 b0 a1 b1 ... a15 b15 in bf16, rounded as oneDNN's reorder rounds.
RT_AVX512_BF16 inline __m512i interleave_bf16(__m512 a, __m512 b) {
  const __m512i halves = (__m512i)_mm512_cvtne2ps_pbh(b, a);  // a's 16 in the low half, b's above
  const __m512i order = _mm512_set_epi16(31, 15, 30, 14, 29, 13, 28, 12, 27, 11, 26, 10, 25, 9, 24, 8, 23, 7, 22, 6, 21,
                                         5, 20, 4, 19, 3, 18, 2, 17, 1, 16, 0);
  return _mm512_permutexvar_epi16(order, halves);
}

// float32 ABcd16b16a (a block's 16 input channels, each 16 outputs) to plain (K, C).
RT_AVX512 void gradient_to_plain(const void* src, void* dst, int64_t k, int64_t c) {
  const float* blocked = static_cast<const float*>(src);
  float* plain = static_cast<float*>(dst);
  const int64_t k_blocks = k / kSide, c_blocks = c / kSide;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t kb = 0; kb < k_blocks; ++kb)
    for (int64_t cb = 0; cb < c_blocks; ++cb) {
      const float* block = blocked + (kb * c_blocks + cb) * kTile;
      __m512 r[kSide];
      for (int64_t i = 0; i < kSide; ++i) r[i] = _mm512_loadu_ps(block + i * kSide);
      transpose16x16(r);
      for (int64_t i = 0; i < kSide; ++i) _mm512_storeu_ps(plain + (kb * kSide + i) * c + cb * kSide, r[i]);
    }
}

// Plain (K, C) to bf16 blocks of 16 x 16 that hold values in pairs: for each pair of input
// channels the 16 outputs' two values (ABcd8b16a2b, kInputPairs), or for each pair of outputs the
// 16 inputs' two (8a16b2a); the blocks in ABcd order (output block outer) or BAcd (input block
// outer).
template <bool kInputPairs, bool kInputBlockOuter>
RT_AVX512_BF16 void weights_to_bf16_blocks(const void* src, void* dst, int64_t k, int64_t c) {
  const float* plain = static_cast<const float*>(src);
  uint16_t* blocked = static_cast<uint16_t*>(dst);
  const int64_t k_blocks = k / kSide, c_blocks = c / kSide;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t kb = 0; kb < k_blocks; ++kb)
    for (int64_t cb = 0; cb < c_blocks; ++cb) {
      __m512 r[kSide];
      load_tile(plain, c, kb, cb, r);      // r[output][input channel]
      if (kInputPairs) transpose16x16(r);  // r[input channel][output]
      uint16_t* block = blocked + (kInputBlockOuter ? cb * k_blocks + kb : kb * c_blocks + cb) * kTile;
      for (int64_t pair = 0; pair < kSide / 2; ++pair)
        _mm512_storeu_si512(block + pair * 2 * kSide, interleave_bf16(r[2 * pair], r[2 * pair + 1]));
    }
}

bool has_avx512() { return __builtin_cpu_supports("avx512f"); }
// oneDNN runs bf16 natively here, and rounds with the instruction ours use.
bool has_native_bf16() {
  return cpu_bf16().native && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16");
}

}  // namespace

WeightReorder WeightReorder::between(const md& from, const md& to) {
  WeightReorder r;
  const dnnl::memory::dims dims = from.dims();
  if (dims != to.dims() || dims.size() != 4 || dims[2] != 1 || dims[3] != 1) return r;
  if (dims[0] % kSide != 0 || dims[1] % kSide != 0) return r;
  const auto is = [&](const md& m, dt type, tag layout) { return m == md(dims, type, layout); };
  if (is(from, dt::f32, tag::ABcd16b16a) && is(to, dt::f32, tag::abcd) && has_avx512())
    r.run_ = gradient_to_plain;
  else if (is(from, dt::f32, tag::abcd) && has_native_bf16()) {
    if (is(to, dt::bf16, tag::ABcd8b16a2b))
      r.run_ = weights_to_bf16_blocks<true, false>;
    else if (is(to, dt::bf16, tag::ABcd8a16b2a))
      r.run_ = weights_to_bf16_blocks<false, false>;
    else if (is(to, dt::bf16, tag::BAcd8a16b2a))
      r.run_ = weights_to_bf16_blocks<false, true>;
  }
  if (r.run_) {
    r.k_ = dims[0];
    r.c_ = dims[1];
  }
  return r;
}

}  // namespace rt::cpu
