// JPEG decoding with libjpeg-turbo, the library Pillow itself decodes JPEGs with, at Pillow's
// settings (accurate integer IDCT, smooth chroma upsampling): the pixels are the ones torchvision
// sees, and SIMD makes it about twice as fast as stb_image here (Note [JPEG decoder] in
// image_decode.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>

#include "data/image_decode.h"
#include "data/image_transforms.h"

namespace rt {

// Which part of an image to decode, chosen from its width and height once the header is read: a
// box of the image decoded at 1 / scale of its size (scale 1, 2, 4 or 8: libjpeg's DCT scaling,
// as Pillow's draft mode), in the coordinates of that scaled image.
struct JpegRegion {
  CropBox box;
  int scale = 1;
};
using RegionChooser = std::function<JpegRegion(int width, int height)>;

// The image in RGB (CMYK and YCCK converted as Pillow converts them), or with `region` only the
// box it chooses: the same pixels as the whole (scaled) image cropped, decoded faster (Note [Crop-region
// decoding] in jpeg_decode.cpp). A file Pillow refuses (an error in libjpeg's words, or data that
// ends before the last row) is an rt::Error naming `name` whatever the region, and so is a frame
// declaring more than `max_pixels` (Note [Pixel budget]); damage libjpeg only warns about is
// decoded as Pillow decodes it (Note [Pillow's verdict]).
RgbImage decode_jpeg(std::span<const uint8_t> bytes, const std::string& name,
                     int64_t max_pixels = kDefaultMaxImagePixels, const RegionChooser& region = {});

inline bool looks_like_jpeg(std::span<const uint8_t> bytes) {
  return bytes.size() >= 3 && bytes[0] == 0xFF && bytes[1] == 0xD8 && bytes[2] == 0xFF;
}

}  // namespace rt
