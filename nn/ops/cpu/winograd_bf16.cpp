// Note [bf16 Winograd] in winograd_bf16.h. The transforms are AVX-512 loops over one nChw16c
// block (16 channels in one register); the products are ours (Note [bf16 pair products]).
#include "nn/ops/cpu/winograd_bf16.h"

#include <immintrin.h>

#include <algorithm>

#include "base/half_float.h"
#include "base/check.h"
#include "nn/cpu_bf16.h"
#include "nn/ops/cpu/bf16_pair_product.h"
#include "nn/ops/cpu/shared_scratch.h"

#define RT_AVX512 __attribute__((target("avx512f,avx512bw")))
// GCC 12 takes the intrinsics' deliberately undefined pass-through operands for uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rt::cpu {
namespace {

constexpr int64_t kLanes = 16;      // channels in one nChw16c block
constexpr int64_t kPositions = 16;  // a 4x4 transformed tile

RT_AVX512 inline __m512 load_bf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Round to nearest even, NaN stays NaN: float_to_bf16 on 16 lanes, each in its lane's low half.
RT_AVX512 inline __m512i bf16_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  return _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
}

RT_AVX512 inline void store_bf16(uint16_t* p, __m512 v) {
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(bf16_bits(v)));
}

// 16 pairs: lane i's (even[i], odd[i]) side by side, as the pair products read them.
RT_AVX512 inline void store_bf16_pairs(uint16_t* p, __m512 even, __m512 odd) {
  _mm512_storeu_si512(p, _mm512_or_si512(bf16_bits(even), _mm512_slli_epi32(bf16_bits(odd), 16)));
}

struct Tiling {
  int64_t n, h, w, th, tw;  // image, and tiles down and across
  int64_t tiles() const { return n * th * tw; }
  // Tile t's image, and its row and column among the image's tiles.
  struct Place {
    int64_t image, row, col;
  };
  Place place(int64_t t) const { return {t / (th * tw), t % (th * tw) / tw, t % tw}; }
};

// The kSide x kSide pixels from (top, left) of one block of 16 channels of `image` in src
// (nChw16c, `blocks` blocks); zeros off the image.
template <int kSide>
RT_AVX512 inline void load_patch(const uint16_t* src, int64_t blocks, const Tiling& g, int64_t image, int64_t block,
                                 int64_t top, int64_t left, __m512 (&d)[kSide][kSide]) {
  const uint16_t* base = src + (image * blocks + block) * g.h * g.w * kLanes;
  for (int i = 0; i < kSide; ++i)
    for (int j = 0; j < kSide; ++j) {
      const int64_t row = top + i, col = left + j;
      d[i][j] = row >= 0 && row < g.h && col >= 0 && col < g.w ? load_bf16(base + (row * g.w + col) * kLanes)
                                                               : _mm512_setzero_ps();
    }
}

// The 16 positions of B^T d B for one 4x4 tile d (stride 2) of one block of 16 channels of x
// (nChw16c, `blocks` blocks).
RT_AVX512 inline void input_tile(const uint16_t* x, int64_t blocks, const Tiling& g, int64_t tile, int64_t cb,
                                 __m512 v[kPositions]) {
  const Tiling::Place at = g.place(tile);
  __m512 d[4][4];
  load_patch(x, blocks, g, at.image, cb, 2 * at.row - 1, 2 * at.col - 1, d);
  __m512 r[4][4];
  for (int j = 0; j < 4; ++j) {
    r[0][j] = _mm512_sub_ps(d[0][j], d[2][j]);
    r[1][j] = _mm512_add_ps(d[1][j], d[2][j]);
    r[2][j] = _mm512_sub_ps(d[2][j], d[1][j]);
    r[3][j] = _mm512_sub_ps(d[1][j], d[3][j]);
  }
  for (int i = 0; i < 4; ++i) {
    v[i * 4 + 0] = _mm512_sub_ps(r[i][0], r[i][2]);
    v[i * 4 + 1] = _mm512_add_ps(r[i][1], r[i][2]);
    v[i * 4 + 2] = _mm512_sub_ps(r[i][2], r[i][1]);
    v[i * 4 + 3] = _mm512_sub_ps(r[i][1], r[i][3]);
  }
}

