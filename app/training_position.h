// Where training stands: what each step moves and what a resume at any world size continues from
// (Note [Resuming inside an epoch] in data/sampler.h). All randomness in ringtrain is a pure
// function of (seed, epoch, step, sample), so the generator state is the seed and the position.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "app/saved_state.h"

namespace rt {

struct TrainingPosition {
  int64_t epochs_done = 0;  // complete epochs
  int64_t step = 0;         // optimizer steps taken
  int64_t images_seen = 0;  // global images consumed (what a different world size resumes from)
  int64_t seed = 0;
  // Inside epoch `epochs_done` (0 at its start): positions of its permutation trained on.
  int64_t epoch_positions = 0;
};

// The position a checkpoint file was saved at (its metadata only).
TrainingPosition read_training_position(const std::string& path);

// The position as a part of the checkpoint (Note [Saved parts]): saves `now`; loads into
// `resumed`, which the engine then continues from.
struct SavedPosition final : public SavedPart {
  TrainingPosition now;
  std::optional<TrainingPosition> resumed;  // as the checkpoint a resume loaded said
  void save(StFile& into) override;
  void load(const StFile& from, const std::string& source) override;
};

}  // namespace rt
