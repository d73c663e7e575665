// The image-folder settings of a config (the [data] table) as the data layer takes them: what
// the trainer's folder batches and `ringtrain predict` both use, so the two cannot drift apart.
#pragma once

#include <string>

#include "config/config.h"
#include "data/image_sample.h"

namespace rt {

// Crop side from data.image_size (0: the model's usual input), the evaluation resize from
// data.resize_size (0: crop x 256 / 224, so 224 -> 256 and 299 -> 342), crop ranges, flip,
// channels, mean and std.
ImageSampleOptions image_sample_options(const DataConfig& d, const std::string& model);

}  // namespace rt