// V[p][t][c] for tiles t0 .. t0 + count of x (`c` channels): rows of pairs along c, the forward's A.
// Positions lie `rows` rows apart.
RT_AVX512 void input_transform(const uint16_t* x, int64_t c, const Tiling& g, int64_t t0, int64_t count, int64_t rows,
                               uint16_t* v) {
  const int64_t blocks = c / kLanes, plane = rows * c;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t t = 0; t < count; ++t)
    for (int64_t cb = 0; cb < blocks; ++cb) {
      __m512 out[kPositions];
      input_tile(x, blocks, g, t0 + t, cb, out);
      for (int p = 0; p < kPositions; ++p) store_bf16(v + p * plane + t * c + cb * kLanes, out[p]);
    }
}

// y (nChw16c, `k` channels) for tiles t0 .. t0 + count from M[p][t][k] (float32): A^T M A, plus
// the bias where given, rounded to bf16; outputs past the image's edge are dropped.
RT_AVX512 void output_transform(const float* m, int64_t k, const Tiling& g, int64_t t0, int64_t count, int64_t rows,
                                const float* bias, uint16_t* y) {
  const int64_t blocks = k / kLanes, plane = rows * k;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t t = 0; t < count; ++t)
    for (int64_t kb = 0; kb < blocks; ++kb) {
      const Tiling::Place at = g.place(t0 + t);
      const int64_t n = at.image, ti = at.row, tj = at.col;
      const float* in = m + t * k + kb * kLanes;
      __m512 s[2][4];
      for (int j = 0; j < 4; ++j) {
        const __m512 m0 = _mm512_loadu_ps(in + (0 * 4 + j) * plane), m1 = _mm512_loadu_ps(in + (1 * 4 + j) * plane);
        const __m512 m2 = _mm512_loadu_ps(in + (2 * 4 + j) * plane), m3 = _mm512_loadu_ps(in + (3 * 4 + j) * plane);
        s[0][j] = _mm512_add_ps(_mm512_add_ps(m0, m1), m2);
        s[1][j] = _mm512_sub_ps(_mm512_sub_ps(m1, m2), m3);
      }
      const __m512 b = bias ? _mm512_loadu_ps(bias + kb * kLanes) : _mm512_setzero_ps();
      uint16_t* base = y + (n * blocks + kb) * g.h * g.w * kLanes;
      for (int a = 0; a < 2; ++a) {
        const int64_t row = 2 * ti + a;
        if (row >= g.h) break;
        const __m512 left = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(s[a][0], s[a][1]), s[a][2]), b);
        const __m512 right = _mm512_add_ps(_mm512_sub_ps(_mm512_sub_ps(s[a][1], s[a][2]), s[a][3]), b);
        store_bf16(base + (row * g.w + 2 * tj) * kLanes, left);
        if (2 * tj + 1 < g.w) store_bf16(base + (row * g.w + 2 * tj + 1) * kLanes, right);
      }
    }
}

// The 16 positions of A e A^T for the 2x2 output-gradient tile e of one block of dy (nChw16c).
RT_AVX512 inline void gradient_tile(const uint16_t* dy, int64_t blocks, const Tiling& g, int64_t tile, int64_t kb,
                                    __m512 q_out[kPositions]) {
  const Tiling::Place at = g.place(tile);
  __m512 e[2][2];
  load_patch(dy, blocks, g, at.image, kb, 2 * at.row, 2 * at.col, e);
  const __m512 zero = _mm512_setzero_ps();
  __m512 q[4][2];
  for (int b = 0; b < 2; ++b) {
    q[0][b] = e[0][b];
    q[1][b] = _mm512_add_ps(e[0][b], e[1][b]);
    q[2][b] = _mm512_sub_ps(e[0][b], e[1][b]);
    q[3][b] = _mm512_sub_ps(zero, e[1][b]);
  }
  for (int i = 0; i < 4; ++i) {
    q_out[i * 4 + 0] = q[i][0];
    q_out[i * 4 + 1] = _mm512_add_ps(q[i][0], q[i][1]);
    q_out[i * 4 + 2] = _mm512_sub_ps(q[i][0], q[i][1]);
    q_out[i * 4 + 3] = _mm512_sub_ps(zero, q[i][1]);
  }
}

