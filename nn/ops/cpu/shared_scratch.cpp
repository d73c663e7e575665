// Note [Shared scratch] in shared_scratch.h.
#include "nn/ops/cpu/shared_scratch.h"

#include <memory>

#include "base/check.h"
#include "nn/host_memory.h"

namespace rt::cpu {
namespace {

struct Buffer {
  std::shared_ptr<void> data;
  size_t bytes = 0;
};

Buffer& buffer(ScratchUse use) {
  static Buffer buffers[static_cast<int>(ScratchUse::kCount)];
  const int i = static_cast<int>(use);
  RT_ASSERT(i >= 0 && i < static_cast<int>(ScratchUse::kCount));
  return buffers[i];
}

}  // namespace

void reserve_scratch(ScratchUse use, size_t bytes) {
  Buffer& b = buffer(use);
  if (bytes <= b.bytes) return;
  b.data.reset();  // the old one goes first: both need not fit at once
  b.data = allocate_host_zeroed(bytes);
  b.bytes = bytes;
}

void* scratch(ScratchUse use) { return buffer(use).data.get(); }

}  // namespace rt::cpu
