// TFRecord files of tf.Example records, as TensorFlow's ImageNet scripts (and tf_cnn_benchmarks,
// which the Horovod paper's runs used) write them: each record's data a tf.Example whose features
// hold "image/encoded" (the image file's bytes) and "image/class/label" (an int64). The framing
// is base/tfrecord.h's; the protobuf wire format is read here, only as far as those two features
// need (Example.features = 1, Features.feature = 1 as map entries of key = 1 and value = 2,
// Feature.bytes_list = 1 or int64_list = 3, each list's value = 1, int64s packed or not).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace rt {

struct TfRecordListing {
  std::vector<uint64_t> offsets, sizes;  // of each whole record (header, data and CRCs), in file order
  // Empty for a whole file; else why the listing stopped early (a length whose CRC fails, a record
  // running past the end of the file), naming the offset.
  std::string damage;
};

// Reads each record's 12-byte header only (its length and the length's CRC); the data is skipped.
// rt::Error naming path where it cannot be opened or read.
TfRecordListing list_tfrecords(const std::string& path);

// The data of one whole record, both CRCs checked; rt::Error naming `name` where one fails.
std::span<const uint8_t> tfrecord_data(std::span<const uint8_t> record, const std::string& name);

struct ImageExample {
  std::span<const uint8_t> image;  // inside the record's bytes
  int64_t label = 0;
};
// rt::Error naming `name` where the data is not a tf.Example with both features.
ImageExample parse_image_example(std::span<const uint8_t> data, const std::string& name);

}  // namespace rt
