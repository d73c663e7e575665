// The compute profile of one training step, as `ringtrain bench --profile FILE` measures it and
// `ringtrain simulate --profile FILE` reads it: forward (with the loss), each layer's backward and
// the optimizer, in seconds per step, for one model at one batch on the machine at hand. A text
// file of "key value" lines ('#' starts a comment):
//   model resnet101
//   batch_per_rank 8
//   forward_s 0.412
//   optimizer_s 0.031
//   layer conv1 0.0123          (one line per layer, in the model's forward order)
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace rt {

struct StepProfile {
  std::string model;
  int64_t batch_per_rank = 0;
  double forward_s = 0, optimizer_s = 0;
  std::vector<std::pair<std::string, double>> layers;  // (name, backward seconds), forward order
  double step_s() const;                               // all of it: one rank's step
};

// `comment` becomes the first line, after "# ". Written atomically.
void write_step_profile(const std::string& path, const StepProfile& profile, const std::string& comment);
// rt::Error naming the file and line for anything malformed.
StepProfile read_step_profile(const std::string& path);

}  // namespace rt
