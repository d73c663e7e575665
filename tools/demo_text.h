// How the demos (ring_demo.h, ring_demo_hosts.h) write small numbers: integers without a decimal
// point, the rest as the stream writes them, a range of a buffer separated by spaces.
#pragma once

#include <cmath>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

namespace rt {

inline std::string demo_number(double v) {
  std::ostringstream os;
  if (v == std::floor(v))
    os << static_cast<int64_t>(v);
  else
    os << v;
  return os.str();
}

// b[begin, begin + count), or "(empty)".
inline std::string demo_values(const std::vector<double>& b, int64_t begin, int64_t count) {
  if (count == 0) return "(empty)";
  std::ostringstream os;
  for (int64_t i = begin; i < begin + count; ++i) os << (i > begin ? " " : "") << demo_number(b[i]);
  return os.str();
}

}  // namespace rt
