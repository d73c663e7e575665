#include "base/stderr_line.h"

#include <unistd.h>

#include <cerrno>

namespace rt {

void stderr_line(const std::string& text) {
  const std::string line = text + "\n";
  const char* p = line.data();
  size_t left = line.size();
  while (left > 0) {
    const ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace rt
