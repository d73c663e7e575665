// A file opened for reading, closed on every way out, with its size and whole reads at an offset:
// what the tar and TFRecord indexers share. Errors are rt::Error naming the file as `kind` says
// ("tar shard", "TFRecord file").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace rt {

class ReadOnlyFile {
 public:
  ReadOnlyFile(const std::string& path, const char* kind);
  ~ReadOnlyFile();
  ReadOnlyFile(const ReadOnlyFile&) = delete;
  ReadOnlyFile& operator=(const ReadOnlyFile&) = delete;

  uint64_t size() const { return size_; }
  // Reads n bytes at offset; rt::Error naming the file and offset where it cannot (the file
  // ends first, or an I/O error).
  void read(uint64_t offset, void* out, size_t n) const;

 private:
  std::string path_;
  const char* kind_;
  int fd_;
  uint64_t size_ = 0;
};

}  // namespace rt
