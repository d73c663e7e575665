#include "data/sample_index.h"

#include "data/record_index.h"

namespace rt {

ImageIndex load_index(DataSource source, const std::string& root, bool rebuild) {
  return source == DataSource::kImageFolder ? load_image_index(root, "", rebuild)
                                            : load_record_index(root, source, "", rebuild);
}

std::string index_text(const ImageIndex& index) {
  return index.records() ? record_index_text(index) : image_index_text(index);
}

ImageIndex index_from_text(DataSource source, const std::string& root, const std::string& text) {
  return source == DataSource::kImageFolder ? image_index_from_text(root, text) : record_index_from_text(root, text);
}

}  // namespace rt
