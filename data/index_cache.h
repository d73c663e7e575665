// What the cached indexes of data sets share (folders: data/image_folder.h; tar shards:
// data/record_index.h): a file's modification time, which says whether a cache is still current,
// and writing a cache so that concurrent writers never see each other's half.
#pragma once

#include <cstdint>
#include <string>

namespace rt {

// Nanoseconds since the epoch; -1 where path cannot be asked (gone): a cache naming it never matches.
int64_t mtime_ns(const std::string& path);

// Writes text to cache (Note [One index at a time]); a cache that cannot be written is reported on
// stderr, naming it, and the caller goes on with the index it has.
void write_index_cache(const std::string& cache, const std::string& text);

}  // namespace rt
