// One sample of an image folder as the network reads it: decoded, transformed as torchvision's
// ImageNet recipes do (image_transforms.h) and normalised into planar float CHW.
//   training:   random resized crop to size x size, then a horizontal flip with probability 1/2;
//   evaluation: the shorter side resized to `resize`, then the centre size x size crop.
// The randomness of a training sample comes from (seed, epoch, sample index) alone, so a batch
// is the same whichever worker thread makes it and however many there are.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "data/image_decode.h"
#include "data/image_transforms.h"

namespace rt {

struct ImageSampleOptions {
  int size = 224;           // output side
  int resize = 256;         // evaluation: the shorter side before the centre crop
  ResizedCropOptions crop;  // training: scale and ratio ranges
  bool random_crop = true;  // training: false = the evaluation transform (images already at size: untouched)
  bool flip = true;         // training: horizontal flip with probability 1/2
  int channels = 3;         // 3 = RGB; 1 = luminance as Pillow's convert("L") (Fashion-MNIST's gray PNGs)
  std::array<double, 3> mean = {0.485, 0.456, 0.406};  // per channel, of pixels scaled to [0, 1]
  std::array<double, 3> std = {0.229, 0.224, 0.225};
  int64_t max_pixels = kDefaultMaxImagePixels;  // larger files are refused undecoded (Note [Pixel budget])
  bool crop_region_decode = true;               // a JPEG's training crop decodes the crop alone (same pixels)
  bool scaled_decode = false;  // and at 1/2, 1/4 or 1/8 scale where the crop is 2, 4 or 8 times the output

  int64_t floats() const { return int64_t{channels} * size * size; }
};

// The file's bytes decoded and transformed as transform_image does, with the same pixels: a
// training crop of a JPEG decodes only the crop's box (Note [Crop-region decoding] in
// data/jpeg_decode.cpp) where options.crop_region_decode; with options.scaled_decode also at the
// scale draft_scale gives, as Pillow's draft mode decodes (other pixels: Note [Scaled decoding]).
// rt::Error naming `name` for bad bytes.
RgbImage sample_image(std::span<const uint8_t> bytes, const std::string& name, const ImageSampleOptions& options,
                      bool training, uint64_t seed, int64_t epoch, int64_t sample);
// Pillow's draft rule for a crop: the largest a of 8, 4, 2 and 1 with the crop at least a times
// the output side in both directions.
int draft_scale(const CropBox& crop, int size);
// A JPEG's crop, chosen from the image's size, resized to size x size as Note [Scaled decoding]
// in image_sample.cpp says: decoded at draft_scale's scale, then Pillow's resize of the crop's box.
RgbImage scaled_resized_crop(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels,
                             const std::function<CropBox(int, int)>& choose, int size);
// The transformed image, before normalisation: what `sample_to_floats` normalises.
RgbImage transform_image(const RgbImage& image, const ImageSampleOptions& options, bool training, uint64_t seed,
                         int64_t epoch, int64_t sample);
// Writes options.floats() floats (C, size, size) of a transformed image.
void normalize_sample(const RgbImage& image, const ImageSampleOptions& options, float* out);

}  // namespace rt
