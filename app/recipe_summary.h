// The optimizer and the learning-rate schedule a config asks for, in words: `ringtrain info
// --config` prints them, so that a recipe (configs/large_batch/) can be read before it runs.
#pragma once

#include <string>

#include "config/config.h"

namespace rt {

// "lars (trust coefficient 0.001, epsilon 0), momentum 0.94, weight decay 5e-05 (biases and batch
// norm: neither trust ratio nor decay), 0.54 per 256 images".
std::string optimizer_summary(const TrainConfig& train);
// "statistics over each rank's 64 images", or "statistics pooled over groups of 2 ranks
// (train.bn_group), 128 images each".
std::string batch_norm_summary(const TrainConfig& train);
// "linear warmup over 16 epochs, then poly decay (power 2) to 0 x the rate at epoch 56".
std::string schedule_summary(const ScheduleConfig& schedule, int64_t epochs);

}  // namespace rt
