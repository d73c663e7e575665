// Decoding an image file into 8-bit RGB with stb_image, by content (JPEG, PNG, BMP, TGA, GIF's
// first frame), whatever its name says. Grayscale is repeated into the three channels, palettes
// are expanded, alpha is dropped (as Pillow's convert("RGB") does) and 16-bit samples keep their
// high byte.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rt {

struct RgbImage {
  int width = 0, height = 0;
  std::vector<uint8_t> pixels;  // height x width x 3, row-major

  const uint8_t* at(int x, int y) const { return pixels.data() + (static_cast<size_t>(y) * width + x) * 3; }
};

// Throws rt::Error naming `name` and stb_image's reason when the bytes are not a decodable image.
RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& name);
// Reads and decodes a file; the error names the path.
RgbImage read_image(const std::string& path);

}  // namespace rt
