// A libFuzzer target over ringtrain's image decoding (decode_image: libjpeg-turbo for JPEGs,
// stb_image for PNG, BMP, TGA and GIF), built with AddressSanitizer and UBSan's bounds check by
// tests/data/fuzz/fuzz_test.sh. Any input must decode or be refused with rt::Error; anything
// else (a crash, a sanitizer report, another exception) is a finding. It found stb_image's JPEG
// decoder writing past a Huffman table on a file with fill bytes before its JPEG marker, which
// is why stb_image is built without its JPEG decoder (data/image_decode.cpp).
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/check.h"
#include "data/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    // A small pixel budget: the fuzzer's memory limit is not the point.
    rt::decode_image(std::span<const uint8_t>(data, size), "fuzz input", int64_t{1} << 22);
  } catch (const rt::Error&) {
  }
  return 0;
}
