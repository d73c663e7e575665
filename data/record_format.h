// Note [Record formats]: a source of records (data.source = "shards" or "tfrecord") is a folder of
// container files, each holding samples at offsets that an index records (data/record_index.h).
// What differs between formats is one RecordFormat each, in a file of its own (tar_records.cpp,
// tfrecord_records.cpp): which files of the folder are containers, the index cache's name and
// first line, how to index one container, and how to find the image (and the label, where the
// record holds it) in a sample's bytes. The indexing, its cache, the hand-off between ranks and the
// reading are written once over them. A fourth format is a file like those, a DataSource value
// and a line of record_format (record_format.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "base/run_settings.h"
#include "data/image_folder.h"

namespace rt {

// The file of a record folder that names its classes, one per line; it is no container.
inline constexpr const char* kClassList = "classes.txt";

// An image inside a sample's record bytes; the label where the record holds it (else the index's).
struct RecordImage {
  std::span<const uint8_t> image;
  std::optional<int64_t> label;
};

struct RecordFormat {
  DataSource source;
  const char* containers;    // what messages call the files: ".tar shards"
  const char* cache_file;    // the index cache in the folder: ".ringtrain_shards.tsv"
  const char* cache_header;  // the cache's first line, which names the format
  bool labels_in_index;      // labels read at indexing (else with each image: -1 in the index)
  // Whether a (non-hidden, not classes.txt) file of the folder is a container.
  bool (*holds)(const std::string& file_name);
  // Appends container number c (ROOT/file)'s samples to index, and what it leaves out, named, to
  // index.left_out. class_limit: the classes classes.txt lists, 0 where there is none.
  void (*index)(const std::string& root, const std::string& file, uint32_t c, ImageIndex& index, int64_t class_limit);
  // The image in a sample's bytes; rt::Error naming `name` where the record is damaged.
  RecordImage (*read)(std::span<const uint8_t> record, const std::string& name);
};

// The format of data.source = "shards" or "tfrecord"; rt::Error for a source without records.
const RecordFormat& record_format(DataSource source);
// The format whose index cache starts with this line, or nullptr.
const RecordFormat* record_format_of_header(const std::string& line);

}  // namespace rt
