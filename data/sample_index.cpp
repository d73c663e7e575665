#include "data/sample_index.h"

#include "data/shard_index.h"

namespace rt {

ImageIndex load_index(DataSource source, const std::string& root, bool rebuild) {
  return source == DataSource::kImageFolder ? load_image_index(root, "", rebuild)
                                            : load_shard_index(root, "", rebuild, source);
}

std::string index_text(const ImageIndex& index) {
  return index.records() ? shard_index_text(index) : image_index_text(index);
}

ImageIndex index_from_text(DataSource source, const std::string& root, const std::string& text) {
  return source == DataSource::kImageFolder ? image_index_from_text(root, text) : shard_index_from_text(root, text);
}

}  // namespace rt
