// An epoch's running figures, summed over ranks where the epoch ends or saves, and the part of the
// checkpoint that carries them across a save inside an epoch (Note [Saved parts] in
// app/saved_state.h), so that the epoch's report after a resume covers all of it.
#pragma once

#include <string>

#include "app/saved_state.h"

namespace rt {

struct EpochSums {
  double loss = 0;         // batch losses, one per rank and step
  double loss_terms = 0;   // how many batch losses
  double correct1 = 0;     // top-1 hits
  double images = 0;       // training images
  double data_wait_s = 0;  // seconds ranks waited for batches
  double skipped = 0;      // unreadable files skipped
  static constexpr int kCount = 6;
  double* data() { return &loss; }  // the kCount figures, for one allreduce
  const double* data() const { return &loss; }
};
static_assert(sizeof(EpochSums) == EpochSums::kCount * sizeof(double));

// The sums over ranks at the last save inside the epoch (zero at an epoch's end), as the metadata
// 'epoch_sums': kCount numbers that read back to the same doubles.
class SavedEpochSums final : public SavedPart {
 public:
  EpochSums value{};
  void save(StFile& into) override;
  void load(const StFile& from, const std::string& source) override;  // absent: zero (saves at epoch ends only)
};

}  // namespace rt
