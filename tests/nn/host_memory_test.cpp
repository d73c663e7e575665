// Host allocations (Note [Huge pages for large buffers] in nn/host_memory.h): zero-filled, aligned,
// every byte writable, large ones advised as huge pages as the kernel itself reports it
// (/proc/self/smaps), and unmapped again when the last owner goes.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

#include "nn/host_memory.h"

namespace rt::testing {
namespace {

struct Mapping {
  bool found = false;
  std::string vm_flags;  // smaps' VmFlags line of the mapping holding the address
};

// The kernel's view of the mapping that holds `p`, from /proc/self/smaps.
Mapping mapping_of(const void* p) {
  const auto a = reinterpret_cast<uintptr_t>(p);
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  Mapping m;
  while (std::getline(smaps, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= a && a < hi;
      if (inside) m.found = true;
      continue;
    }
    if (inside && line.rfind("VmFlags:", 0) == 0) m.vm_flags = line;
  }
  return m;
}

bool thp_configured() { return std::ifstream("/sys/kernel/mm/transparent_hugepage/enabled").good(); }

TEST(HostMemory, IsZeroAlignedAndWritableAtEverySize) {
  for (size_t bytes :
       {size_t{1}, size_t{63}, size_t{4096}, kHugePageBytes - 1, kHugePageBytes, 5 * kHugePageBytes / 2 + 3}) {
    std::shared_ptr<void> owner = allocate_host_zeroed(bytes);
    auto* b = static_cast<unsigned char*>(owner.get());
    const auto address = reinterpret_cast<uintptr_t>(b);
    EXPECT_EQ(address % 64, 0u) << bytes << " bytes";
    if (bytes >= kHugePageBytes) {
      EXPECT_EQ(address % kHugePageBytes, 0u) << bytes << " bytes";
    }
    size_t nonzero = 0;
    for (size_t i = 0; i < bytes; ++i) nonzero += b[i] != 0;
    EXPECT_EQ(nonzero, 0u) << bytes << " bytes";
    for (size_t i = 0; i < bytes; ++i) b[i] = static_cast<unsigned char>(i * 7 + 1);
    size_t wrong = 0;
    for (size_t i = 0; i < bytes; ++i) wrong += b[i] != static_cast<unsigned char>(i * 7 + 1);
    EXPECT_EQ(wrong, 0u) << bytes << " bytes";
  }
}

TEST(HostMemory, LargeBuffersAreAdvisedAsHugePagesAndUnmappedWhenReleased) {
  std::shared_ptr<void> large = allocate_host_zeroed(3 * kHugePageBytes);
  const void* p = large.get();
  const Mapping m = mapping_of(p);
  ASSERT_TRUE(m.found) << "no mapping in /proc/self/smaps holds " << p;
  if (thp_configured()) {
    // "hg": the kernel recorded MADV_HUGEPAGE for this mapping, whether or not huge pages were free.
    EXPECT_NE((m.vm_flags + " ").find(" hg "), std::string::npos) << m.vm_flags;
  }
  large.reset();
  EXPECT_FALSE(mapping_of(p).found) << "the mapping at " << p << " outlived its last owner";
}

}  // namespace
}  // namespace rt::testing
