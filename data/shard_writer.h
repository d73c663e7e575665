// Writes an image folder's samples as tar shards in WebDataset's layout (data/record_index.h), in
// the index's order: for each sample <key>.<ext> (its bytes as they are, named by their format)
// and <key>.cls (its label), where the key is the file's path without its extension. A shard is
// closed before it would pass the size asked for (a sample larger than that gets one of its
// own). POSIX ustar headers, with a PAX header for a name longer than ustar's 100 bytes.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "data/image_folder.h"

namespace rt {

struct PackedShards {
  int64_t samples = 0, shards = 0;
  uint64_t bytes = 0;
};

// Writes index's samples to out_dir/<prefix>-000000.tar, ... and out_dir/classes.txt; out_dir
// is made and must hold no .tar file yet. `progress(done)` is called after each sample.
// rt::Error naming the file that cannot be read or written.
PackedShards pack_shards(const ImageIndex& index, const std::string& out_dir, const std::string& prefix,
                         uint64_t shard_bytes, const std::function<void(int64_t)>& progress = {});

}  // namespace rt
