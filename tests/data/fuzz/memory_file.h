// The fuzz targets' inputs as files, for readers that take a path: an anonymous file in memory
// (memfd), named by /proc/self/fd.
#pragma once

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <string>

struct MemoryFile {
  MemoryFile(const uint8_t* data, size_t size) : fd(memfd_create("fuzz_input", 0)) {
    if (fd < 0) std::abort();
    for (size_t done = 0; done < size;) {
      const ssize_t n = write(fd, data + done, size - done);
      if (n <= 0) std::abort();
      done += static_cast<size_t>(n);
    }
  }
  ~MemoryFile() { close(fd); }
  std::string path() const { return "/proc/self/fd/" + std::to_string(fd); }
  int fd;
};
