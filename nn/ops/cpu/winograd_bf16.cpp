// Note [bf16 Winograd] in winograd_bf16.h. The transforms are AVX-512 loops over one nChw16c
// block (16 channels in one register); the products are oneDNN's batched bf16 matmul.
#include "nn/ops/cpu/winograd_bf16.h"

#include <immintrin.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "base/half_float.h"
#include "nn/cpu_bf16.h"
#include "nn/ops/cpu/dnnl_util.h"

#define RT_AVX512 __attribute__((target("avx512f,avx512bw")))
// GCC 12 takes the intrinsics' deliberately undefined pass-through operands for uninitialised.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

namespace rt::cpu {
namespace {

constexpr int64_t kLanes = 16;      // channels in one nChw16c block
constexpr int64_t kPositions = 16;  // a 4x4 transformed tile

// The transformed tiles and products live only inside one call, so every instance shares these,
// sized at plan time for the largest (as Staging's buffers).
class SharedBuffer {
 public:
  void reserve(size_t bytes) {
    if (bytes <= bytes_) return;
    std::free(data_);
    bytes_ = (bytes + 63) / 64 * 64;
    data_ = std::aligned_alloc(64, bytes_);
    RT_CHECK(data_ != nullptr, "cannot allocate ", bytes_, " bytes for bf16 Winograd");
  }
  template <class T>
  T* as() const {
    return static_cast<T*>(data_);
  }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};
SharedBuffer& tiles_buffer() {  // V: transformed input tiles, bf16
  static SharedBuffer b;
  return b;
}
SharedBuffer& products_buffer() {  // M (f32) or dM (bf16)
  static SharedBuffer b;
  return b;
}
SharedBuffer& filters_buffer() {  // U (bf16) or dU (f32)
  static SharedBuffer b;
  return b;
}
SharedBuffer& packed_filters_buffer() {  // U in the layout the products read
  static SharedBuffer b;
  return b;
}

RT_AVX512 inline __m512 load_bf16(const uint16_t* p) {
  const __m256i h = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16));
}

// Round to nearest even, NaN stays NaN: float_to_bf16 on 16 lanes.
RT_AVX512 inline void store_bf16(uint16_t* p, __m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i odd = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(odd, _mm512_set1_epi32(0x7fff))), 16);
  const __mmask16 nan = _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q);
  r = _mm512_mask_or_epi32(r, nan, _mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40));
  _mm256_storeu_si256(reinterpret_cast<__m256i*>(p), _mm512_cvtepi32_epi16(r));
}

struct Tiling {
  int64_t n, h, w, th, tw;  // image, and tiles down and across
  int64_t tiles() const { return n * th * tw; }
};

// V[p][t][c] = (B^T d B)[p] for tiles t0 .. t0 + count of x (nChw16c, `c` channels); rows `rows`
// per position, those past `count` zeroed.
RT_AVX512 void input_transform(const uint16_t* x, int64_t c, const Tiling& g, int64_t t0, int64_t count, int64_t rows,
                               uint16_t* v) {
  const int64_t blocks = c / kLanes, per_image = g.th * g.tw;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t t = 0; t < count; ++t)
    for (int64_t cb = 0; cb < blocks; ++cb) {
      const int64_t tile = t0 + t, n = tile / per_image, ti = tile % per_image / g.tw, tj = tile % g.tw;
      const uint16_t* base = x + (n * blocks + cb) * g.h * g.w * kLanes;
      __m512 d[4][4];
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j) {
          const int64_t row = 2 * ti - 1 + i, col = 2 * tj - 1 + j;
          d[i][j] = row >= 0 && row < g.h && col >= 0 && col < g.w ? load_bf16(base + (row * g.w + col) * kLanes)
                                                                   : _mm512_setzero_ps();
        }
      __m512 r[4][4];
      for (int j = 0; j < 4; ++j) {
        r[0][j] = _mm512_sub_ps(d[0][j], d[2][j]);
        r[1][j] = _mm512_add_ps(d[1][j], d[2][j]);
        r[2][j] = _mm512_sub_ps(d[2][j], d[1][j]);
        r[3][j] = _mm512_sub_ps(d[1][j], d[3][j]);
      }
      uint16_t* out = v + t * c + cb * kLanes;
      const int64_t plane = rows * c;
      for (int i = 0; i < 4; ++i) {
        store_bf16(out + (i * 4 + 0) * plane, _mm512_sub_ps(r[i][0], r[i][2]));
        store_bf16(out + (i * 4 + 1) * plane, _mm512_add_ps(r[i][1], r[i][2]));
        store_bf16(out + (i * 4 + 2) * plane, _mm512_sub_ps(r[i][2], r[i][1]));
        store_bf16(out + (i * 4 + 3) * plane, _mm512_sub_ps(r[i][1], r[i][3]));
      }
    }
  if (count < rows)
    for (int64_t p = 0; p < kPositions; ++p)
      std::memset(v + (p * rows + count) * c, 0, static_cast<size_t>((rows - count) * c) * sizeof(uint16_t));
}

