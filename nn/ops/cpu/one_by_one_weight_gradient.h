// The weight gradient of a 1x1, stride-1 bf16 convolution as one matrix product, where oneDNN
// 2.6's backward-weights kernel is slow.
//
// Note [1x1 weight gradient as a product]: dW (K x C) = dY (K x R) X (R x C), summed over the R =
// N x H x W pixels of the batch. oneDNN 2.6's 1x1 bf16 backward-weights kernel ran Inception-v3's
// 1x1 layers at about 190 G multiply-adds/s on a Zen 5, against 425 for the network's forward
// convolutions, and was slowest where an image has an odd number of pixels. Ours lays dy out as K
// rows of R pixels (pairs of pixels interleaved, then transposed in AVX-512 registers) and x as R
// rows of C channels in pair panels, and multiplies them as pair products (Note [bf16 pair
// products] in bf16_pair_product.h), which write the float32 dW straight into the plain gradient;
// an odd R gains a zero pixel. Both sum bf16 products in float32, in different orders: they
// agree to float32's rounding of the sums, not bit for bit. It runs only where oneDNN runs
// avx512_core_bf16, and only on the shapes where it measured faster (pays()).
#pragma once

#include <cstdint>

namespace rt::cpu {

class OneByOneWeightGradient {
 public:
  // Whether ours runs here for these channel counts (multiples of 16).
  static bool runs(int64_t c, int64_t k);
  // Whether it beats oneDNN's (bench/one_by_one_weight_gradient_layers, 2 cores of a Zen 5, caches
  // cold): where an image has an odd number of pixels or at most 64, with 128 outputs or more. It
  // was 1.14x to 1.61x faster at 7 x 7 and 17 x 17, 0.96x to 1.33x at 8 x 8; it lost at 14 x 14
  // (0.87 to 0.99 but for two shapes of one and four layers) and with 32 to 64 outputs (0.60 to
  // 0.95), where oneDNN's kernel runs near its forward's rate or the product's rows are too few.
  static bool pays(int64_t c, int64_t k, int64_t pixels);

  // n images of `pixels` pixels each, c channels in and k out.
  OneByOneWeightGradient(int64_t n, int64_t c, int64_t k, int64_t pixels);

  // x (n, c, pixels) and dy (n, k, pixels): bf16 in nChw16c; dw: float32 (k, c).
  void operator()(const uint16_t* x, const uint16_t* dy, float* dw);

 private:
  int64_t n_, c_, k_, pixels_;
  int64_t rows_;  // the R = n x pixels rows of the product, rounded up to even
};

}  // namespace rt::cpu
