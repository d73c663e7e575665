// The bytes of an index's samples (data/image_folder.h), for the decoding workers: a folder's
// sample is its own file; a shard's is a span of its tar file, read with one pread from a file
// opened once per pass, so a pass opens as many files as it reads shards, not one per image.
// Safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

#include "data/image_folder.h"

namespace rt {

class SampleFiles {
 public:
  explicit SampleFiles(const ImageIndex& index);
  ~SampleFiles();
  SampleFiles(const SampleFiles&) = delete;
  SampleFiles& operator=(const SampleFiles&) = delete;

  // rt::Error naming the sample (file, or shard and member) where it cannot be read whole.
  std::vector<uint8_t> read(size_t sample);
  // Closes the open shards: the next pass opens each it reads again (a job that runs for days
  // sees shards replaced between epochs, and holds no descriptors between passes).
  void new_pass();
  // Files opened since construction.
  int64_t files_opened() const;

 private:
  int container(uint32_t c);

  const ImageIndex& index_;
  mutable std::mutex mu_;
  std::vector<int> fds_;  // per container, -1 while closed
  int64_t opened_ = 0;
};

}  // namespace rt
