// Zero-filled host memory for tensors and arenas.
//
// Note [Huge pages for large buffers]: every 4 KiB page a process touches for the first time costs
// a page fault, and on some virtual machines a fault costs 10 us and more (3 to 3.6 s a GiB on a
// development VM of this project, against about 0.25 s on bare metal). A model's arenas run to
// gigabytes, so a fresh process spent seconds in faults before its first step. Buffers of 2 MiB
// and more are therefore mapped on their own, 2 MiB-aligned, and advised as transparent huge pages
// (MADV_HUGEPAGE), which the kernel honours where THP is "always" or "madvise" (the usual default):
// one fault per 2 MiB. Where THP is off the advice is ignored and nothing else changes. Smaller
// buffers come from malloc. The memory is zero either way: an anonymous mapping is zero-filled by
// the kernel at first touch, so large buffers are not written here.
#pragma once

#include <cstddef>
#include <memory>

namespace rt {

// At least `bytes` of zeroed host memory, 64-byte aligned (2 MiB-aligned from kHugePageBytes on);
// released when the last owner goes. rt::Error when the system has no memory to give.
std::shared_ptr<void> allocate_host_zeroed(size_t bytes);

inline constexpr size_t kHugePageBytes = size_t{2} << 20;

}  // namespace rt
