// Decoding an image file into 8-bit RGB, by content, whatever its name says: JPEG with
// libjpeg-turbo, PNG, BMP, TGA and GIF's first frame with stb_image. Grayscale is repeated into the three channels, palettes
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

// Note [Pixel budget]: a file of a few bytes can declare a frame of billions of pixels, which a
// decoder allocates before it finds the data missing (a 96-byte GIF took 2.3 GB). The size a
// header declares is checked first, for every format, against a budget: Pillow's, which refuses
// files above 2 x Image.MAX_IMAGE_PIXELS as a DecompressionBombError (data.max_image_pixels).
inline constexpr int64_t kDefaultMaxImagePixels = 178'956'970;

// rt::Error naming `name` unless width x height fits `max_pixels`.
void check_pixel_budget(int64_t width, int64_t height, int64_t max_pixels, const std::string& name);

// Throws rt::Error naming `name` and stb_image's reason when the bytes are not a decodable image,
// or when the image declares more than `max_pixels` pixels.
RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& name,
                      int64_t max_pixels = kDefaultMaxImagePixels);
// Reads and decodes a file; the error names the path.
RgbImage read_image(const std::string& path, int64_t max_pixels = kDefaultMaxImagePixels);
// The bytes of the file at path; rt::Error naming it where it cannot be read.
std::vector<uint8_t> read_file_bytes(const std::string& path);

}  // namespace rt
