#include "data/read_only_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/check.h"

namespace rt {

ReadOnlyFile::ReadOnlyFile(const std::string& path, const char* kind)
    : path_(path), kind_(kind), fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
  RT_CHECK(fd_ >= 0, "cannot open ", kind, " '", path, "': ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    const int error = errno;
    ::close(fd_);
    RT_CHECK(false, "cannot stat ", kind, " '", path, "': ", std::strerror(error));
  }
  size_ = static_cast<uint64_t>(st.st_size);
}

ReadOnlyFile::~ReadOnlyFile() { ::close(fd_); }

void ReadOnlyFile::read(uint64_t offset, void* out, size_t n) const {
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::pread(fd_, static_cast<char*>(out) + done, n - done, static_cast<off_t>(offset + done));
    if (got < 0 && errno == EINTR) continue;
    RT_CHECK(got > 0, "cannot read ", kind_, " '", path_, "' at offset ", offset + done, ": ",
             got < 0 ? std::strerror(errno) : "unexpected end of file");
    done += static_cast<size_t>(got);
  }
}

}  // namespace rt
