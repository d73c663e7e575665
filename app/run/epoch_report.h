// What the end of an epoch reports: the line rank 0 prints and the record metrics.jsonl gets,
// from figures already summed over ranks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "formats/json.h"
#include "nn/optim/loss_scale.h"

namespace rt {

struct EpochReport {
  int64_t epoch = 0, epochs = 0;  // epoch counts from 1
  int64_t step = 0;               // steps done after it
  double train_loss = 0, train_top1 = 0;
  double data_wait = 0;                // share of step time spent waiting for a batch, mean over ranks
  int64_t skipped_files = 0;           // unreadable files skipped, all ranks
  double train_seconds = 0;            // the epoch until its evaluation (the record's epoch_seconds)
  double seconds = 0;                  // the epoch with its evaluation (the line's)
  std::optional<LossScaleState> fp16;  // fp16's loss scaling
  struct Test {
    double loss = 0, top1 = 0, top5 = 0;
  };
  std::optional<Test> test;  // where the epoch ended with an evaluation

  // "epoch 2/5: train loss 0.4123 top-1 85.20%, data wait 1.2% | test loss ... (12.3 s)\n"
  std::string line() const;
  Json record() const;
};

}  // namespace rt
