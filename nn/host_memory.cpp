#include "nn/host_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>

#include "base/check.h"

namespace rt {
namespace {

size_t round_up(size_t n, size_t to) { return (n + to - 1) / to * to; }

// A 2 MiB-aligned anonymous mapping of `bytes` (a multiple of 2 MiB), advised as huge pages
// (Note [Huge pages for large buffers]). mmap aligns to 4 KiB only, so one huge page more is
// mapped and the ends beyond the aligned span are unmapped again.
std::shared_ptr<void> map_huge(size_t bytes) {
  const size_t span = bytes + kHugePageBytes;
  void* raw = mmap(nullptr, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  RT_CHECK(raw != MAP_FAILED, "out of host memory mapping ", bytes, " bytes: ", std::strerror(errno));
  const auto start = reinterpret_cast<uintptr_t>(raw);
  const uintptr_t aligned = round_up(start, kHugePageBytes);
  if (aligned > start) munmap(raw, aligned - start);
  const uintptr_t tail = start + span - (aligned + bytes);
  if (tail > 0) munmap(reinterpret_cast<void*>(aligned + bytes), tail);
  void* p = reinterpret_cast<void*>(aligned);
  // Only advice: with THP off, or on a kernel without it, the pages stay small and all else holds.
  (void)madvise(p, bytes, MADV_HUGEPAGE);
  return std::shared_ptr<void>(p, [bytes](void* q) { munmap(q, bytes); });
}

}  // namespace

std::shared_ptr<void> allocate_host_zeroed(size_t bytes) {
  if (bytes >= kHugePageBytes) return map_huge(round_up(bytes, kHugePageBytes));
  const size_t rounded = std::max<size_t>(round_up(bytes, 64), 64);
  void* p = std::aligned_alloc(64, rounded);
  RT_CHECK(p != nullptr, "out of host memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded);
  return std::shared_ptr<void>(p, [](void* q) { std::free(q); });
}

}  // namespace rt
