// The median of a list of figures (step times, a rank's compute): the middle value, or the mean of
// the two middle ones; 0 for an empty list (a lone rank has no others to compare with).
#pragma once

#include <algorithm>
#include <vector>

namespace rt {

inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace rt