// Tiles t0 .. t0 + count of src (`channels` channels) through kTile, rounded to bf16, side by side
// in pairs (an odd count's last with zeros), in pair panels of `width` channels: backward weights'
// A, V pair-major (width = channels), and B, dM.
template <void (*kTile)(const uint16_t*, int64_t, const Tiling&, int64_t, int64_t, __m512*)>
RT_AVX512 void paired_transform(const uint16_t* src, int64_t channels, const Tiling& g, int64_t t0, int64_t count,
                                int64_t rows, int64_t width, uint16_t* out) {
  const int64_t blocks = channels / kLanes, plane = rows * channels, even_count = (count + 1) / 2 * 2;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t pair = 0; pair < even_count / 2; ++pair)
    for (int64_t block = 0; block < blocks; ++block) {
      __m512 even[kPositions], odd[kPositions];
      kTile(src, blocks, g, t0 + 2 * pair, block, even);
      if (2 * pair + 1 < count)
        kTile(src, blocks, g, t0 + 2 * pair + 1, block, odd);
      else
        for (__m512& o : odd) o = _mm512_setzero_ps();
      const int64_t at = pair_panel_index(even_count, channels, width, 2 * pair, block * kLanes);
      for (int p = 0; p < kPositions; ++p) store_bf16_pairs(out + p * plane + at, even[p], odd[p]);
    }
}

// G g G^T for 16 filters g at once, gathered from w (float32 (K, C, 3, 3)): w[k][c] for k = b ..
// b + 15 (forward), or, `turned`, w[a][c] for c = b .. b + 15 turned 180 degrees (backward data).
RT_AVX512 inline void filter_tile(const float* w, int64_t c_count, bool turned, int64_t a, int64_t b,
                                  __m512 u[kPositions]) {
  // The 16 filters' distance apart in w: along c (turned) or along k.
  const __m512i lanes = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(static_cast<int>(turned ? 9 : c_count * 9)));
  const float* f = turned ? w + (a * c_count + b) * 9 : w + (b * c_count + a) * 9;
  __m512 g[3][3];
  for (int r = 0; r < 3; ++r)
    for (int s = 0; s < 3; ++s)
      g[r][s] = _mm512_i32gather_ps(lanes, f + (turned ? (2 - r) * 3 + (2 - s) : r * 3 + s), 4);
  const __m512 half = _mm512_set1_ps(0.5f);
  __m512 t[4][3];
  for (int s = 0; s < 3; ++s) {
    t[0][s] = g[0][s];
    t[1][s] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(g[0][s], g[1][s]), g[2][s]));
    t[2][s] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(g[0][s], g[1][s]), g[2][s]));
    t[3][s] = g[2][s];
  }
  for (int i = 0; i < 4; ++i) {
    u[i * 4 + 0] = t[i][0];
    u[i * 4 + 1] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(t[i][0], t[i][1]), t[i][2]));
    u[i * 4 + 2] = _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(t[i][0], t[i][1]), t[i][2]));
    u[i * 4 + 3] = t[i][2];
  }
}

// U = G g G^T, rounded to bf16, in pair panels: U[p] (C x K) for the forward, or, `turned`, of the
// filters turned 180 degrees as U[p] (K x C) for backward data; rows (the products' sums) in pairs.
RT_AVX512 void filter_transform(const float* w, int64_t k_count, int64_t c_count, bool turned, uint16_t* u) {
  const int64_t rows = turned ? k_count : c_count, cols = turned ? c_count : k_count;
  const int64_t plane = k_count * c_count;
#pragma omp parallel for schedule(static)
  for (int64_t a = 0; a < rows; a += 2)
    for (int64_t b = 0; b < cols; b += kLanes) {
      __m512 even[kPositions], odd[kPositions];
      filter_tile(w, c_count, turned, a, b, even);
      filter_tile(w, c_count, turned, a + 1, b, odd);
      const int64_t at = pair_panel_index(rows, cols, kPairPanelWidth, a, b);
      for (int p = 0; p < kPositions; ++p) store_bf16_pairs(u + p * plane + at, even[p], odd[p]);
    }
}

// dw[k][c] = G^T dU G from dU[p][c][k] (float32), 16 filters (along k) at once, scattered to dw.
RT_AVX512 void filter_gradient_transform(const float* du, int64_t k_count, int64_t c_count, float* dw) {
  const int64_t plane = k_count * c_count;
  const __m512i lanes = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(static_cast<int>(c_count * 9)));
  const __m512 half = _mm512_set1_ps(0.5f);
