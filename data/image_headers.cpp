#include "data/image_headers.h"

#include <zlib.h>

#include <cstdlib>
#include <cstring>

#include "base/check.h"
#include "data/image_decode.h"

namespace rt {

// Note [Declared sizes]
// stb_image believes a header: it allocates what the header declares and reads past the end of
// the data as zeros. So a 59-byte BMP declaring 1,805 x -196,608 pixels (a top-down bitmap, whose
// negative height once made the pixel budget's product negative) took 2.3 GB and was trained on,
// a 573-byte PNG whose image data chunk declares 1.2 GB made it reallocate that much, and a BMP
// cut in half decoded with a black bottom. Pillow refuses all three: the first for a compression
// it does not know, the others as truncated. Before stb_image sees a file, then:
// - the pixel budget takes the dimensions the decoder will use: a BMP's height without its sign,
//   the 16-bit sizes of old BMPs, TGAs and GIFs, PNG's 32-bit ones, all multiplied in 64 bits;
// - an uncompressed BMP's or TGA's pixel rows, and every PNG chunk up to the image data, must lie
//   inside the file (Pillow: "image file is truncated");
// - where Pillow refuses what stb_image takes, Pillow's verdict stands (Note [Pillow's verdict] in
//   jpeg_decode.cpp): a BMP compression other than none (0) and bitfields (3), and a PNG chunk
//   before the image data whose CRC is wrong ("broken PNG file").
// What remains different: Pillow reads run-length encoded BMPs (compression 1 and 2), which
// stb_image refuses, and it refuses bitfield masks outside the few layouts it knows, which
// stb_image takes.
namespace {

uint32_t le16(std::span<const uint8_t> b, size_t at) { return b[at] | uint32_t{b[at + 1]} << 8; }
uint32_t le32(std::span<const uint8_t> b, size_t at) { return le16(b, at) | le16(b, at + 2) << 16; }
uint32_t be32(std::span<const uint8_t> b, size_t at) {
  return uint32_t{b[at]} << 24 | uint32_t{b[at + 1]} << 16 | uint32_t{b[at + 2]} << 8 | b[at + 3];
}

void check_bmp(std::span<const uint8_t> b, const std::string& name, int64_t max_pixels) {
  if (b.size() < 30) return;
  const int64_t offset = le32(b, 10), header = le32(b, 14);
  int64_t width = 0, height = 0, bits = 0, compression = 0;
  if (header == 12) {
    width = le16(b, 18), height = le16(b, 20), bits = le16(b, 24);
  } else {
    if (b.size() < 34) return;
    width = static_cast<int32_t>(le32(b, 18)), height = static_cast<int32_t>(le32(b, 22));
    bits = le16(b, 28), compression = le32(b, 30);
  }
  height = std::llabs(height);  // negative: rows stored top-down
  if (width <= 0 || height == 0) return;
  check_pixel_budget(width, height, max_pixels, name);
  RT_CHECK(compression <= 3, name, ": BMP compression ", compression,
           " is not one Pillow reads (none, RLE8, RLE4, bitfields); not decoded");
  if (compression == 1 || compression == 2) return;  // run lengths: no size to check before decoding
  const int64_t stride = (width * bits + 31) / 32 * 4;
  const int64_t needed = offset + stride * height;
  RT_CHECK(needed <= static_cast<int64_t>(b.size()), name, ": BMP declares ", width, " x ", height, " pixels, ", needed,
           " bytes with its headers, and the file holds ", b.size(), " (truncated; Pillow: image file is truncated)");
}

void check_png(std::span<const uint8_t> b, const std::string& name, int64_t max_pixels) {
  size_t at = 8;
  bool image_data = false;
  while (at + 8 <= b.size()) {
    const uint32_t length = be32(b, at);
    const std::string type(reinterpret_cast<const char*>(b.data() + at + 4), 4);
    const size_t left = b.size() - at - 8;
    if (uint64_t{length} + 4 > left) {
      if (image_data && type != "IDAT") return;  // past the image: Pillow does not read so far
      throw Error(str_cat(name, ": PNG chunk ", type, " at byte ", at, " declares ", length, " bytes and the file has ",
                          left < 4 ? 0 : left - 4, " left (truncated; Pillow: image file is truncated)"));
    }
    if (type == "IHDR" && length >= 8) check_pixel_budget(be32(b, at + 8), be32(b, at + 12), max_pixels, name);
    if (type == "IDAT") image_data = true;
    if (!image_data) {
      const uLong crc = crc32(0, b.data() + at + 4, length + 4);
      RT_CHECK(crc == be32(b, at + 8 + length), name, ": PNG chunk ", type,
               "'s checksum is wrong (Pillow refuses the file: broken PNG file)");
    }
    if (type == "IEND") return;
    at += size_t{length} + 12;
  }
}

void check_gif(std::span<const uint8_t> b, const std::string& name, int64_t max_pixels) {
  if (b.size() >= 10) check_pixel_budget(le16(b, 6), le16(b, 8), max_pixels, name);
}

// TGA has no signature: stb_image takes for a TGA what no other reader claimed, so this judges a
// file whose header says it is an uncompressed one (types 1-3), or just its size for the others.
void check_tga(std::span<const uint8_t> b, const std::string& name, int64_t max_pixels) {
  if (b.size() < 18 || b[1] > 1) return;
  const int type = b[2];
  if (type != 1 && type != 2 && type != 3 && type != 9 && type != 10 && type != 11) return;
  const int64_t width = le16(b, 12), height = le16(b, 14), bytes_per_pixel = (b[16] + 7) / 8;
  check_pixel_budget(width, height, max_pixels, name);
  if (type > 3) return;  // run lengths: no size to check before decoding
  const int64_t palette = b[1] == 1 ? int64_t{le16(b, 5)} * ((b[7] + 7) / 8) : 0;
  const int64_t needed = 18 + b[0] + palette + width * height * bytes_per_pixel;
  RT_CHECK(needed <= static_cast<int64_t>(b.size()), name, ": TGA declares ", width, " x ", height, " pixels, ", needed,
           " bytes with its headers, and the file holds ", b.size(), " (truncated; Pillow: image file is truncated)");
}

}  // namespace

void check_image_header(std::span<const uint8_t> b, const std::string& name, int64_t max_pixels) {
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (b.size() >= 8 && std::memcmp(b.data(), kPng, 8) == 0) return check_png(b, name, max_pixels);
  if (b.size() >= 2 && b[0] == 'B' && b[1] == 'M') return check_bmp(b, name, max_pixels);
  if (b.size() >= 6 && std::memcmp(b.data(), "GIF8", 4) == 0) return check_gif(b, name, max_pixels);
  check_tga(b, name, max_pixels);
}

}  // namespace rt
