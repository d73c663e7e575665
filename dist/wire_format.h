// Gradients on the wire in a narrower type (dist.wire = "fp32" | "fp16" | "bf16"): the ring sends
// 16-bit values and adds what it receives into float32, so half the bytes cross each link while
// every sum is still formed in float32. The conversions (base/half_float.h) are RT_HD so that the
// CPU ring and the CUDA ring round identically.
//
// Note [Wire scaling]: with a 16-bit wire each rank divides its gradients by the world size before
// the first send, rather than the sum after the last step. fp16 tops out at 65504, and a sum of
// many ranks' large gradients overflows where their average would not (Horovod users met this
// as inf losses with fp16 compression at scale).
#pragma once

#include <cstddef>
#include <cstdint>

#include "base/half_float.h"
#include "base/run_settings.h"  // Wire

namespace rt {

inline size_t wire_bytes(Wire wire) { return wire == Wire::kFp32 ? 4 : 2; }

RT_HD inline uint16_t to_wire(float f, Wire wire) { return wire == Wire::kBf16 ? float_to_bf16(f) : float_to_fp16(f); }
RT_HD inline float from_wire(uint16_t h, Wire wire) {
  return wire == Wire::kBf16 ? bf16_to_float(h) : fp16_to_float(h);
}

}  // namespace rt