#pragma omp parallel for schedule(static)
  for (int64_t c = 0; c < c_count; ++c)
    for (int64_t k = 0; k < k_count; k += kLanes) {
      __m512 m[4][4];
      for (int p = 0; p < kPositions; ++p) m[p / 4][p % 4] = _mm512_loadu_ps(du + p * plane + c * k_count + k);
      __m512 z[3][4];
      for (int j = 0; j < 4; ++j) {
        const __m512 mid = _mm512_mul_ps(half, _mm512_add_ps(m[1][j], m[2][j]));
        z[0][j] = _mm512_add_ps(m[0][j], mid);
        z[1][j] = _mm512_mul_ps(half, _mm512_sub_ps(m[1][j], m[2][j]));
        z[2][j] = _mm512_add_ps(mid, m[3][j]);
      }
      float* out = dw + (k * c_count + c) * 9;
      for (int r = 0; r < 3; ++r) {
        const __m512 mid = _mm512_mul_ps(half, _mm512_add_ps(z[r][1], z[r][2]));
        _mm512_i32scatter_ps(out + r * 3 + 0, lanes, _mm512_add_ps(z[r][0], mid), 4);
        _mm512_i32scatter_ps(out + r * 3 + 1, lanes, _mm512_mul_ps(half, _mm512_sub_ps(z[r][1], z[r][2])), 4);
        _mm512_i32scatter_ps(out + r * 3 + 2, lanes, _mm512_add_ps(mid, z[r][3]), 4);
      }
    }
}

// db[k] = the sum of dy (nChw16c) over images and pixels, in float32 as oneDNN's direct does.
RT_AVX512 void bias_gradient(const uint16_t* dy, int64_t k, const Tiling& g, float* db) {
  const int64_t blocks = k / kLanes, pixels = g.h * g.w;
#pragma omp parallel for schedule(static)
  for (int64_t kb = 0; kb < blocks; ++kb) {
    __m512 sum = _mm512_setzero_ps();
    for (int64_t n = 0; n < g.n; ++n) {
      const uint16_t* base = dy + (n * blocks + kb) * pixels * kLanes;
      for (int64_t i = 0; i < pixels; ++i) sum = _mm512_add_ps(sum, load_bf16(base + i * kLanes));
    }
    _mm512_storeu_ps(db + kb * kLanes, sum);
  }
}

}  // namespace

bool winograd_bf16_runs() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && cpu_bf16().runs;
}

bool winograd_bf16_pays(const WinogradBf16Shape& s) { return std::min(s.c, s.k) >= 128; }

struct WinogradBf16::Impl {
  WinogradBf16Shape s;
  Tiling g;
  // Tiles go through in chunks of at most `rows` (even: tiles pair up), and through backward
  // weights in chunks of `weight_rows`.
  int64_t rows = 0, weight_rows = 0;

  // The forward, C channels in and K out, or backward data, the forward of dy through the turned
  // filters, K in and C out (Note [bf16 Winograd]).
  void filter(int64_t in, int64_t out, bool turned, const uint16_t* x, const float* w, const float* bias, uint16_t* y) {
    uint16_t* u = scratch_as<uint16_t>(ScratchUse::kWinogradFilters);
    uint16_t* v = scratch_as<uint16_t>(ScratchUse::kWinogradTiles);
    float* products = scratch_as<float>(ScratchUse::kWinogradProducts);
    filter_transform(w, s.k, s.c, turned, u);
    PairProduct p;  // M[p] (tiles x out) = V[p] (tiles x in) U[p] (in x out)
    p.batch = kPositions, p.n = out, p.k = in;
    p.a = v, p.a_row = in / 2, p.a_pair = 1, p.a_batch = rows * in / 2;
    p.b = u, p.b_batch = in * out;
    p.c = products, p.c_batch = rows * out;
    for (int64_t t0 = 0; t0 < g.tiles(); t0 += rows) {
      const int64_t count = std::min(rows, g.tiles() - t0);
      input_transform(x, in, g, t0, count, rows, v);
      p.m = count;
      multiply_pairs(p);
      output_transform(products, out, g, t0, count, rows, bias, y);
    }
  }
};

