// A libFuzzer target over the tar member lister (tests/data/fuzz/fuzz_test.sh builds it): any input
// is listed or refused with rt::Error, and every member it lists lies inside the file.
#include <cstddef>
#include <cstdint>
#include <cstdlib>

#include "base/check.h"
#include "data/tar_members.h"
#include "tests/data/fuzz/memory_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const MemoryFile file(data, size);
  try {
    for (const rt::TarMember& m : rt::list_tar_members(file.path()).members)
      if (m.offset > size || m.size > size - m.offset) std::abort();  // a member past the end
  } catch (const rt::Error&) {
  }
  return 0;
}
