#include "base/rng.h"

#include <cmath>

namespace rt {

double Rng::normal() {
  // 53-bit uniforms; u1 in (0, 1] so log is finite.
  const double u1 = (static_cast<double>(next_u64() >> 11) + 1.0) * 0x1.0p-53;
  const double u2 = static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace rt
