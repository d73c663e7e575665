// Parts of text joined with a separator: "a, b, c". Any range of things a string_view takes
// (std::string, std::string_view, const char*).
#pragma once

#include <string>
#include <string_view>

namespace rt {

template <typename Range>
std::string join(const Range& parts, std::string_view sep) {
  std::string out;
  bool first = true;
  for (const auto& part : parts) {
    if (!first) out += sep;
    out += std::string_view(part);
    first = false;
  }
  return out;
}

}  // namespace rt