// y (nChw16c, `k` channels) for tiles t0 .. t0 + count from M[p][t][k] (float32): A^T M A, plus
// the bias where given, rounded to bf16; outputs past the image's edge are dropped.
RT_AVX512 void output_transform(const float* m, int64_t k, const Tiling& g, int64_t t0, int64_t count, int64_t rows,
                                const float* bias, uint16_t* y) {
  const int64_t blocks = k / kLanes, per_image = g.th * g.tw, plane = rows * k;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t t = 0; t < count; ++t)
    for (int64_t kb = 0; kb < blocks; ++kb) {
      const int64_t tile = t0 + t, n = tile / per_image, ti = tile % per_image / g.tw, tj = tile % g.tw;
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

// dM[p][t][k] = (A e A^T)[p] for the 2x2 output-gradient tiles e of dy (nChw16c), rounded to bf16.
RT_AVX512 void gradient_transform(const uint16_t* dy, int64_t k, const Tiling& g, int64_t t0, int64_t count,
                                  int64_t rows, uint16_t* dm) {
  const int64_t blocks = k / kLanes, per_image = g.th * g.tw, plane = rows * k;
#pragma omp parallel for collapse(2) schedule(static)
  for (int64_t t = 0; t < count; ++t)
    for (int64_t kb = 0; kb < blocks; ++kb) {
      const int64_t tile = t0 + t, n = tile / per_image, ti = tile % per_image / g.tw, tj = tile % g.tw;
      const uint16_t* base = dy + (n * blocks + kb) * g.h * g.w * kLanes;
      __m512 e[2][2];
      for (int a = 0; a < 2; ++a)
        for (int b = 0; b < 2; ++b) {
          const int64_t row = 2 * ti + a, col = 2 * tj + b;
          e[a][b] = row < g.h && col < g.w ? load_bf16(base + (row * g.w + col) * kLanes) : _mm512_setzero_ps();
        }
      const __m512 zero = _mm512_setzero_ps();
      __m512 q[4][2];
      for (int b = 0; b < 2; ++b) {
        q[0][b] = e[0][b];
        q[1][b] = _mm512_add_ps(e[0][b], e[1][b]);
        q[2][b] = _mm512_sub_ps(e[0][b], e[1][b]);
        q[3][b] = _mm512_sub_ps(zero, e[1][b]);
      }
      uint16_t* out = dm + t * k + kb * kLanes;
      for (int i = 0; i < 4; ++i) {
        store_bf16(out + (i * 4 + 0) * plane, q[i][0]);
        store_bf16(out + (i * 4 + 1) * plane, _mm512_add_ps(q[i][0], q[i][1]));
        store_bf16(out + (i * 4 + 2) * plane, _mm512_sub_ps(q[i][0], q[i][1]));
        store_bf16(out + (i * 4 + 3) * plane, _mm512_sub_ps(zero, q[i][1]));
      }
    }
  if (count < rows)
    for (int64_t p = 0; p < kPositions; ++p)
      std::memset(dm + (p * rows + count) * k, 0, static_cast<size_t>((rows - count) * k) * sizeof(uint16_t));
}

// U = G g G^T of each filter g = w[k][c] (float32 (K, C, 3, 3)), rounded to bf16: as U[p][c][k]
// for the forward, or, `turned`, of the filter turned 180 degrees as U[p][k][c] for backward data.
// 16 filters at once, along the output's contiguous axis, gathered from w.
RT_AVX512 void filter_transform(const float* w, int64_t k_count, int64_t c_count, bool turned, uint16_t* u) {
  const int64_t outer = turned ? k_count : c_count, inner = turned ? c_count : k_count;
  const int64_t plane = k_count * c_count;
  // The 16 filters' distance apart in w: along c (turned) or along k.
  const __m512i lanes = _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                                           _mm512_set1_epi32(static_cast<int>(turned ? 9 : c_count * 9)));
#pragma omp parallel for schedule(static)
  for (int64_t a = 0; a < outer; ++a)
    for (int64_t b = 0; b < inner; b += kLanes) {
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
      uint16_t* out = u + a * inner + b;
      for (int i = 0; i < 4; ++i) {
        store_bf16(out + (i * 4 + 0) * plane, t[i][0]);
        store_bf16(out + (i * 4 + 1) * plane,
                   _mm512_mul_ps(half, _mm512_add_ps(_mm512_add_ps(t[i][0], t[i][1]), t[i][2])));
        store_bf16(out + (i * 4 + 2) * plane,
                   _mm512_mul_ps(half, _mm512_add_ps(_mm512_sub_ps(t[i][0], t[i][1]), t[i][2])));
        store_bf16(out + (i * 4 + 3) * plane, t[i][2]);
      }
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

dnnl::matmul::primitive_desc plan_matmul(const md& a, const md& b, const md& c, bool accumulate) {
  dnnl::primitive_attr attr;
  if (accumulate) {
    dnnl::post_ops ops;
    ops.append_sum(1.f);
    attr.set_post_ops(ops);
  }
  return dnnl::matmul::primitive_desc(dnnl::matmul::desc(a, b, c), attr, engine());
}

dnnl::memory at(const md& desc, const void* data) { return dnnl::memory(desc, engine(), const_cast<void*>(data)); }

void run(dnnl::matmul& mm, const md& a_md, const void* a, const md& b_md, const void* b, const md& c_md, void* c) {
  mm.execute(stream(), {{DNNL_ARG_SRC, at(a_md, a)}, {DNNL_ARG_WEIGHTS, at(b_md, b)}, {DNNL_ARG_DST, at(c_md, c)}});
  stream().wait();
}

md batched(int64_t rows, int64_t cols, dt type) { return md({kPositions, rows, cols}, type, tag::abc); }

}  // namespace

bool winograd_bf16_runs() {
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") && cpu_bf16().runs;
}

bool winograd_bf16_pays(const WinogradBf16Shape& s) {
  const int64_t side = std::min(s.h, s.w);
  return std::min(s.c, s.k) >= 256 && side >= 14 && std::max(s.h, s.w) <= 56;
}

// A pass through transformed filters: the forward, C channels in and K out, or backward data,
// the forward of dy through the turned filters, K in and C out (Note [bf16 Winograd]).
struct Filtering {
  int64_t in = 0, out = 0;  // channels
  bool turned = false;
  md tiles, plain, packed, products;  // V (rows x in), U (in x out) plain and packed, M (rows x out)
  dnnl::matmul multiply;
  // U into the layout the products read, once a call; where the matmul reads U as it is (plain
  // on the AVX512_BF16 CPUs measured), no copy: on ResNet-101 it took 0.1 ms a call.
  bool repack = false;
  dnnl::reorder pack;

  Filtering() = default;
  Filtering(int64_t in_channels, int64_t out_channels, bool turned_filters, int64_t rows)
      : in(in_channels), out(out_channels), turned(turned_filters) {
    tiles = batched(rows, in, dt::bf16);
    plain = batched(in, out, dt::bf16);
    products = batched(rows, out, dt::f32);
    const auto pd = plan_matmul(tiles, md({kPositions, in, out}, dt::bf16, tag::any), products, false);
    packed = pd.weights_desc();
    multiply = dnnl::matmul(pd);
    repack = packed != plain;
    if (repack) pack = dnnl::reorder(dnnl::reorder::primitive_desc(engine(), plain, engine(), packed));
  }
};

struct WinogradBf16::Impl {
  WinogradBf16Shape s;
  Tiling g;
  int64_t rows = 0;  // tiles go through in chunks of at most `rows`
  Filtering forward, data;
  md vt_md, dm_md, du_md;  // backward weights: V^T (C x rows) dM (rows x K) = dU (C x K)
  dnnl::matmul bww_first, bww_sum;

  void filter(Filtering& f, const uint16_t* in, const float* w, const float* bias, uint16_t* out) {
    uint16_t* u = filters_buffer().as<uint16_t>();
    uint16_t* v = tiles_buffer().as<uint16_t>();
    float* prod = products_buffer().as<float>();
    filter_transform(w, s.k, s.c, f.turned, u);
    const void* packed = u;
    if (f.repack) {
      packed = packed_filters_buffer().as<void>();
      dnnl::memory from = at(f.plain, u), to = at(f.packed, packed);
      f.pack.execute(stream(), from, to);
      stream().wait();
    }
    for (int64_t t0 = 0; t0 < g.tiles(); t0 += rows) {
      const int64_t count = std::min(rows, g.tiles() - t0);
      input_transform(in, f.in, g, t0, count, rows, v);
      run(f.multiply, f.tiles, v, f.packed, packed, f.products, prod);
      output_transform(prod, f.out, g, t0, count, rows, bias, out);
    }
  }
};

WinogradBf16::WinogradBf16(const WinogradBf16Shape& s, int64_t tiles_per_chunk) : impl_(new Impl) {
  RT_CHECK(s.c % kLanes == 0 && s.k % kLanes == 0, "bf16 Winograd needs channels in multiples of 16");
  Impl& m = *impl_;
  m.s = s;
  m.g = {s.n, s.h, s.w, (s.h + 1) / 2, (s.w + 1) / 2};
  // The products run faster the more tiles they take at once (oneDNN's matmul at 64 tiles ran
  // VGG-16's 512-channel layers 1.5x slower than at 512, bench/winograd_bf16_layers), but each
  // tile costs memory: chunks hold one chunk's float32 products (16 x rows x channels) to 16 MiB,
  // and are even, so the last wastes little.
  const int64_t widest = std::max(s.c, s.k);
  const int64_t most = tiles_per_chunk > 0 ? tiles_per_chunk : std::max<int64_t>(64, (16 << 20) / (64 * widest));
  const int64_t chunks = (m.g.tiles() + most - 1) / most;
  m.rows = (m.g.tiles() + chunks - 1) / chunks;
  m.forward = Filtering(s.c, s.k, /*turned_filters=*/false, m.rows);
  m.data = Filtering(s.k, s.c, /*turned_filters=*/true, m.rows);
  m.vt_md = md({kPositions, s.c, m.rows}, dt::bf16, dnnl::memory::dims{m.rows * s.c, 1, s.c});
  m.dm_md = batched(m.rows, s.k, dt::bf16);
  m.du_md = batched(s.c, s.k, dt::f32);
  m.bww_first = dnnl::matmul(plan_matmul(m.vt_md, m.dm_md, m.du_md, false));
  m.bww_sum = dnnl::matmul(plan_matmul(m.vt_md, m.dm_md, m.du_md, true));
  const size_t widest_rows = static_cast<size_t>(kPositions * m.rows * widest);
  tiles_buffer().reserve(widest_rows * sizeof(uint16_t));
  products_buffer().reserve(widest_rows * sizeof(float));
  filters_buffer().reserve(static_cast<size_t>(kPositions * s.c * s.k) * sizeof(float));
  if (m.forward.repack || m.data.repack)
    packed_filters_buffer().reserve(std::max(m.forward.packed.get_size(), m.data.packed.get_size()));
}

WinogradBf16::~WinogradBf16() = default;

void WinogradBf16::forward(const uint16_t* x, const float* w, const float* b, uint16_t* y) {
  impl_->filter(impl_->forward, x, w, b, y);
}

void WinogradBf16::backward_data(const uint16_t* dy, const float* w, uint16_t* dx) {
  impl_->filter(impl_->data, dy, w, nullptr, dx);
}

void WinogradBf16::backward_weights(const uint16_t* x, const uint16_t* dy, float* dw, float* db) {
  Impl& m = *impl_;
  float* du = filters_buffer().as<float>();
  uint16_t* v = tiles_buffer().as<uint16_t>();
  // dM is bf16, half the products buffer's float32 size: it fits.
  uint16_t* dm = products_buffer().as<uint16_t>();
  for (int64_t t0 = 0; t0 < m.g.tiles(); t0 += m.rows) {
    const int64_t count = std::min(m.rows, m.g.tiles() - t0);
    input_transform(x, m.s.c, m.g, t0, count, m.rows, v);
    gradient_transform(dy, m.s.k, m.g, t0, count, m.rows, dm);
    run(t0 == 0 ? m.bww_first : m.bww_sum, m.vt_md, v, m.dm_md, dm, m.du_md, du);
  }
  filter_gradient_transform(du, m.s.k, m.s.c, dw);
  if (db) bias_gradient(dy, m.s.k, m.g, db);
}

}  // namespace rt::cpu
