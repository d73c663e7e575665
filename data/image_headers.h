// What a PNG, BMP, TGA or GIF file declares, checked against the file itself and against Pillow's
// rules before stb_image decodes it (Note [Declared sizes] in image_headers.cpp).
#pragma once

#include <cstdint>
#include <span>
#include <string>

namespace rt {

// rt::Error naming `name` where the file's header declares more pixels than `max_pixels` (with
// the dimensions the decoder will use: a top-down BMP's negative height counts as its size), more
// data than the file holds (a PNG chunk, an uncompressed BMP's or TGA's pixels), or something
// Pillow refuses and stb_image would decode (a BMP compression Pillow does not know, a PNG chunk
// before the image data whose checksum is wrong). Returns quietly for a file it cannot place,
// which the decoder then judges.
void check_image_header(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels);

}  // namespace rt
