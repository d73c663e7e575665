// Our own conversions between plain float32 1x1 convolution weights (K, C, 1, 1) and the AVX-512
// blocked layouts oneDNN 2.6's convolutions choose for them, used by Staging in place of oneDNN's
// reorder.
//
// Note [1x1 weight reorders]: each step reorders every convolution's float32 weights into the
// layouts its forward and backward-data kernels read (bf16 ABcd8b16a2b, ABcd8a16b2a or
// BAcd8a16b2a under bf16), and its weight gradient out of the layout the backward-weights kernel
// writes (float32 ABcd16b16a) into the plain gradient arena. For 1x1 filters oneDNN's reorders run
// these far below the memory's speed: a plain row of C floats is C * 4 bytes long, so with C a
// power of two the 16 rows of a block share cache sets, and the gradient's reorder of a 2048 x 1024
// filter took 2.5 ms against 0.4 ms for a 16 x 16 transpose in registers. Ours walk 16 x 16 tiles
// of (K, C) in AVX-512 and give the same bits: the gradient's is a copy, and the bf16 ones round
// with the instruction oneDNN's reorder uses (VCVTNE2PS2BF16), so only CPUs with AVX512_BF16 take
// them.
#pragma once

#include <oneapi/dnnl/dnnl.hpp>

#include <cstdint>

namespace rt::cpu {

class WeightReorder {
 public:
  // Ours from `from` to `to` where we have one for the pair and this CPU runs it; else empty.
  static WeightReorder between(const dnnl::memory::desc& from, const dnnl::memory::desc& to);

  explicit operator bool() const { return run_ != nullptr; }
  void operator()(const void* src, void* dst) const { run_(src, dst, k_, c_); }

 private:
  using Run = void (*)(const void* src, void* dst, int64_t k, int64_t c);
  Run run_ = nullptr;
  int64_t k_ = 0, c_ = 0;
};

}  // namespace rt::cpu
