// A differential libFuzzer target (tests/data/fuzz/fuzz_test.sh builds it): a JPEG decoded whole
// at a scale, and two boxes of it decoded alone at that scale (the top rows, where a truncated
// file's damage is out of the crop's sight, and a box drawn from a hash of the input), must all
// decode or all be refused (Note [Pillow's verdict]) and, decoded, give the same pixels (Note
// [Crop-region decoding]). A difference aborts, which libFuzzer reports.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>

#include "base/check.h"
#include "data/image_transforms.h"
#include "data/jpeg_decode.h"

namespace {

uint64_t fnv1a(const uint8_t* data, size_t size) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 1099511628211ull;
  return h;
}

int scaled(int side, int scale) { return (side + scale - 1) / scale; }

constexpr int64_t kBudget = int64_t{1} << 22;  // a small pixel budget: the fuzzer's memory limit is not the point

// The box that `choose` picks (from the scaled width and height) decoded alone, or false.
template <typename Choose>
bool decode_box(std::span<const uint8_t> bytes, int scale, Choose choose, rt::CropBox* box, rt::RgbImage* out) {
  try {
    *out = rt::decode_jpeg(bytes, "box", kBudget, [&](int w, int h) {
      *box = choose(scaled(w, scale), scaled(h, scale));
      return rt::JpegRegion{*box, scale};
    });
    return true;
  } catch (const rt::Error&) {
    return false;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  if (!rt::looks_like_jpeg(bytes)) return 0;
  const uint64_t h = fnv1a(data, size);
  const int scale = 1 << (h % 4);
  rt::RgbImage whole;
  rt::CropBox box;
  const bool whole_ok = decode_box(
      bytes, scale,
      [](int W, int H) {
        return rt::CropBox{0, 0, W, H};
      },
      &box, &whole);
  const auto top = [](int W, int H) { return rt::CropBox{0, 0, W, H < 8 ? 1 : H / 8}; };
  const auto drawn = [h](int W, int H) {
    rt::CropBox b;
    b.x = static_cast<int>(h / 4 % static_cast<uint64_t>(W));
    b.y = static_cast<int>(h / 65536 % static_cast<uint64_t>(H));
    b.width = 1 + static_cast<int>(h / 4096 % static_cast<uint64_t>(W - b.x));
    b.height = 1 + static_cast<int>(h / 256 % static_cast<uint64_t>(H - b.y));
    return b;
  };
  for (int which = 0; which < 2; ++which) {
    rt::RgbImage part;
    const bool ok =
        which == 0 ? decode_box(bytes, scale, top, &box, &part) : decode_box(bytes, scale, drawn, &box, &part);
    if (ok != whole_ok) {
      std::fprintf(stderr, "region_fuzz: the whole decode at 1/%d %s, the box %d,%d %dx%d %s\n", scale,
                   whole_ok ? "decodes" : "is refused", box.x, box.y, box.width, box.height,
                   ok ? "decodes" : "is refused");
      std::abort();
    }
    if (ok && rt::crop(whole, box).pixels != part.pixels) {
      std::fprintf(stderr, "region_fuzz: the box %d,%d %dx%d at 1/%d differs from the whole decode's\n", box.x, box.y,
                   box.width, box.height, scale);
      std::abort();
    }
  }
  return 0;
}
