// A rank's data: synthetic images, IDX files, or a source of decoded images whose index rank 0
// alone makes and hands the others (Note [One index per job] in app/trainer_data.cpp).
#pragma once

#include <cstdint>
#include <memory>

#include "config/config.h"
#include "data/batch_source.h"
#include "data/sampler.h"
#include "dist/world.h"
#include "nn/tensor.h"

namespace rt {

struct TrainerData {
  bool synthetic = false;                    // data.source = "synthetic": no data sets, only train_step (bench)
  std::unique_ptr<BatchSource> train, test;  // null for synthetic data
  Shape input_shape;                         // one sample: (C, H, W)
};

// This rank's view of the data sets; `workers` decoding threads (ThreadSplit), `stall` how the
// index's broadcast waits. Collective where data.source decodes images.
TrainerData open_data(const Config& config, const World& world, const StallPolicy& stall, int workers);

// This rank's share of each training epoch of `count` samples: its K micro-batches a step,
// consecutive (Note [Gradient accumulation]).
EpochSampler training_sampler(const Config& config, const World& world, int64_t count);

}  // namespace rt
