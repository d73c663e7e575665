// Where the training loop and evaluation get their batches: an in-memory data set (IDX files,
// gathered on the calling thread) or an image folder (decoded and augmented by worker threads
// ahead of the loop, indexed_image_batches.h). The sampler decides which samples a rank asks
// for; a source reads only those.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "data/labeled_images.h"

namespace rt {

// A batch in the memory of the source that made it, lent to the caller (BatchSource::borrow).
struct LentBatch {
  const float* images = nullptr;
  const int32_t* labels = nullptr;
  double waited = 0;  // seconds borrow() waited for it
};

class BatchSource {
 public:
  virtual ~BatchSource() = default;
  virtual int64_t count() const = 0;
  virtual int64_t num_classes() const = 0;
  virtual std::array<int64_t, 3> sample_shape() const = 0;  // (C, H, W)
  // Starts delivering indices.size() / batch batches, in order, of the samples `indices` names
  // (a multiple of batch long); `epoch` seeds the training transforms. The previous pass must
  // have been delivered whole.
  virtual void start(int64_t epoch, std::vector<int64_t> indices, int64_t batch) = 0;
  // Writes the next batch (batch x C x H x W floats, plain NCHW, and batch labels); returns the
  // seconds it waited for a batch that was not ready yet.
  virtual double next(float* images, int32_t* labels) = 0;
  // The next batch where the source made it, lent until release(), the next borrow() or start():
  // a source that makes batches ahead (indexed_image_batches.h) lends the slot its workers wrote,
  // and nothing copies it; others write into `images` and `labels` as next() does and lend those.
  virtual LentBatch borrow(float* images, int32_t* labels) {
    const double waited = next(images, labels);
    return {images, labels, waited};
  }
  // Gives back the batch borrow() lent, if any.
  virtual void release() {}
  // How many distinct unreadable files were skipped since start() (sources that read files).
  virtual int64_t skipped() const { return 0; }
};

// A LabeledImages in memory; next() gathers the batch on the calling thread (no wait).
class InMemoryBatches final : public BatchSource {
 public:
  explicit InMemoryBatches(LabeledImages data) : data_(std::move(data)) {}
  int64_t count() const override { return data_.count; }
  int64_t num_classes() const override { return data_.num_classes; }
  std::array<int64_t, 3> sample_shape() const override { return {data_.channels, data_.height, data_.width}; }
  void start(int64_t epoch, std::vector<int64_t> indices, int64_t batch) override;
  double next(float* images, int32_t* labels) override;

 private:
  LabeledImages data_;
  std::vector<int64_t> indices_;
  int64_t batch_ = 0, delivered_ = 0;
};

}  // namespace rt
