// write-temp / fsync / rename / fsync-folder, O_APPEND records and whole-file reads (formats/atomic_file.h).
#include "formats/atomic_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "base/check.h"

namespace rt {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

// Closes on scope exit unless released; close errors are reported by the callers that care.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() { return std::exchange(fd_, -1); }

 private:
  int fd_;
};

// Writes all of `bytes`, retrying short writes and EINTR; returns 0 or the errno of the failure.
int write_all(int fd, std::string_view bytes) {
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // no progress: treat as a failed write rather than spin
    done += static_cast<size_t>(n);
  }
  return 0;
}

std::string parent_dir(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

void write_file_atomically(const std::string& path, std::string_view bytes) {
  const std::string tmp = path + ".tmp";
  // O_TRUNC: a temp file left by an earlier crash is overwritten, never appended to.
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644));
  RT_CHECK(fd.get() >= 0, "cannot write ", path, ": creating temp file ", tmp, " failed: ", errno_text(errno));

  auto fail = [&](const char* step, int err) {
    ::close(fd.release());
    ::unlink(tmp.c_str());
    RT_CHECK(false, "cannot write ", path, ": ", step, " ", tmp, " failed: ", errno_text(err));
  };
  if (const int err = write_all(fd.get(), bytes); err != 0) fail("writing", err);
  // Without this fsync the rename could reach the disk before the data, leaving an empty file.
  if (::fsync(fd.get()) != 0) fail("fsync of", errno);
  if (::close(fd.release()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    RT_CHECK(false, "cannot write ", path, ": closing ", tmp, " failed: ", errno_text(err));
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    RT_CHECK(false, "cannot write ", path, ": renaming ", tmp, " over it failed: ", errno_text(err));
  }
  // The rename itself is only durable once the folder entry is on disk.
  const std::string dir = parent_dir(path);
  Fd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  RT_CHECK(dir_fd.get() >= 0, "wrote ", path, " but cannot open its folder ", dir, " to fsync it: ", errno_text(errno));
  // EINVAL: the file system does not support syncing folders; nothing more can be done there.
  if (::fsync(dir_fd.get()) != 0 && errno != EINVAL) {
    RT_CHECK(false, "wrote ", path, " but fsync of its folder ", dir, " failed: ", errno_text(errno));
  }
}

void append_bytes(const std::string& path, std::string_view bytes) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644));
  RT_CHECK(fd.get() >= 0, "cannot append to ", path, ": ", errno_text(errno));
  ssize_t n;
  do {
    n = ::write(fd.get(), bytes.data(), bytes.size());
  } while (n < 0 && errno == EINTR);
  RT_CHECK(n >= 0, "cannot append to ", path, ": ", errno_text(errno));
  // A short write leaves a partial record; say so rather than retry and split the record.
  RT_CHECK(static_cast<size_t>(n) == bytes.size(), "cannot append to ", path, ": short write (", n, " of ",
           bytes.size(), " bytes; disk full?)");
}

void append_line(const std::string& path, std::string_view line) {
  std::string record;
  record.reserve(line.size() + 1);
  record.append(line);
  record += '\n';
  append_bytes(path, record);
}

std::string read_file(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  RT_CHECK(fd.get() >= 0, "cannot read ", path, ": ", errno_text(errno));
  struct stat st {};
  RT_CHECK(::fstat(fd.get(), &st) == 0, "cannot read ", path, ": fstat failed: ", errno_text(errno));
  RT_CHECK(!S_ISDIR(st.st_mode), "cannot read ", path, ": it is a directory");
  std::string bytes;
  if (S_ISREG(st.st_mode)) bytes.reserve(static_cast<size_t>(st.st_size));
  char buf[1 << 16];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof(buf));
    if (n < 0) {
      if (errno == EINTR) continue;
      RT_CHECK(false, "cannot read ", path, ": ", errno_text(errno));
    }
    if (n == 0) break;
    bytes.append(buf, static_cast<size_t>(n));
  }
  return bytes;
}

}  // namespace rt
