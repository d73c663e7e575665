#include "data/indexed_image_batches.h"

#include <algorithm>
#include <chrono>

#include "base/check.h"
#include "base/stderr_line.h"

namespace rt {

IndexedImageBatches::IndexedImageBatches(ImageIndex index, ImageBatchOptions options)
    : index_(std::move(index)), o_(std::move(options)), files_(index_, o_.label_offset) {
  RT_CHECK(o_.workers >= 1, "an image folder needs at least one worker thread, got ", o_.workers);
  RT_CHECK(o_.prefetch >= 1, "an image folder needs a prefetch depth of at least one batch, got ", o_.prefetch);
  RT_CHECK(!index_.files.empty(), "image folder '", index_.root, "' has no files");
  if (!o_.warn) o_.warn = [](const std::string& m) { stderr_line(m); };
  if (!o_.allocate)
    o_.allocate = [](size_t bytes) {
      return std::shared_ptr<void>(new float[bytes / sizeof(float)], std::default_delete<float[]>());
    };
  slots_.resize(static_cast<size_t>(o_.prefetch));
  for (int i = 0; i < o_.workers; ++i) threads_.emplace_back([this] { work(); });
}

IndexedImageBatches::~IndexedImageBatches() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  work_cv_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void IndexedImageBatches::start(int64_t epoch, std::vector<int64_t> indices, int64_t batch) {
  RT_CHECK(batch >= 1 && static_cast<int64_t>(indices.size()) % batch == 0, "a pass of ", indices.size(),
           " samples is not whole batches of ", batch);
  for (int64_t i : indices)
    RT_CHECK(i >= 0 && i < count(), "sample ", i, " is outside image folder '", index_.root, "' (", count(), " files)");
  std::lock_guard<std::mutex> lock(mu_);
  give_back();
  RT_CHECK(claimed_ == delivered_, "an image folder pass started before the last was delivered");
  indices_ = std::move(indices);
  epoch_ = epoch;
  batch_ = batch;
  total_ = static_cast<int64_t>(indices_.size()) / batch;
  claimed_ = delivered_ = 0;
  files_.new_pass();
  skipped_this_pass_.clear();
  error_ = nullptr;
  const size_t floats = static_cast<size_t>(batch * o_.sample.floats());
  for (Slot& s : slots_) {
    if (s.floats < floats) {
      s.memory = o_.allocate(floats * sizeof(float));
      s.floats = floats;
    }
    s.labels.resize(static_cast<size_t>(batch));
    s.ready = false;
  }
  work_cv_.notify_all();
}

bool IndexedImageBatches::can_claim() const {
  return claimed_ < total_ && claimed_ < delivered_ + static_cast<int64_t>(slots_.size()) && !error_;
}

void IndexedImageBatches::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    work_cv_.wait(lock, [&] { return stop_ || can_claim(); });
    if (stop_) return;
    const int64_t n = claimed_++;
    Slot& slot = slots_[static_cast<size_t>(n) % slots_.size()];
    const int64_t epoch = epoch_, batch = batch_;
    const int64_t* samples = indices_.data() + n * batch;  // indices_ stays put until the pass is delivered
    lock.unlock();
    std::exception_ptr failed;
    try {
      for (int64_t i = 0; i < batch; ++i)
        make_sample(epoch, samples[i], slot.images() + i * o_.sample.floats(), slot.labels.data() + i);
    } catch (...) {
      failed = std::current_exception();
    }
    lock.lock();
    if (failed && !error_) error_ = failed;
    slot.ready = !failed;
    ready_cv_.notify_all();
  }
}

void IndexedImageBatches::make_sample(int64_t epoch, int64_t sample, float* image, int32_t* label) {
  const int64_t n = count();
  for (int64_t k = 0; k < n; ++k) {
    const size_t file = static_cast<size_t>((sample + k) % n);
    try {
      // The transform's randomness stays the asked-for sample's, whichever file stands in for it.
      const std::string path = index_.path(file);
      const SampleBytes bytes = files_.read(file);
      normalize_sample(sample_image(bytes.image, path, o_.sample, o_.training, o_.seed, epoch, sample), o_.sample,
                       image);
      *label = bytes.label;
      return;
    } catch (const Error& e) {
      if (o_.error_on_bad_file)
        throw DataError(str_cat(e.what(), " (data.on_bad_file = \"error\"; \"skip\" goes on without it)"));
      std::lock_guard<std::mutex> lock(mu_);
      skipped_this_pass_.insert(file);
      if (warned_.insert(index_.path(file)).second) o_.warn(str_cat("skipping an unreadable image: ", e.what()));
    }
  }
  throw DataError(str_cat("image folder '", index_.root, "': none of its ", n, " files is a readable image"));
}

LentBatch IndexedImageBatches::borrow(float* /*images*/, int32_t* /*labels*/) {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mu_);
  give_back();
  RT_CHECK(delivered_ < total_, "no batch left in this pass of image folder '", index_.root, "'");
  Slot& slot = slots_[static_cast<size_t>(delivered_) % slots_.size()];
  const auto begin = Clock::now();
  ready_cv_.wait(lock, [&] { return slot.ready || error_; });
  const double waited = std::chrono::duration<double>(Clock::now() - begin).count();
  if (!slot.ready) std::rethrow_exception(error_);
  lent_ = true;
  return {slot.images(), slot.labels.data(), waited};
}

void IndexedImageBatches::give_back() {
  if (!lent_) return;
  slots_[static_cast<size_t>(delivered_) % slots_.size()].ready = false;
  ++delivered_;
  lent_ = false;
  work_cv_.notify_all();
}

void IndexedImageBatches::release() {
  std::lock_guard<std::mutex> lock(mu_);
  give_back();
}

double IndexedImageBatches::next(float* images, int32_t* labels) {
  const LentBatch lent = borrow(images, labels);
  std::copy_n(lent.images, static_cast<size_t>(batch_ * o_.sample.floats()), images);
  std::copy_n(lent.labels, static_cast<size_t>(batch_), labels);
  release();
  return lent.waited;
}

int64_t IndexedImageBatches::skipped() const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(skipped_this_pass_.size());
}

}  // namespace rt
