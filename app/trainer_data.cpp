// How a Trainer opens its data (Trainer::open_data): synthetic images, IDX files, or a source of
// decoded images whose index rank 0 alone makes and hands the others (Note [One index per job]).
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "app/config_model.h"
#include "app/image_options.h"
#include "app/rank_warning.h"
#include "app/trainer.h"
#include "base/check.h"
#include "data/batch_source.h"
#include "data/indexed_image_batches.h"
#include "data/labeled_images.h"
#include "data/sample_index.h"
#include "data/shard_index.h"

namespace rt {
namespace {

std::string data_path(const DataConfig& d, const std::string& file) {
  return (std::filesystem::path(d.dir) / file).string();
}

// data.source = "imagefolder", "shards" or "tfrecord": the training or evaluation set (its index), its
// transforms from the config.
std::unique_ptr<BatchSource> open_image_folder(const DataConfig& d, ImageIndex index, const std::string& model,
                                               Device device, bool training, uint64_t seed, int workers,
                                               std::function<void(const std::string&)> warn) {
  ImageBatchOptions o;
  o.sample = image_sample_options(d, model);
  o.training = training;
  o.seed = seed;
  o.workers = workers;
  o.prefetch = static_cast<int>(d.prefetch);
  o.error_on_bad_file = d.on_bad_file == BadFilePolicy::kError;
  o.label_offset = d.label_offset;
  // Note [Lent batches]: the workers write each batch into page-locked memory where the device
  // reads it (plain memory on the CPU), and the step borrows that slot: no copy of the batch on
  // the step's thread (38.5 MB at ResNet-50's batch of 64).
  o.allocate = [device](size_t bytes) { return allocate_host_staging(device, bytes); };
  o.warn = std::move(warn);
  return std::make_unique<IndexedImageBatches>(std::move(index), std::move(o));
}

}  // namespace

// Note [One index per job]: rank 0 alone reads a folder's index from its cache, or lists the
// folder and writes the cache, and hands the index to the other ranks. A file system then sees one
// listing of 1.28 M files per job, not one per rank; no two ranks race to write one cache; and
// every rank samples from the same list, even if files change while the job starts.
// Shards are indexed the same way (their offsets, not a listing).
ImageIndex Trainer::shared_index(const std::string& root) {
  const DataSource source = config_.data.source;
  ImageIndex index;
  if (world_.size() == 1) {
    index = load_index(source, root, config_.data.rebuild_index);
  } else {
    std::string text;
    if (world_.rank() == 0) {
      index = load_index(source, root, config_.data.rebuild_index);
      text = index_text(index);
    }
    world_.broadcast(text, 0, watched(str_cat("rank 0's index of ", root)));
    if (world_.rank() != 0) index = index_from_text(source, root, text);
  }
  if (index.records()) leave_out_labels_from(index, config_.model.num_classes);
  // What indexing left out: every rank stops alike, or rank 0 alone names each once.
  const DataConfig& d = config_.data;
  if (!index.left_out.empty() && d.on_bad_file == BadFilePolicy::kError)
    throw Error(str_cat(index.left_out[0], " (data.on_bad_file = \"error\"; \"skip\" goes on without it)"));
  if (world_.rank() == 0)
    for (const std::string& why : index.left_out) rank_warning(world_)(str_cat("left out of the index: ", why));
  return index;
}

void Trainer::open_data(int workers) {
  const DataConfig& d = config_.data;
  synthetic_ = d.source == DataSource::kSynthetic;
  if (synthetic_) {
    input_shape_ = usual_input(config_);
    return;
  }
  if (decodes_images(d.source)) {
    train_ =
        open_image_folder(d, shared_index(data_path(d, d.train_folder)), config_.model.name, config_.train.device,
                          /*training=*/true, static_cast<uint64_t>(config_.train.seed), workers, rank_warning(world_));
    test_ = open_image_folder(d, shared_index(data_path(d, d.val_folder)), config_.model.name, config_.train.device,
                              /*training=*/false, 0, workers, rank_warning(world_));
  } else {
    train_ = std::make_unique<InMemoryBatches>(
        load_idx_dataset(data_path(d, d.train_images), data_path(d, d.train_labels), d.mean, d.std));
    test_ = std::make_unique<InMemoryBatches>(
        load_idx_dataset(data_path(d, d.test_images), data_path(d, d.test_labels), d.mean, d.std));
  }
  const int64_t classes = std::max(train_->num_classes(), test_->num_classes());
  RT_CHECK(classes <= config_.model.num_classes, "the data in '", d.dir, "' has ", classes,
           " classes but model.num_classes = ", config_.model.num_classes);
  const auto [c, h, w] = train_->sample_shape();
  input_shape_ = {c, h, w};
}

}  // namespace rt
