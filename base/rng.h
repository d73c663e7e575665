// Counter-based random numbers: the value drawn depends only on (seed, stream, counter), never on
// thread count, platform or standard-library version, so shuffles, initial weights and dropout
// masks are reproducible everywhere and the generator state is two integers (easy to checkpoint).
#pragma once

#include <cstdint>

#include "base/host_device.h"

namespace rt {

// A strong 64-bit mix (splitmix64 finaliser) of the three coordinates.
RT_HD inline uint64_t hash3(uint64_t seed, uint64_t stream, uint64_t counter) {
  uint64_t z = seed * 0x9E3779B97F4A7C15ull ^ (stream + 0x632BE59BD9B4E019ull) * 0xBF58476D1CE4E5B9ull ^ counter;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  z += 0x9E3779B97F4A7C15ull;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, 1) with 24 bits, exactly representable as float.
RT_HD inline float to_unit_float(uint64_t bits) { return static_cast<float>(bits >> 40) * (1.0f / 16777216.0f); }

// Sequential view of one stream. State = (seed, stream, counter).
class Rng {
 public:
  Rng(uint64_t seed, uint64_t stream, uint64_t counter = 0) : seed_(seed), stream_(stream), counter_(counter) {}
  uint64_t next_u64() { return hash3(seed_, stream_, counter_++); }
  float uniform() { return to_unit_float(next_u64()); }
  // Uniform integer in [0, n), n > 0; rejection keeps it unbiased.
  uint64_t below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = next_u64();
    while (r >= limit);
    return r % n;
  }
  // Standard normal by Box-Muller (one value per two draws, no cached state).
  double normal();
  uint64_t counter() const { return counter_; }

 private:
  uint64_t seed_, stream_, counter_;
};

}  // namespace rt
