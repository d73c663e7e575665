// The bytes of an index's samples (data/image_folder.h), for the decoding workers: a folder's
// sample is its own file; a shard's or TFRecord's is a span of its container, read with one
// pread from a file opened once per pass, so a pass opens as many files as it reads containers,
// not one per image. A TFRecord's framing CRCs are checked and its tf.Example read for the image
// and the label. read() is safe to call from several threads at once.
#pragma once

#include <cstdint>
#include <mutex>
#include <span>
#include <vector>

#include "data/image_folder.h"

namespace rt {

struct SampleBytes {
  std::vector<uint8_t> buffer;
  std::span<const uint8_t> image;  // the image file's bytes, inside buffer
  int32_t label = 0;
};

class SampleFiles {
 public:
  // label_offset: what a TFRecord's stored label is above the class index (1 for TensorFlow's
  // ImageNet files, whose label 0 is "background").
  SampleFiles(const ImageIndex& index, int64_t label_offset);
  ~SampleFiles();
  SampleFiles(const SampleFiles&) = delete;
  SampleFiles& operator=(const SampleFiles&) = delete;

  // rt::Error naming the sample (file, or container and member or offset) where it cannot be
  // read whole, or a TFRecord's where a CRC fails, or it is no tf.Example, or its label is no class.
  SampleBytes read(size_t sample);
  // Closes the open containers, so that each pass opens those it reads once. Only while no read
  // is under way (IndexedImageBatches::start, after the last pass was delivered).
  void new_pass();
  // Files opened since construction.
  int64_t files_opened() const;

 private:
  int container(uint32_t c);
  std::vector<uint8_t> read_span(size_t sample);

  const ImageIndex& index_;
  int64_t label_offset_;
  mutable std::mutex mu_;
  std::vector<int> fds_;  // per container, -1 while closed
  int64_t opened_ = 0;
};

}  // namespace rt
