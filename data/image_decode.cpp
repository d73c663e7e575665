#include "data/image_decode.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <limits>
#include <memory>

#include "base/check.h"
#include "data/image_headers.h"
#include "data/jpeg_decode.h"

// stb_image compiled here only, with the formats the image pipeline promises and nothing else:
// no PSD, HDR, PIC or PNM, and no JPEG, which is libjpeg-turbo's alone (Note [JPEG decoder]).
// (Its JPEG decoder took a file with fill bytes before the JPEG marker, which ours does not call
// a JPEG, and wrote past a Huffman table: tests/data/fuzz/regressions/decode keeps such a file.)
#define STB_IMAGE_IMPLEMENTATION
#define STBI_ONLY_PNG
#define STBI_ONLY_BMP
#define STBI_ONLY_TGA
#define STBI_ONLY_GIF
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#include <stb/stb_image.h>  // a system header: its own warnings stay quiet

namespace rt {

// Note [JPEG decoder]
// JPEGs, most of any photo collection, go to libjpeg-turbo (jpeg_decode.h): it is the decoder
// Pillow uses, so torchvision's recipes see the same pixels (stb_image's own IDCT and upsampling
// differ by a few levels), and its SIMD code decodes a 500x375 photo in about half stb_image's
// time, which is most of the image pipeline's cost. stb_image reads everything else.
void check_pixel_budget(int64_t width, int64_t height, int64_t max_pixels, const std::string& name) {
  // The height against the budget's share of the width, never their product first: a header may
  // declare 2^32 - 1 a side, and that product overflows 64 bits.
  if (width <= 0 || height <= max_pixels / width) return;
  const std::string pixels =
      height <= std::numeric_limits<int64_t>::max() / width ? std::to_string(width * height) : "over 2^63";
  throw Error(str_cat(name, ": declares ", width, " x ", height, " = ", pixels,
                      " pixels, more than data.max_image_pixels = ", max_pixels,
                      " (Pillow refuses such files as decompression bombs); not decoded"));
}

RgbImage decode_image(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels) {
  RT_CHECK(!bytes.empty(), name, ": empty file, not an image");
  if (looks_like_jpeg(bytes)) return decode_jpeg(bytes, name, max_pixels);
  RT_CHECK(bytes.size() <= static_cast<size_t>(INT32_MAX), name, ": file too large to decode (", bytes.size(),
           " bytes)");
  // The header alone (Note [Pixel budget], Note [Declared sizes]); where it cannot be read, the
  // decoder says why below.
  check_image_header(bytes, name, max_pixels);
  int w = 0, h = 0, channels = 0;
  if (stbi_info_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &channels))
    check_pixel_budget(std::abs(int64_t{w}), std::abs(int64_t{h}), max_pixels, name);
  std::unique_ptr<stbi_uc, void (*)(void*)> data(
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &channels, 3), stbi_image_free);
  RT_CHECK(data != nullptr, name, ": cannot decode as an image (", stbi_failure_reason(),
           "); JPEG, PNG, BMP, TGA and GIF are read");
  RgbImage image;
  image.width = w;
  image.height = h;
  image.pixels.assign(data.get(), data.get() + static_cast<size_t>(w) * static_cast<size_t>(h) * 3);
  return image;
}

// One read of the size fstat gives (then on to the end, for a file that grew), not a stream's
// byte at a time.
std::vector<uint8_t> read_file_bytes(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  RT_CHECK(fd >= 0, path, ": cannot open (", std::strerror(errno), ")");
  struct stat st {};
  std::vector<uint8_t> bytes(::fstat(fd, &st) == 0 && st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : 4096);
  size_t done = 0;
  for (;;) {
    if (done == bytes.size()) bytes.resize(bytes.size() * 2);
    const ssize_t got = ::read(fd, bytes.data() + done, bytes.size() - done);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {
      const int error = got < 0 ? errno : 0;
      ::close(fd);
      RT_CHECK(got == 0, path, ": read error (", std::strerror(error), ")");
      break;
    }
    done += static_cast<size_t>(got);
  }
  bytes.resize(done);
  return bytes;
}

RgbImage read_image(const std::string& path, int64_t max_pixels) {
  return decode_image(read_file_bytes(path), path, max_pixels);
}

}  // namespace rt
