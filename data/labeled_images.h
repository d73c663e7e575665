// An in-memory labelled image set (e.g. Fashion-MNIST) as normalised float NCHW plus int32 labels.
// load_idx_dataset returns pixels = (byte / 255 - mean[c]) / stddev[c] and labels in
// [0, num_classes), where num_classes = max label + 1; it throws rt::Error naming the file(s) when
// shapes, counts or normalisation arguments do not fit.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rt {

struct LabeledImages {
  int64_t count = 0;
  int64_t channels = 1, height = 0, width = 0;
  int64_t num_classes = 0;
  std::vector<float> pixels;    // (count, channels, height, width), plain NCHW, normalised
  std::vector<int32_t> labels;  // (count)

  int64_t sample_size() const { return channels * height * width; }
};

// images_path: 3-D IDX (N, H, W), giving C = 1; labels_path: 1-D IDX (N). mean and stddev hold one
// value per channel, stddev > 0.
LabeledImages load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                               const std::vector<double>& mean, const std::vector<double>& stddev);

}  // namespace rt
