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
void flip_horizontally(RgbImage& image);

// Writes image as planar float CHW: (byte / 255 - mean[c]) / std[c].
void normalize_into(const RgbImage& image, const std::array<float, 3>& mean, const std::array<float, 3>& std,
                    float* chw);

}  // namespace rt
