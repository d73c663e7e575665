#include "data/image_transforms.h"

#include <algorithm>
#include <cfenv>
#include <cmath>
#include <cstdint>
#include <vector>

#include "base/check.h"

namespace rt {

namespace {
// Python's round(): half to even (the default floating-point rounding mode).
int round_half_even(double v) { return static_cast<int>(std::nearbyint(v)); }

// A uniform double in [lo, hi) from 53 random bits.
double uniform(Rng& rng, double lo, double hi) {
  return lo + (hi - lo) * static_cast<double>(rng.next_u64() >> 11) * (1.0 / 9007199254740992.0);
}
}  // namespace

CropBox random_resized_crop_box(int width, int height, const ResizedCropOptions& o, Rng& rng) {
  RT_CHECK(width > 0 && height > 0, "random resized crop of an empty image");
  const double area = static_cast<double>(width) * height;
  const double log_lo = std::log(o.ratio_lo), log_hi = std::log(o.ratio_hi);
  for (int attempt = 0; attempt < 10; ++attempt) {
    const double target = area * uniform(rng, o.scale_lo, o.scale_hi);
    const double ratio = std::exp(uniform(rng, log_lo, log_hi));
    const int w = round_half_even(std::sqrt(target * ratio));
    const int h = round_half_even(std::sqrt(target / ratio));
    if (w > 0 && h > 0 && w <= width && h <= height) {
      const int y = static_cast<int>(rng.below(static_cast<uint64_t>(height - h + 1)));
      const int x = static_cast<int>(rng.below(static_cast<uint64_t>(width - w + 1)));
      return {x, y, w, h};
    }
  }
  // No try fitted: the whole image, cut down to the nearest allowed ratio, centred.
  const double in_ratio = static_cast<double>(width) / height;
  int w = width, h = height;
  if (in_ratio < std::min(o.ratio_lo, o.ratio_hi)) {
    h = round_half_even(w / std::min(o.ratio_lo, o.ratio_hi));
  } else if (in_ratio > std::max(o.ratio_lo, o.ratio_hi)) {
    w = round_half_even(h * std::max(o.ratio_lo, o.ratio_hi));
  }
  return {(width - w) / 2, (height - h) / 2, w, h};
}

CropBox center_crop_box(int width, int height, int crop_width, int crop_height) {
  RT_CHECK(crop_width <= width && crop_height <= height, "centre crop of ", crop_width, "x", crop_height,
           " from an image of ", width, "x", height);
  return {round_half_even((width - crop_width) / 2.0), round_half_even((height - crop_height) / 2.0), crop_width,
          crop_height};
}

std::array<int, 2> shorter_side_size(int width, int height, int size) {
  if (width <= height) return {size, static_cast<int>(static_cast<double>(size) * height / width)};
  return {static_cast<int>(static_cast<double>(size) * width / height), size};
}

RgbImage crop(const RgbImage& image, const CropBox& box) {
  RT_CHECK(box.x >= 0 && box.y >= 0 && box.width > 0 && box.height > 0 && box.x + box.width <= image.width &&
               box.y + box.height <= image.height,
           "crop box ", box.width, "x", box.height, "+", box.x, "+", box.y, " outside an image of ", image.width, "x",
           image.height);
  RgbImage out;
  out.width = box.width;
  out.height = box.height;
  out.pixels.resize(static_cast<size_t>(box.width) * box.height * 3);
  for (int y = 0; y < box.height; ++y)
    std::copy_n(image.at(box.x, box.y + y), static_cast<size_t>(box.width) * 3,
                out.pixels.data() + static_cast<size_t>(y) * box.width * 3);
  return out;
}

// Note [Pillow's bilinear]: torchvision resizes PIL images with Pillow, whose "bilinear" is a
// separable convolution with a triangle filter widened by the downscaling factor (so it
// antialiases), with weights in 22-bit fixed point and each pass rounded to 8 bits: horizontal
// first, then vertical. Doing the same arithmetic gives the same bytes, so crops and resizes here
// equal torchvision's on the same decoded image.
namespace {
constexpr int kPrecisionBits = 32 - 8 - 2;

struct Taps {
  std::vector<int> first, count;  // per output pixel: first input pixel and how many
  std::vector<int32_t> weights;   // per output pixel, `stride` of them
  int stride = 0;
};

// Pillow's precompute_coeffs: out_size pixels from the span [in0, in1) of in_size pixels.
Taps bilinear_taps(int in_size, double in0, double in1, int out_size) {
  const double scale = (in1 - in0) / out_size;
  const double filter_scale = std::max(scale, 1.0);
  const double support = 1.0 * filter_scale;  // the triangle filter reaches 1 pixel at scale 1
  Taps t;
  t.stride = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(static_cast<size_t>(out_size));
  t.count.resize(static_cast<size_t>(out_size));
  t.weights.assign(static_cast<size_t>(out_size) * static_cast<size_t>(t.stride), 0);
  std::vector<double> k(static_cast<size_t>(t.stride));
  for (int o = 0; o < out_size; ++o) {
    const double center = in0 + (o + 0.5) * scale;
    const double inv = 1.0 / filter_scale;
    const int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    const int n = std::min(static_cast<int>(center + support + 0.5), in_size) - lo;
    double sum = 0;
    for (int i = 0; i < n; ++i) {
      const double x = std::abs((i + lo - center + 0.5) * inv);
      k[static_cast<size_t>(i)] = x < 1.0 ? 1.0 - x : 0.0;
      sum += k[static_cast<size_t>(i)];
    }
    for (int i = 0; i < n; ++i) {
      const double w = sum != 0 ? k[static_cast<size_t>(i)] / sum : 0;
      t.weights[static_cast<size_t>(o * t.stride + i)] =
          static_cast<int32_t>(w < 0 ? -0.5 + w * (1 << kPrecisionBits) : 0.5 + w * (1 << kPrecisionBits));
    }
    t.first[static_cast<size_t>(o)] = lo;
    t.count[static_cast<size_t>(o)] = n;
  }
  return t;
}

uint8_t clip8(int64_t v) { return static_cast<uint8_t>(std::clamp<int64_t>(v >> kPrecisionBits, 0, 255)); }

// The taps' first pixels are offset pixels right of the input's first column (row, below).
RgbImage resize_horizontal(const RgbImage& in, const Taps& t, int offset) {
  const int width = static_cast<int>(t.first.size());
  RgbImage out;
  out.width = width;
  out.height = in.height;
  out.pixels.resize(static_cast<size_t>(width) * in.height * 3);
  for (int y = 0; y < in.height; ++y)
    for (int x = 0; x < width; ++x) {
      int64_t acc[3] = {1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1), 1 << (kPrecisionBits - 1)};
      const int32_t* w = t.weights.data() + static_cast<size_t>(x) * t.stride;
      for (int i = 0; i < t.count[static_cast<size_t>(x)]; ++i) {
        const uint8_t* p = in.at(t.first[static_cast<size_t>(x)] - offset + i, y);
        for (int c = 0; c < 3; ++c) acc[c] += static_cast<int64_t>(p[c]) * w[i];
      }
      uint8_t* q = out.pixels.data() + (static_cast<size_t>(y) * width + x) * 3;
      for (int c = 0; c < 3; ++c) q[c] = clip8(acc[c]);
    }
  return out;
}

RgbImage resize_vertical(const RgbImage& in, const Taps& t, int offset) {
  const int height = static_cast<int>(t.first.size());
  RgbImage out;
  out.width = in.width;
  out.height = height;
  out.pixels.resize(static_cast<size_t>(in.width) * height * 3);
  std::vector<int64_t> acc(static_cast<size_t>(in.width) * 3);
  for (int y = 0; y < height; ++y) {
    std::fill(acc.begin(), acc.end(), int64_t{1} << (kPrecisionBits - 1));
    const int32_t* w = t.weights.data() + static_cast<size_t>(y) * t.stride;
    for (int i = 0; i < t.count[static_cast<size_t>(y)]; ++i) {
      const uint8_t* row = in.at(0, t.first[static_cast<size_t>(y)] - offset + i);
      for (size_t j = 0; j < acc.size(); ++j) acc[j] += static_cast<int64_t>(row[j]) * w[i];
    }
    uint8_t* q = out.pixels.data() + static_cast<size_t>(y) * in.width * 3;
    for (size_t j = 0; j < acc.size(); ++j) q[j] = clip8(acc[j]);
  }
  return out;
}
}  // namespace

