#include "base/whole_lines.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <mutex>
#include <streambuf>
#include <string>

#include "base/stderr_line.h"

namespace rt {
namespace {

// No put area: every character comes through overflow or xsputn, under the lock, so threads that
// write at once (the watchdog beside the main thread) keep their lines apart too.
class WholeLineBuffer : public std::streambuf {
 public:
  explicit WholeLineBuffer(int fd) : fd_(fd) {}

 protected:
  int_type overflow(int_type c) override {
    if (traits_type::eq_int_type(c, traits_type::eof())) return traits_type::not_eof(c);
    const char ch = traits_type::to_char_type(c);
    xsputn(&ch, 1);
    return c;
  }

  std::streamsize xsputn(const char* s, std::streamsize n) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.append(s, static_cast<size_t>(n));
    const size_t last_newline = pending_.rfind('\n');
    if (last_newline != std::string::npos) {
      write_fully(fd_, pending_.data(), last_newline + 1);
      pending_.erase(0, last_newline + 1);
    }
    return n;
  }

  int sync() override {
    std::lock_guard<std::mutex> lock(mutex_);
    write_fully(fd_, pending_.data(), pending_.size());
    pending_.clear();
    return 0;
  }

 private:
  const int fd_;
  std::mutex mutex_;
  std::string pending_;
};

}  // namespace

void write_whole_lines() {
  std::cout.flush();
  std::cerr.flush();
  std::fflush(stdout);
  // Never freed: std::cout is flushed once more when the process exits, after every destructor.
  static WholeLineBuffer* const out = new WholeLineBuffer(STDOUT_FILENO);
  static WholeLineBuffer* const err = new WholeLineBuffer(STDERR_FILENO);
  std::cout.rdbuf(out);
  std::cerr.rdbuf(err);
  std::cerr.unsetf(std::ios::unitbuf);  // else every << flushes, a partial line and all
}

}  // namespace rt
