#include "data/jpeg_decode.h"

#include <csetjmp>
#include <cstdio>

#include <jpeglib.h>

#include "base/check.h"

namespace rt {
namespace {

// libjpeg reports errors through a callback that must not return: it longjmps back to
// decode_jpeg, which turns the message into an rt::Error. Warnings (libjpeg's name for damaged
// data it decodes around, a truncated file among them) are counted and refused the same way.
struct ErrorManager {
  jpeg_error_mgr pub;
  std::jmp_buf back;
  char message[JMSG_LENGTH_MAX];
};

void on_error(j_common_ptr info) {
  auto* e = reinterpret_cast<ErrorManager*>(info->err);
  (*info->err->format_message)(info, e->message);
  std::longjmp(e->back, 1);
}

void on_message(j_common_ptr info, int level) {
  auto* e = reinterpret_cast<ErrorManager*>(info->err);
  if (level < 0 && e->pub.num_warnings++ == 0) (*info->err->format_message)(info, e->message);
}

}  // namespace

std::optional<RgbImage> decode_jpeg(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels) {
  jpeg_decompress_struct info;
  ErrorManager err;
  info.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  err.message[0] = '\0';
  RgbImage image;  // before setjmp: nothing the jump skips needs destroying
  if (setjmp(err.back)) {
    jpeg_destroy_decompress(&info);
    throw Error(str_cat(name, ": cannot decode as a JPEG (", err.message, ")"));
  }
  jpeg_create_decompress(&info);
  jpeg_mem_src(&info, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&info, TRUE);
  if (int64_t{info.image_width} * info.image_height > max_pixels) {
    jpeg_destroy_decompress(&info);
    check_pixel_budget(info.image_width, info.image_height, max_pixels, name);
  }
  if (info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK) {
    jpeg_destroy_decompress(&info);
    return std::nullopt;
  }
  info.out_color_space = JCS_RGB;  // grayscale repeated into three channels, as convert("RGB")
  info.dct_method = JDCT_ISLOW;
  info.do_fancy_upsampling = TRUE;
  jpeg_start_decompress(&info);
  image.width = static_cast<int>(info.output_width);
  image.height = static_cast<int>(info.output_height);
  image.pixels.resize(static_cast<size_t>(image.width) * static_cast<size_t>(image.height) * 3);
  while (info.output_scanline < info.output_height) {
    JSAMPROW row =
        image.pixels.data() + static_cast<size_t>(info.output_scanline) * static_cast<size_t>(image.width) * 3;
    jpeg_read_scanlines(&info, &row, 1);
  }
  jpeg_finish_decompress(&info);
  const bool damaged = err.pub.num_warnings > 0;
  jpeg_destroy_decompress(&info);
  RT_CHECK(!damaged, name, ": corrupt or truncated JPEG (", err.message, ")");
  return image;
}

}  // namespace rt
