// A libFuzzer target over TFRecord framing (tests/data/fuzz/fuzz_test.sh builds it): the records a
// file lists lie inside it, and each one's data (both CRCs checked) parses as a tf.Example or is
// refused with rt::Error.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "base/check.h"
#include "data/tf_example.h"
#include "tests/data/fuzz/memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const MemoryFile file(data, size);
  try {
    const rt::TfRecordListing listing = rt::list_tfrecords(file.path());
    for (size_t i = 0; i < listing.offsets.size(); ++i) {
      const uint64_t at = listing.offsets[i], n = listing.sizes[i];
      if (at > size || n > size - at) std::abort();  // a record past the end
      try {
        const std::span<const uint8_t> record(data + at, n);
        rt::parse_image_example(rt::tfrecord_data(record, "fuzz record"), "fuzz record");
      } catch (const rt::Error&) {
      }
    }
  } catch (const rt::Error&) {
  }
  return 0;
}
