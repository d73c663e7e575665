// Winograd's minimal filtering F(2x2, 3x3) in bf16, for 3x3 stride-1 convolutions with padding 1
// under train.precision = "bf16" and train.conv_algorithm = "winograd" (oneDNN 2.6 has no bf16
// Winograd of its own).
//
// Note [bf16 Winograd]: each 4x4 input tile d (stride 2) becomes V = B^T d B, each filter g
// U = G g G^T, and the 16 positions of the tile multiply as 16 independent matrix products,
// M[p] (tiles x K) = V[p] (tiles x C) U[p] (C x K), bf16 with float32 sums (ours, Note [bf16 pair
// products]: the transforms write U, and backward weights' operands, in the layouts it reads);
// Y = A^T M A gives 2x2 outputs. That is 16 products for 4 outputs where direct
// does 36: 2.25x fewer multiply-adds. Backward data is the same forward with the filter turned
// 180 degrees and C and K swapped; backward weights sums dU[p] = V[p]^T dM[p] over the tiles, with
// dM = A dy A^T, and returns G^T dU G. V, U and dM are rounded to bf16 (the products' inputs),
// sums and transforms of sums stay float32. Its entries reach up to 4x the input's (V) and 2.25x
// the filter's (U), so against direct bf16 the error grows by a few times bf16's rounding
// (tests/nn/winograd_bf16_test.cpp bounds it). Images are walked in chunks of tiles so the
// transformed tiles stay in cache between the transforms and the products. The transforms use
// AVX-512 (F and BW), on activations in nChw16c; callers check winograd_bf16_runs() first.
#pragma once

#include <cstdint>
#include <memory>

namespace rt::cpu {

struct WinogradBf16Shape {
  int64_t n = 0, c = 0, k = 0, h = 0, w = 0;  // batch, in and out channels (multiples of 16), H x W
};

// Whether this CPU runs it: AVX-512 F and BW, where oneDNN runs bf16 (the convolutions around it).
bool winograd_bf16_runs();
// Whether it beats oneDNN's direct bf16 convolution (bench/winograd_bf16_layers, 2 cores of a Zen 5):
// from 128 channels in and out, 1.05x (128 at 28 x 28) to 1.75x (512 at 28 x 28) over the three
// passes, at every size from 7 x 7 to 112 x 112. With 64 or 96 channels it lost (0.78 to 0.97):
// the products are too short for the transforms' cost.
bool winograd_bf16_pays(const WinogradBf16Shape& s);

class WinogradBf16 {
 public:
  // tiles_per_chunk: how many 2x2 output tiles go through the products at once (tests shrink it).
  explicit WinogradBf16(const WinogradBf16Shape& s, int64_t tiles_per_chunk = 0);
  ~WinogradBf16();
  WinogradBf16(const WinogradBf16&) = delete;
  WinogradBf16& operator=(const WinogradBf16&) = delete;

  // x, y, dy, dx: bf16 in nChw16c; w, dw: float32 (K, C, 3, 3); b, db: float32 (K) or null.
  void forward(const uint16_t* x, const float* w, const float* b, uint16_t* y);
  void backward_data(const uint16_t* dy, const float* w, uint16_t* dx);
  void backward_weights(const uint16_t* x, const uint16_t* dy, float* dw, float* db);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rt::cpu
