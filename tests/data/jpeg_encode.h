// JPEG files written here with libjpeg-turbo's encoder, for the decoding tests: a pattern of smooth
// ramps, edges and noise (JPEG's hard cases) in any subsampling, grayscale or CMYK, baseline or
// progressive (with a scan script of one's own), with or without restart markers.
#pragma once

#include <jpeglib.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace rt {

struct Variant {
  const char* name;
  int width, height;
  J_COLOR_SPACE space;  // of the input: JCS_RGB, JCS_GRAYSCALE or JCS_CMYK
  int h_samp, v_samp;   // the first component's sampling factors (the others 1)
  bool progressive;
  int restart_rows;
  // A scan script of one's own (progressive files only; nullptr: libjpeg's simple progression).
  const jpeg_scan_info* scans = nullptr;
  int num_scans = 0;
};

inline std::vector<uint8_t> encode(const Variant& v) {
  jpeg_compress_struct c;
  jpeg_error_mgr err;
  c.err = jpeg_std_error(&err);
  jpeg_create_compress(&c);
  unsigned char* out = nullptr;
  unsigned long size = 0;
  jpeg_mem_dest(&c, &out, &size);
  c.image_width = static_cast<JDIMENSION>(v.width);
  c.image_height = static_cast<JDIMENSION>(v.height);
  c.input_components = v.space == JCS_GRAYSCALE ? 1 : v.space == JCS_CMYK ? 4 : 3;
  c.in_color_space = v.space;
  jpeg_set_defaults(&c);
  jpeg_set_quality(&c, 85, TRUE);
  c.comp_info[0].h_samp_factor = v.h_samp;
  c.comp_info[0].v_samp_factor = v.v_samp;
  for (int k = 1; k < c.num_components; ++k) c.comp_info[k].h_samp_factor = c.comp_info[k].v_samp_factor = 1;
  if (v.progressive) jpeg_simple_progression(&c);
  if (v.scans != nullptr) {
    c.scan_info = v.scans;
    c.num_scans = v.num_scans;
  }
  c.restart_in_rows = v.restart_rows;
  jpeg_start_compress(&c, TRUE);
  std::vector<uint8_t> row(static_cast<size_t>(v.width * c.input_components));
  while (c.next_scanline < c.image_height) {
    const int y = static_cast<int>(c.next_scanline);
    for (int x = 0; x < v.width; ++x)
      for (int k = 0; k < c.input_components; ++k)  // smooth ramps, edges and noise: JPEG's hard cases
        row[static_cast<size_t>(x * c.input_components + k)] = static_cast<uint8_t>(
            (x * (3 + k) + y * (5 - k) + ((x / 17 + y / 11) % 2) * 90 + (x * 7919 + y * 104729 + k * 31) % 23) % 256);
    JSAMPROW r = row.data();
    jpeg_write_scanlines(&c, &r, 1);
  }
  jpeg_finish_compress(&c);
  jpeg_destroy_compress(&c);
  std::vector<uint8_t> bytes(out, out + size);
  std::free(out);
  return bytes;
}

}  // namespace rt
