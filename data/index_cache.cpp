#include "data/index_cache.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>

#include "base/check.h"
#include "base/stderr_line.h"

namespace fs = std::filesystem;

namespace rt {

int64_t mtime_ns(const std::string& path) {
  std::error_code ec;
  const auto t = fs::last_write_time(path, ec);
  return ec ? -1 : std::chrono::duration_cast<std::chrono::nanoseconds>(t.time_since_epoch()).count();
}

// Note [One index at a time]: the ranks of a job, or several jobs, may find no valid cache at the
// same moment and each write one, even from several hosts on one file system. Each writes a file
// whose name no other writer uses (host, process, call) and renames it over the cache: rename is
// atomic, so a reader sees a whole index, and the last writer wins with the same contents. A
// cache that cannot be written (a read-only data set) is reported and the scan used.
void write_index_cache(const std::string& cache, const std::string& text) {
  static std::atomic<int> calls{0};
  char host[256] = "host";
  gethostname(host, sizeof host - 1);
  const fs::path tmp = str_cat(cache, ".", host, ".", ::getpid(), ".", calls++, ".tmp");
  const auto give_up = [&](const std::string& why) {
    stderr_line(
        str_cat("ringtrain: warning: cannot write the image index cache \"", cache, "\" (", why, "); using the scan"));
    std::error_code ec;
    fs::remove(tmp, ec);
  };
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    out.flush();
    if (!out.good()) return give_up("writing failed");
  }
  std::error_code ec;
  fs::rename(tmp, cache, ec);
  if (ec) give_up(ec.message());
}

}  // namespace rt
