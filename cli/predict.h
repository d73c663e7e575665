// ringtrain predict: the top-5 classes of each image file, with probabilities, from trained
// weights (a checkpoint or any state dict the model loads), through the evaluation transform of
// the config's [data] table: resize the shorter side, centre crop, normalise. Class names are
// the image folder's or shards' (data.source = "imagefolder" or "shards"), else "class N".
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace rt {

// Returns the report: per image, its path then up to five "rank. class probability" lines.
std::string run_predict(const Config& config, const std::string& weights_path, const std::vector<std::string>& images);

}  // namespace rt
