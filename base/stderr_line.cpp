#include "base/stderr_line.h"

#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <thread>

namespace rt {

void write_fully(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    data += n;
    size -= static_cast<size_t>(n);
  }
}

void stderr_line(const std::string& text) {
  const std::string line = text + "\n";
  write_fully(STDERR_FILENO, line.data(), line.size());
}

void wait_until_stderr_is_read(double timeout_s) {
  struct stat st {};
  if (fstat(STDERR_FILENO, &st) != 0 || !S_ISFIFO(st.st_mode)) return;
  const auto end = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  int unread = 0;  // FIONREAD on either end of a pipe: the bytes not yet read
  while (ioctl(STDERR_FILENO, FIONREAD, &unread) == 0 && unread > 0 && std::chrono::steady_clock::now() < end)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

}  // namespace rt