WinogradBf16::WinogradBf16(const WinogradBf16Shape& s, int64_t tiles_per_chunk) : impl_(new Impl) {
  RT_CHECK(s.c % kLanes == 0 && s.k % kLanes == 0, "bf16 Winograd needs channels in multiples of 16");
  Impl& m = *impl_;
  m.s = s;
  m.g = {s.n, s.h, s.w, (s.h + 1) / 2, (s.w + 1) / 2};
  // The products run faster the more tiles they take at once (oneDNN's matmul, which made them
  // before ours, ran VGG-16's 512-channel layers 1.5x slower at 64 tiles than at 512), but each
  // tile costs memory: chunks hold one chunk's float32 products (16 x rows x channels) to 16 MiB,
  // and are even, so the last wastes little. Backward weights adds each chunk's dU to the sum of
  // the last; its bf16 operands take chunks of up to 32 MiB each: on VGG-16's 28 x 28 layers one
  // chunk instead of four took it from 29.4 to 25.1 ms (2 cores of a Zen 5).
  const int64_t widest = std::max(s.c, s.k);
  auto even_chunks = [&](int64_t most) {
    const int64_t chunks = (m.g.tiles() + most - 1) / most;
    return ((m.g.tiles() + chunks - 1) / chunks + 1) / 2 * 2;
  };
  m.rows = even_chunks(tiles_per_chunk > 0 ? tiles_per_chunk : std::max<int64_t>(64, (16 << 20) / (64 * widest)));
  m.weight_rows =
      even_chunks(tiles_per_chunk > 0 ? tiles_per_chunk : std::max<int64_t>(64, (32 << 20) / (32 * widest)));
  const auto bytes = [](int64_t rows, int64_t channels, size_t size) {
    return static_cast<size_t>(kPositions * rows * channels) * size;
  };
  reserve_scratch(ScratchUse::kWinogradTiles, std::max(bytes(m.rows, widest, 2), bytes(m.weight_rows, s.c, 2)));
  reserve_scratch(ScratchUse::kWinogradProducts, std::max(bytes(m.rows, widest, 4), bytes(m.weight_rows, s.k, 2)));
  reserve_scratch(ScratchUse::kWinogradFilters, bytes(s.c, s.k, 4));
}

WinogradBf16::~WinogradBf16() = default;

void WinogradBf16::forward(const uint16_t* x, const float* w, const float* b, uint16_t* y) {
  impl_->filter(impl_->s.c, impl_->s.k, /*turned=*/false, x, w, b, y);
}

void WinogradBf16::backward_data(const uint16_t* dy, const float* w, uint16_t* dx) {
  impl_->filter(impl_->s.k, impl_->s.c, /*turned=*/true, dy, w, nullptr, dx);
}

void WinogradBf16::backward_weights(const uint16_t* x, const uint16_t* dy, float* dw, float* db) {
  Impl& m = *impl_;
  float* du = scratch_as<float>(ScratchUse::kWinogradFilters);
  uint16_t* v = scratch_as<uint16_t>(ScratchUse::kWinogradTiles);
  uint16_t* dm = scratch_as<uint16_t>(ScratchUse::kWinogradProducts);
  PairProduct p;  // dU[p] (C x K) += V[p]^T (C x tiles) dM[p] (tiles x K), summed over the chunks
  p.batch = kPositions, p.m = m.s.c, p.n = m.s.k;
  p.a = v, p.a_row = 1, p.a_pair = m.s.c, p.a_batch = m.weight_rows * m.s.c / 2;
  p.b = dm, p.b_batch = m.weight_rows * m.s.k;
  p.c = du, p.c_batch = m.s.c * m.s.k;
  for (int64_t t0 = 0; t0 < m.g.tiles(); t0 += m.weight_rows) {
    const int64_t count = std::min(m.weight_rows, m.g.tiles() - t0);
    paired_transform<input_tile>(x, m.s.c, m.g, t0, count, m.weight_rows, m.s.c, v);
    paired_transform<gradient_tile>(dy, m.s.k, m.g, t0, count, m.weight_rows, kPairPanelWidth, dm);
    p.k = (count + 1) / 2 * 2;
    p.accumulate = t0 > 0;
    multiply_pairs(p);
  }
  filter_gradient_transform(du, m.s.k, m.s.c, dw);
  if (db) bias_gradient(dy, m.s.k, m.g, db);
}

}  // namespace rt::cpu
