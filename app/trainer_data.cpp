// How a Trainer opens its data (app/trainer_data.h).
#include "app/trainer_data.h"

#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>

#include "app/config_model.h"
#include "app/image_options.h"
#include "app/rank_warning.h"
#include "base/check.h"
#include "config/batch_shape.h"
#include "data/batch_source.h"
#include "data/image_folder.h"
#include "data/indexed_image_batches.h"
#include "data/labeled_images.h"
#include "data/sample_index.h"
#include "data/record_index.h"

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

// Note [One index per job]: rank 0 alone reads a folder's index from its cache, or lists the
// folder and writes the cache, and hands the index to the other ranks. A file system then sees one
// listing of 1.28 M files per job, not one per rank; no two ranks race to write one cache; and
// every rank samples from the same list, even if files change while the job starts.
// Shards are indexed the same way (their offsets, not a listing).
ImageIndex shared_index(const std::string& root, const Config& config, const World& world, const StallPolicy& stall) {
  const DataSource source = config.data.source;
  ImageIndex index;
  if (world.size() == 1) {
    index = errors_as<DataError>([&] { return load_index(source, root, config.data.rebuild_index); });
  } else {
    std::string text;
    if (world.rank() == 0) {
      index = errors_as<DataError>([&] { return load_index(source, root, config.data.rebuild_index); });
      text = index_text(index);
    }
    world.broadcast(text, 0, {&stall, str_cat("rank 0's index of ", root)});
    if (world.rank() != 0) index = errors_as<DataError>([&] { return index_from_text(source, root, text); });
  }
  if (index.records()) leave_out_labels_from(index, config.model.num_classes);
  // What indexing left out: every rank stops alike, or rank 0 alone names each once.
  const DataConfig& d = config.data;
  if (!index.left_out.empty() && d.on_bad_file == BadFilePolicy::kError)
    throw DataError(str_cat(index.left_out[0], " (data.on_bad_file = \"error\"; \"skip\" goes on without it)"));
  if (world.rank() == 0)
    for (const std::string& why : index.left_out) rank_warning(world)(str_cat("left out of the index: ", why));
  return index;
}

}  // namespace

TrainerData open_data(const Config& config, const World& world, const StallPolicy& stall, int workers) {
  const DataConfig& d = config.data;
  TrainerData data;
  data.synthetic = d.source == DataSource::kSynthetic;
  if (data.synthetic) {
    data.input_shape = usual_input(config);
    return data;
  }
  if (decodes_images(d.source)) {
    const auto index = [&](const std::string& folder) {
      return shared_index(data_path(d, folder), config, world, stall);
    };
    data.train =
        open_image_folder(d, index(d.train_folder), config.model.name, config.train.device,
                          /*training=*/true, static_cast<uint64_t>(config.train.seed), workers, rank_warning(world));
    data.test = open_image_folder(d, index(d.val_folder), config.model.name, config.train.device,
                                  /*training=*/false, 0, workers, rank_warning(world));
  } else {
    const auto load = [&](const std::string& images, const std::string& labels) {
      return errors_as<DataError>(
          [&] { return load_idx_dataset(data_path(d, images), data_path(d, labels), d.mean, d.std); });
    };
    data.train = std::make_unique<InMemoryBatches>(load(d.train_images, d.train_labels));
    data.test = std::make_unique<InMemoryBatches>(load(d.test_images, d.test_labels));
  }
  const int64_t classes = std::max(data.train->num_classes(), data.test->num_classes());
  if (classes > config.model.num_classes)
    throw DataError(str_cat("the data in '", d.dir, "' has ", classes,
                            " classes but model.num_classes = ", config.model.num_classes));
  const auto [c, h, w] = data.train->sample_shape();
  data.input_shape = {c, h, w};
  return data;
}

EpochSampler training_sampler(const Config& config, const World& world, int64_t count) {
  const TrainConfig& t = config.train;
  return EpochSampler(count, rank_batch(t), static_cast<uint64_t>(t.seed), world.rank(), world.size(),
                      config.data.tail);
}

}  // namespace rt
