#include "data/sample_files.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "base/check.h"
#include "data/image_decode.h"
#include "data/record_format.h"

namespace rt {

SampleFiles::SampleFiles(const ImageIndex& index, int64_t label_offset)
    : index_(index), label_offset_(label_offset), fds_(index.containers.size(), -1) {
  // A pass may hold every container open: ImageNet's TFRecords are 1,152 files, past the usual
  // soft limit of 1,024 descriptors. The hard limit is this process's to take.
  rlimit limit{};
  if (!fds_.empty() && ::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
    limit.rlim_cur = limit.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &limit);
  }
}

SampleFiles::~SampleFiles() { new_pass(); }

void SampleFiles::new_pass() {
  std::lock_guard<std::mutex> lock(mu_);
  for (int& fd : fds_) {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
}

int64_t SampleFiles::files_opened() const {
  std::lock_guard<std::mutex> lock(mu_);
  return opened_;
}

int SampleFiles::container(uint32_t c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (fds_[c] < 0) {
    const std::string path = index_.root + "/" + index_.containers[c];
    fds_[c] = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    // Out of descriptors is the job's trouble, not the file's: not skipped as a bad file.
    if (fds_[c] < 0 && (errno == EMFILE || errno == ENFILE))
      throw std::runtime_error(str_cat("cannot open shard '", path, "': ", std::strerror(errno), " (", opened_,
                                       " open; raise the limit with ulimit -n)"));
    RT_CHECK(fds_[c] >= 0, "cannot open shard '", path, "': ", std::strerror(errno));
    ++opened_;
  }
  return fds_[c];
}

SampleBytes SampleFiles::read(size_t sample) {
  SampleBytes s;
  if (!index_.records()) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++opened_;
    }
    s.buffer = read_file_bytes(index_.path(sample));
  } else {
    s.buffer = read_span(sample);
  }
  s.image = s.buffer;
  s.label = index_.labels[sample];
  if (index_.records()) {
    const std::string name = index_.path(sample);
    const RecordImage r = record_format(index_.source).read(s.buffer, name);
    s.image = r.image;
    if (r.label) {  // read with the image
      const int64_t label = *r.label - label_offset_, classes = static_cast<int64_t>(index_.classes.size());
      RT_CHECK(label >= 0 && label < classes, name, ": image/class/label ", *r.label, " less data.label_offset ",
               label_offset_, " is ", label, ", not a class (0 to ", classes - 1, ")");
      s.label = static_cast<int32_t>(label);
    }
  }
  return s;
}

std::vector<uint8_t> SampleFiles::read_span(size_t sample) {
  const RecordSpan& span = index_.spans[sample];
  const int fd = container(span.container);
  std::vector<uint8_t> bytes(span.size);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t got = ::pread(fd, bytes.data() + done, bytes.size() - done, static_cast<off_t>(span.offset + done));
    if (got < 0 && errno == EINTR) continue;
    RT_CHECK(got >= 0, index_.path(sample), ": cannot read ", span.size, " bytes at offset ", span.offset, ": ",
             std::strerror(errno));
    RT_CHECK(got > 0, index_.path(sample), ": the shard ends before the member's ", span.size, " bytes at offset ",
             span.offset, ": the index no longer matches the shard (data.rebuild_index = true rebuilds it)");
    done += static_cast<size_t>(got);
  }
  return bytes;
}

}  // namespace rt
