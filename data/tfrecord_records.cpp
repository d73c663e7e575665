// TFRecord files of tf.Examples (data.source = "tfrecord"; Note [Record formats]): each record holds
// the image and its label (data/tf_example.h), so the index records spans only and the label is
// read with the image.
#include "base/check.h"
#include "data/record_format.h"
#include "data/tf_example.h"

namespace rt {
namespace {

// One TFRecord file's records appended to index (container number c), their labels unknown (-1).
void index_tfrecord_file(const std::string& root, const std::string& file, uint32_t c, ImageIndex& index,
                         int64_t /*class_limit: labels are checked as they are read*/) {
  const TfRecordListing listing = list_tfrecords(root + "/" + file);
  for (size_t r = 0; r < listing.offsets.size(); ++r) {
    index.files.push_back(str_cat("offset ", listing.offsets[r]));
    index.labels.push_back(-1);
    index.spans.push_back({c, listing.offsets[r], listing.sizes[r]});
  }
  if (!listing.damage.empty())
    index.left_out.push_back(str_cat(listing.damage, "; the records before it are used, the rest left out"));
}

// Every file but the index files that DALI's tfrecord2idx writes (TensorFlow's ImageNet files,
// train-00000-of-01024, have no extension).
bool is_tfrecord_file(const std::string& name) { return !name.ends_with(".idx"); }

// Both framing CRCs checked, then the example's image and label.
RecordImage example_image(std::span<const uint8_t> record, const std::string& name) {
  const ImageExample example = parse_image_example(tfrecord_data(record, name), name);
  return {example.image, example.label};
}

}  // namespace

extern const RecordFormat kTfRecordRecords = {.source = DataSource::kTfRecord,
                                              .containers = "TFRecord files",
                                              .cache_file = ".ringtrain_tfrecords.tsv",
                                              .cache_header = "# ringtrain tfrecord index v1",
                                              .labels_in_index = false,
                                              .holds = is_tfrecord_file,
                                              .index = index_tfrecord_file,
                                              .read = example_image};

}  // namespace rt
