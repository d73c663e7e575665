// The index of a source of decoded images, whichever it is (data.source = "imagefolder", "shards"
// or "tfrecord"): one call for the trainer and `ringtrain predict`, over the folder's file list
// (data/image_folder.h) or the records' index (data/record_index.h), each cached in the folder.
#pragma once

#include <string>

#include "base/run_settings.h"
#include "data/image_folder.h"

namespace rt {

// The index of root, from its cache where that still matches the files (rebuild: never).
ImageIndex load_index(DataSource source, const std::string& root, bool rebuild = false);
// The index as text, and back: what rank 0 hands the other ranks (Note [One index per job]).
std::string index_text(const ImageIndex& index);
ImageIndex index_from_text(DataSource source, const std::string& root, const std::string& text);

}  // namespace rt
