// The image transforms of torchvision's ImageNet recipes, on 8-bit RGB images, so that accuracy
// recipes carry over (Note [Pillow's bilinear]):
//   training:   random resized crop (scale, ratio; bilinear), horizontal flip, mean/std normalisation;
//   evaluation: resize the shorter side, centre crop, normalisation.
// Randomness comes from an Rng the caller derives from (seed, epoch, sample), so a sample's
// transform does not depend on which worker thread runs it.
#pragma once

#include <array>

#include "base/rng.h"
#include "data/image_decode.h"

namespace rt {

struct CropBox {
  int x = 0, y = 0, width = 0, height = 0;
  bool operator==(const CropBox&) const = default;
};

struct ResizedCropOptions {
  double scale_lo = 0.08, scale_hi = 1.0;             // of the image's area
  double ratio_lo = 3.0 / 4.0, ratio_hi = 4.0 / 3.0;  // width / height
};

// torchvision's RandomResizedCrop.get_params: ten tries at a box of random area and log-uniform
// aspect ratio that fits, then the centred box of the closest allowed ratio.
CropBox random_resized_crop_box(int width, int height, const ResizedCropOptions& options, Rng& rng);
// torchvision's CenterCrop box (offsets rounded half to even, as Python's round()); a box larger
// than the image is refused.
CropBox center_crop_box(int width, int height, int crop_width, int crop_height);
// torchvision's Resize(size) for an int size: the shorter side becomes `size`, the longer one
// size x long / short, truncated. Returns {width, height}.
std::array<int, 2> shorter_side_size(int width, int height, int size);

// Crops `box` out of `image` and resizes it to width x height with Pillow's bilinear filter.
RgbImage resized_crop(const RgbImage& image, const CropBox& box, int width, int height);
RgbImage crop(const RgbImage& image, const CropBox& box);

// A box in fractional pixels, [x0, x1) x [y0, y1).
struct FloatBox {
  double x0 = 0, y0 = 0, x1 = 0, y1 = 0;
};
// Where a part of an image lies in the whole: its first pixel, and the whole's size.
struct ImagePart {
  int x = 0, y = 0, full_width = 0, full_height = 0;
};
// Pillow's Image.resize((width, height), BILINEAR, box) of the whole image, from `part` alone
// (every pixel the filter reads must be in it). Both passes always run, as Pillow's do for a box
// that is not the whole image (a pass over a whole-pixel box of the same size is the identity).
RgbImage resized_box(const RgbImage& part, const ImagePart& at, const FloatBox& box, int width, int height);
void flip_horizontally(RgbImage& image);

// Writes image as planar float CHW: (byte / 255 - mean[c]) / std[c].
void normalize_into(const RgbImage& image, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                    float* chw);

}  // namespace rt
