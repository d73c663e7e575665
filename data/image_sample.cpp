#include "data/image_sample.h"

#include <algorithm>
#include <cmath>

#include "base/check.h"
#include "base/rng.h"
#include "data/jpeg_decode.h"

namespace rt {

namespace {
// The rt::Rng stream of a training sample's transform, away from the streams other code uses.
constexpr uint64_t kTransformStreamBase = 0x5452414E53464Dull;  // "TRANSFM"

RgbImage evaluation_transform(const RgbImage& image, const ImageSampleOptions& o) {
  if (image.width == o.size && image.height == o.size) return image;
  const auto [w, h] = shorter_side_size(image.width, image.height, o.resize);
  const RgbImage resized =
      w == image.width && h == image.height ? image : resized_crop(image, {0, 0, image.width, image.height}, w, h);
  return crop(resized, center_crop_box(w, h, o.size, o.size));
}

// A sample's draws: counter = sample x 256 + k, far more than the crop's ten tries ever take.
Rng sample_rng(uint64_t seed, int64_t epoch, int64_t sample) {
  return Rng(seed, kTransformStreamBase + static_cast<uint64_t>(epoch), static_cast<uint64_t>(sample) << 8);
}

// The flip, drawn after the crop's box from the same stream.
RgbImage maybe_flipped(RgbImage image, const ImageSampleOptions& o, bool training, Rng& rng) {
  if (training && o.flip && rng.uniform() < 0.5f) flip_horizontally(image);
  return image;
}
}  // namespace

RgbImage transform_image(const RgbImage& image, const ImageSampleOptions& o, bool training, uint64_t seed,
                         int64_t epoch, int64_t sample) {
  Rng rng = sample_rng(seed, epoch, sample);
  RgbImage out =
      training && o.random_crop
          ? resized_crop(image, random_resized_crop_box(image.width, image.height, o.crop, rng), o.size, o.size)
          : evaluation_transform(image, o);
  return maybe_flipped(std::move(out), o, training, rng);
}

int draft_scale(const CropBox& crop, int size) {
  const int fits = std::min(crop.width / size, crop.height / size);
  for (int a : {8, 4, 2})
    if (fits >= a) return a;
  return 1;
}

// Note [Scaled decoding]: with data.decode = "scaled" a crop at least twice the output side is
// decoded at 1/2, 1/4 or 1/8 scale in libjpeg's DCT (draft_scale, Pillow's rule for
// Image.draft), then resized from its box in the scaled image's fractional pixels, as Pillow's
// resize(box=...) does; only the part of the scaled image that the bilinear filter reads (the
// box, widened by the filter's support and a pixel for chroma upsampling) is decoded. The pixels
// are Pillow's draft-then-resize ones, not torchvision's: fewer DCT coefficients, and a filter
// over fewer pixels. FFCV and DALI's decoders trade the same way.
RgbImage scaled_resized_crop(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels,
                             const std::function<CropBox(int, int)>& choose, int size) {
  CropBox box;
  FloatBox scaled;
  ImagePart at;
  int scale = 1;
  const RgbImage part = decode_jpeg(bytes, name, max_pixels, [&](int width, int height) {
    box = choose(width, height);
    scale = draft_scale(box, size);
    if (scale == 1) return JpegRegion{box, 1};
    const double a = scale;
    const int W = (width + scale - 1) / scale, H = (height + scale - 1) / scale;  // libjpeg's and Pillow's
    scaled = {box.x / a, box.y / a, (box.x + box.width) / a, (box.y + box.height) / a};
    const double reach_x = std::max((scaled.x1 - scaled.x0) / size, 1.0) + 1;
    const double reach_y = std::max((scaled.y1 - scaled.y0) / size, 1.0) + 1;
    const int x0 = std::max(0, static_cast<int>(std::floor(scaled.x0 - reach_x)));
    const int y0 = std::max(0, static_cast<int>(std::floor(scaled.y0 - reach_y)));
    const int x1 = std::min(W, static_cast<int>(std::ceil(scaled.x1 + reach_x)));
    const int y1 = std::min(H, static_cast<int>(std::ceil(scaled.y1 + reach_y)));
    at = {x0, y0, W, H};
    return JpegRegion{{x0, y0, x1 - x0, y1 - y0}, scale};
  });
  return scale == 1 ? resized_crop(part, {0, 0, box.width, box.height}, size, size)
                    : resized_box(part, at, scaled, size, size);
}

RgbImage sample_image(std::span<const uint8_t> bytes, const std::string& name, const ImageSampleOptions& o,
                      bool training, uint64_t seed, int64_t epoch, int64_t sample) {
  if (training && o.random_crop && o.scaled_decode && looks_like_jpeg(bytes)) {
    Rng rng = sample_rng(seed, epoch, sample);
    const auto choose = [&](int width, int height) { return random_resized_crop_box(width, height, o.crop, rng); };
    RgbImage out = scaled_resized_crop(bytes, name, o.max_pixels, choose, o.size);
    return maybe_flipped(std::move(out), o, training, rng);
  }
  if (!(training && o.random_crop && o.crop_region_decode && looks_like_jpeg(bytes)))
    return transform_image(decode_image(bytes, name, o.max_pixels), o, training, seed, epoch, sample);
  // The box is drawn from the header's size, as transform_image draws it from the whole image's.
  Rng rng = sample_rng(seed, epoch, sample);
  CropBox box;
  const RgbImage part = decode_jpeg(bytes, name, o.max_pixels, [&](int width, int height) {
    box = random_resized_crop_box(width, height, o.crop, rng);
    return JpegRegion{box, 1};
  });
  RgbImage out = resized_crop(part, {0, 0, box.width, box.height}, o.size, o.size);
  return maybe_flipped(std::move(out), o, training, rng);
}

void normalize_sample(const RgbImage& image, const ImageSampleOptions& o, float* out) {
  RT_ASSERT(image.width == o.size && image.height == o.size);
  if (o.channels == 3) {
    normalize_into(image, {static_cast<float>(o.mean[0]), static_cast<float>(o.mean[1]), static_cast<float>(o.mean[2])},
                   {static_cast<float>(o.std[0]), static_cast<float>(o.std[1]), static_cast<float>(o.std[2])}, out);
    return;
  }
  RT_CHECK(o.channels == 1, "image samples have 1 or 3 channels, not ", o.channels);
  // As the IDX loader computes it (in double), so a gray folder gives exactly the IDX tensors.
  std::array<float, 256> table;
  for (int v = 0; v < 256; ++v) table[static_cast<size_t>(v)] = static_cast<float>((v / 255.0 - o.mean[0]) / o.std[0]);
  const size_t n = static_cast<size_t>(o.size) * static_cast<size_t>(o.size);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t* p = image.pixels.data() + 3 * i;
    // Pillow's convert("L"): ITU-R 601-2 luma in 16-bit fixed point; exact for gray pixels.
    out[i] = table[(p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16];
  }
}

}  // namespace rt
