// load_idx_dataset: read both IDX files, check they describe the same samples, normalise through a
// 256-entry table per channel (computed in double, so every platform gets the same floats).
#include "data/labeled_images.h"

#include <algorithm>
#include <array>
#include <cmath>

#include "base/check.h"
#include "data/idx.h"

namespace rt {

LabeledImages load_idx_dataset(const std::string& images_path, const std::string& labels_path,
                               const std::vector<double>& mean, const std::vector<double>& stddev) {
  IdxArray images = read_idx(images_path);
  IdxArray labels = read_idx(labels_path);
  RT_CHECK(images.dims.size() == 3, images_path, ": images file has ", images.dims.size(),
           " dimensions, expected 3 (N, H, W)");
  RT_CHECK(labels.dims.size() == 1, labels_path, ": labels file has ", labels.dims.size(),
           " dimensions, expected 1 (N)");
  RT_CHECK(images.dims[0] == labels.dims[0], "images file ", images_path, " holds ", images.dims[0],
           " images but labels file ", labels_path, " holds ", labels.dims[0], " labels; expected the same count");

  LabeledImages out;
  out.count = images.dims[0];
  out.channels = 1;
  out.height = images.dims[1];
  out.width = images.dims[2];
  RT_CHECK(static_cast<int64_t>(mean.size()) == out.channels && static_cast<int64_t>(stddev.size()) == out.channels,
           images_path, ": normalisation needs one mean and one std per channel (", out.channels, "), got ",
           mean.size(), " means and ", stddev.size(), " stds");

  const int64_t plane = out.height * out.width;
  out.pixels.resize(images.data.size());
  for (int64_t c = 0; c < out.channels; ++c) {
    RT_CHECK(std::isfinite(mean[c]) && std::isfinite(stddev[c]) && stddev[c] > 0, images_path, ": channel ", c,
             " has mean ", mean[c], " and std ", stddev[c], ", expected finite values with std > 0");
    std::array<float, 256> table;
    for (int v = 0; v < 256; ++v) table[v] = static_cast<float>((v / 255.0 - mean[c]) / stddev[c]);
    for (int64_t n = 0; n < out.count; ++n) {
      const int64_t base = (n * out.channels + c) * plane;
      for (int64_t i = 0; i < plane; ++i) out.pixels[base + i] = table[images.data[base + i]];
    }
  }

  out.labels.assign(labels.data.begin(), labels.data.end());
  out.num_classes = int64_t{*std::max_element(labels.data.begin(), labels.data.end())} + 1;
  return out;
}

}  // namespace rt
