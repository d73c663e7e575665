// Note [Agreed reductions]: reductions whose result every rank must hold bit for bit, because
// every rank acts on it alike: the clipping norm (its factor scales every rank's update) and the
// replica fingerprint (ranks compare it). The data is cut into fixed chunks of kAgreedChunk
// elements; each chunk is reduced in one fixed order and the chunks' results are combined in
// chunk order. The result then depends on the data alone, never on the thread count (which
// train.threads lets differ between ranks) or on how the chunks are scheduled. An OpenMP
// reduction over threads would not be: its partial sums, and so its last bits, follow the
// number of threads.
#pragma once

#include <cstdint>

#include "nn/device.h"

namespace rt {

inline constexpr int64_t kAgreedChunk = 1 << 16;

// The sum of x[i]^2 over [0, n), in double. The GPU sums on the device (not the same bits as the
// CPU's: ranks agree as they all train on one kind of device).
double sum_of_squares(Device device, const float* x, int64_t n);
// A 64-bit hash of the bits of x[0, n): any one flipped bit changes it. The CPU uses xxHash's
// XXH3; the GPU a hash of its own, on the device.
uint64_t fingerprint(Device device, const float* x, int64_t n);

}  // namespace rt