RgbImage resized_crop(const RgbImage& image, const CropBox& box, int width, int height) {
  RT_CHECK(width > 0 && height > 0, "resize to ", width, "x", height);
  RgbImage out = crop(image, box);
  if (out.width != width) out = resize_horizontal(out, bilinear_taps(out.width, 0, out.width, width), 0);
  if (out.height != height) out = resize_vertical(out, bilinear_taps(out.height, 0, out.height, height), 0);
  return out;
}

RgbImage resized_box(const RgbImage& part, const ImagePart& at, const FloatBox& box, int width, int height) {
  RT_CHECK(width > 0 && height > 0, "resize to ", width, "x", height);
  const Taps h = bilinear_taps(at.full_width, box.x0, box.x1, width);
  const Taps v = bilinear_taps(at.full_height, box.y0, box.y1, height);
  // Every tap inside the part: it was decoded wide enough.
  for (size_t i = 0; i < h.first.size(); ++i)
    RT_ASSERT(h.first[i] >= at.x && h.first[i] + h.count[i] <= at.x + part.width);
  for (size_t i = 0; i < v.first.size(); ++i)
    RT_ASSERT(v.first[i] >= at.y && v.first[i] + v.count[i] <= at.y + part.height);
  return resize_vertical(resize_horizontal(part, h, at.x), v, at.y);
}

void flip_horizontally(RgbImage& image) {
  for (int y = 0; y < image.height; ++y)
    for (int x = 0; x < image.width / 2; ++x) {
      uint8_t* a = image.pixels.data() + (static_cast<size_t>(y) * image.width + x) * 3;
      uint8_t* b = image.pixels.data() + (static_cast<size_t>(y) * image.width + image.width - 1 - x) * 3;
      std::swap_ranges(a, a + 3, b);
    }
}

void normalize_into(const RgbImage& image, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                    float* chw) {
  const size_t plane = static_cast<size_t>(image.width) * image.height;
  for (int c = 0; c < 3; ++c)
    for (size_t i = 0; i < plane; ++i)
      // As torchvision: ToTensor divides by 255, Normalize subtracts the mean, then divides.
      chw[static_cast<size_t>(c) * plane + i] =
          (static_cast<float>(image.pixels[i * 3 + static_cast<size_t>(c)]) / 255.0f - mean[static_cast<size_t>(c)]) /
          std[static_cast<size_t>(c)];
}

}  // namespace rt
