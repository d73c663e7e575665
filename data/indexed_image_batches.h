// Batches of decoded images from an index (an image folder, image_folder.h, or records: tar shards
// or TFRecord files, record_index.h), made by a pool of worker threads ahead of the training loop: each worker claims the next batch number, decodes and transforms its samples
// (image_sample.h) into a free slot of a bounded ring, and the loop takes the slots in order.
// A batch's contents depend only on (seed, epoch, sample indices), never on which worker made it
// or how many there are.
//
// Unreadable files (corrupt, truncated, empty, not an image) are skipped: warned about once each,
// counted, and replaced by the next readable file of the index (with that file's label), so a
// batch is always full and a run never crashes on one; with error_on_bad_file the pass stops
// with the file's name instead.
#pragma once

#include <condition_variable>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "data/batch_source.h"
#include "data/image_folder.h"
#include "data/image_sample.h"
#include "data/sample_files.h"

namespace rt {

struct ImageBatchOptions {
  ImageSampleOptions sample;
  bool training = true;  // the training transforms, else the evaluation ones
  uint64_t seed = 1;
  int workers = 1;   // >= 1
  int prefetch = 2;  // batches made ahead of the loop, >= 1
  bool error_on_bad_file = false;
  int64_t label_offset = 0;  // TFRecords: the stored label less this is the class (data.label_offset)
  std::function<void(const std::string&)> warn;  // a skipped file's message; default: stderr
  // The memory of a slot's images (bytes); default: the heap. The trainer passes page-locked
  // memory on CUDA, so the device copies a lent batch straight from where the workers wrote it.
  std::function<std::shared_ptr<void>(size_t bytes)> allocate;
};

class IndexedImageBatches final : public BatchSource {
 public:
  IndexedImageBatches(ImageIndex index, ImageBatchOptions options);
  ~IndexedImageBatches() override;
  IndexedImageBatches(const IndexedImageBatches&) = delete;
  IndexedImageBatches& operator=(const IndexedImageBatches&) = delete;

  int64_t count() const override { return static_cast<int64_t>(index_.files.size()); }
  int64_t num_classes() const override { return static_cast<int64_t>(index_.classes.size()); }
  std::array<int64_t, 3> sample_shape() const override { return {o_.sample.channels, o_.sample.size, o_.sample.size}; }
  void start(int64_t epoch, std::vector<int64_t> indices, int64_t batch) override;
  double next(float* images, int32_t* labels) override;
  LentBatch borrow(float* images, int32_t* labels) override;
  void release() override;
  int64_t skipped() const override;

  // Files opened so far (a folder's images, or shards once per pass).
  int64_t files_opened() const { return files_.files_opened(); }

  // One sample as a worker makes it (with bad files skipped); for tests and `ringtrain predict`.
  void make_sample(int64_t epoch, int64_t sample, float* image, int32_t* label);

 private:
  struct Slot {
    std::shared_ptr<void> memory;  // o_.allocate's
    size_t floats = 0;             // what memory holds
    std::vector<int32_t> labels;
    bool ready = false;

    float* images() const { return static_cast<float*>(memory.get()); }
  };
  void work();
  bool can_claim() const;  // under mu_
  void give_back();        // under mu_: the lent slot, if any

  ImageIndex index_;
  ImageBatchOptions o_;
  SampleFiles files_;
  mutable std::mutex mu_;
  std::condition_variable work_cv_, ready_cv_;
  std::vector<int64_t> indices_;
  int64_t epoch_ = 0, batch_ = 0, total_ = 0, claimed_ = 0, delivered_ = 0;
  bool lent_ = false;  // slot delivered_ is lent (borrow) and not yet given back
  std::vector<Slot> slots_;
  std::exception_ptr error_;
  std::set<std::string> warned_;        // files already reported (once per run)
  std::set<size_t> skipped_this_pass_;  // files found unreadable since start()
  bool stop_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace rt
