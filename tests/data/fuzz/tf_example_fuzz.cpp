// A libFuzzer target over the tf.Example reader (tests/data/fuzz/fuzz_test.sh builds it): any bytes
// parse or are refused with rt::Error, and a parsed image lies inside them.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "base/check.h"
#include "data/tf_example.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const rt::ImageExample e = rt::parse_image_example(std::span<const uint8_t>(data, size), "fuzz input");
    if (e.image.data() < data || e.image.data() + e.image.size() > data + size) std::abort();
  } catch (const rt::Error&) {
  }
  return 0;
}
