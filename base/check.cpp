#include "base/check.h"

#include <cstring>

namespace rt {

void throw_check_failure(const char* file, int line, const std::string& message) {
  const char* base = std::strrchr(file, '/');
  throw Error(str_cat(message, " [", base ? base + 1 : file, ":", line, "]"));
}

}  // namespace rt
