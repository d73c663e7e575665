// What rank 0 prints as training starts: the model and data, the world and its threads, the batch
// and rate, the optimizer, and how gradients are averaged.
#pragma once

#include <string>

#include "app/thread_split.h"
#include "app/trainer.h"

namespace rt {

// To t.out(); `gpu_how`: which GPU rank 0 took, and why (CUDA).
void print_start(Trainer& t, const ThreadSplit& split, const std::string& gpu_how);

}  // namespace rt
