// The file index of an ImageNet-style folder, ROOT/<class>/<file>, laid out as torchvision's
// ImageFolder reads it: classes are the sorted names of ROOT's sub-folders (label = position),
// files are every regular, non-hidden file under a class folder (sub-folders included), sorted;
// whether a file is an image is decided when it is decoded, by content. A class folder with no
// files is an error naming it.
//
// Listing 1.28 M files takes a while on a network file system, so the index is cached in a text
// file (the class folders with their modification times, then one "label<TAB>path" line per file)
// and reused while the same class folders have the same times (adding or removing a file changes
// its folder's time; changes inside nested sub-folders do not, so those need `rebuild`).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/run_settings.h"

namespace rt {

// Where a sample's bytes lie inside a container file.
struct RecordSpan {
  uint32_t container = 0;  // index into ImageIndex::containers
  uint64_t offset = 0, size = 0;
};

struct ImageIndex {
  std::string root;
  std::vector<std::string> classes;
  std::vector<std::string> files;  // per sample: relative to root, or the member's name in its container
  std::vector<int32_t> labels;     // per sample
  // Sources of records only: the container files (relative to root) and each sample's span.
  std::vector<std::string> containers;
  std::vector<RecordSpan> spans;
  // kImageFolder, or the record format of the containers (Note [Record formats]), whose labels
  // may be read with each image: -1 in the index.
  DataSource source = DataSource::kImageFolder;
  // Members left out of the index (no label, damaged shard...), a message naming each.
  std::vector<std::string> left_out;
  // Records only: the files' sizes and times the index was made from, as its cache records them.
  std::string indexed_files;

  bool records() const { return !containers.empty(); }
  // What a message names: the file, or "ROOT/SHARD:MEMBER".
  std::string path(size_t i) const {
    return records() ? root + "/" + containers[spans[i].container] + ":" + files[i] : root + "/" + files[i];
  }
};

// The index as text, as the cache holds it (its class folders' times included), and back: what
// rank 0 hands the other ranks (Note [One index per job] in app/trainer_data.cpp). rt::Error
// naming root where the text is malformed.
std::string image_index_text(const ImageIndex& index);
ImageIndex image_index_from_text(const std::string& root, const std::string& text);
// Scans root (no cache).
ImageIndex scan_image_folder(const std::string& root);
// The index of root, from cache_path when that is up to date, else scanned and written there
// (atomically, under a name no other writer uses: Note [One index at a time]). cache_path "" means ROOT/.ringtrain_index.tsv; a cache that cannot be written is
// reported on stderr and the scan used as is.
ImageIndex load_image_index(const std::string& root, std::string cache_path = "", bool rebuild = false);

}  // namespace rt
