#include "data/jpeg_decode.h"

#include <algorithm>
#include <csetjmp>
#include <cstdio>
#include <vector>

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

// Pillow's CMYK to RGB: Pillow reads a 4-channel JPEG as inverted CMYK ("CMYK;I", Adobe's
// convention, which its JpegImagePlugin assumes for every such file), and convert("RGB") takes
// each channel to nk - c nk / 255 with nk = 255 - k, rounding as its MULDIV255. With Adobe's
// stored values s (c = 255 - s_c, nk = s_k) that is s_k - (255 - s_c) s_k / 255.
uint8_t from_stored_cmyk(int stored_channel, int stored_k) {
  const int t = (255 - stored_channel) * stored_k + 128;
  return static_cast<uint8_t>(stored_k - (((t >> 8) + t) >> 8));
}

}  // namespace

RgbImage decode_jpeg(std::span<const uint8_t> bytes, const std::string& name, int64_t max_pixels,
                     const RegionChooser& region) {
  jpeg_decompress_struct info;
  ErrorManager err;
  info.err = jpeg_std_error(&err.pub);
  err.pub.error_exit = on_error;
  err.pub.emit_message = on_message;
  err.message[0] = '\0';
  RgbImage image;            // before setjmp: nothing the jump skips needs destroying
  std::vector<uint8_t> row;  // one decoded row of the columns being decoded
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
  // CMYK and YCCK (libjpeg turns YCCK into CMYK) as CMYK, then RGB as Pillow makes it; anything
  // else as RGB, grayscale repeated into three channels, as convert("RGB").
  const bool cmyk = info.jpeg_color_space == JCS_CMYK || info.jpeg_color_space == JCS_YCCK;
  const size_t in_channels = cmyk ? 4 : 3;
  info.out_color_space = cmyk ? JCS_CMYK : JCS_RGB;
  info.dct_method = JDCT_ISLOW;
  info.do_fancy_upsampling = TRUE;
  const JpegRegion chosen =
      region ? region(static_cast<int>(info.image_width), static_cast<int>(info.image_height))
             : JpegRegion{{0, 0, static_cast<int>(info.image_width), static_cast<int>(info.image_height)}, 1};
  RT_ASSERT(chosen.scale == 1 || chosen.scale == 2 || chosen.scale == 4 || chosen.scale == 8);
  info.scale_num = 1;
  info.scale_denom = static_cast<unsigned>(chosen.scale);
  jpeg_start_decompress(&info);
  const int W = static_cast<int>(info.output_width), H = static_cast<int>(info.output_height);
  const CropBox box = chosen.box;
  RT_ASSERT(box.x >= 0 && box.y >= 0 && box.width >= 1 && box.height >= 1 && box.x + box.width <= W &&
            box.y + box.height <= H);
  // Note [Crop-region decoding]: the box widened by a pixel on each side (the smooth chroma
  // upsampling reads a neighbour), its columns rounded out to whole iMCUs by jpeg_crop_scanline,
  // the rows above skipped, the rows below skipped too (still entropy-decoded, so damage anywhere
  // in the file is found as a whole decode finds it).
  const int y0 = std::max(0, box.y - 1), y1 = std::min(H, box.y + box.height + 1);
  JDIMENSION x0 = static_cast<JDIMENSION>(std::max(0, box.x - 1));
  JDIMENSION columns = static_cast<JDIMENSION>(std::min(W, box.x + box.width + 1)) - x0;
  if (columns < static_cast<JDIMENSION>(W)) jpeg_crop_scanline(&info, &x0, &columns);
  if (y0 > 0) jpeg_skip_scanlines(&info, static_cast<JDIMENSION>(y0));
  image.width = box.width;
  image.height = box.height;
  const size_t out_width = static_cast<size_t>(box.width), skip = static_cast<size_t>(box.x) - x0;
  image.pixels.resize(out_width * static_cast<size_t>(box.height) * 3);
  row.resize(static_cast<size_t>(columns) * in_channels);
  while (static_cast<int>(info.output_scanline) < y1) {
    const int y = static_cast<int>(info.output_scanline);
    JSAMPROW rows = row.data();
    jpeg_read_scanlines(&info, &rows, 1);
    if (y < box.y || y >= box.y + box.height) continue;
    const uint8_t* in = row.data() + skip * in_channels;
    uint8_t* out = image.pixels.data() + static_cast<size_t>(y - box.y) * out_width * 3;
    if (!cmyk) {
      std::copy(in, in + out_width * 3, out);
      continue;
    }
    for (size_t x = 0; x < out_width; ++x)
      for (size_t c = 0; c < 3; ++c) out[3 * x + c] = from_stored_cmyk(in[4 * x + c], in[4 * x + 3]);
  }
  if (y1 < H) jpeg_skip_scanlines(&info, static_cast<JDIMENSION>(H - y1));
  jpeg_finish_decompress(&info);
  const bool damaged = err.pub.num_warnings > 0;
  jpeg_destroy_decompress(&info);
  RT_CHECK(!damaged, name, ": corrupt or truncated JPEG (", err.message, ")");
  return image;
}

}  // namespace rt
