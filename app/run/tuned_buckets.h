// What the online tuner put in force (Note [Online bucket tuning] in app/run/bucket_tuner.h), as a
// part of the checkpoint (Note [Saved parts] in app/saved_state.h): the caps from each step on,
// over every part of the run so far (the metadata 'bucket_trials', a tuned.toml's
// dist.autotune_trials, which a run stopped while tuning carries into its resume), and the caps it
// settled on ('tuned_buckets'), which a resumed run keeps.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "app/saved_state.h"
#include "base/bucket_caps.h"

namespace rt {

class TunedBuckets final : public SavedPart {
 public:
  // `caps` are in force from `step` on; `settled`: the tuner's last word.
  void record(int64_t step, const BucketCaps& caps, bool settled);
  const std::vector<BucketTrial>& trials() const { return trials_; }
  const std::optional<BucketCaps>& settled() const { return settled_; }
  void forget_settled() { settled_.reset(); }  // its caps do not apply to this run

  void save(StFile& into) override;
  void load(const StFile& from, const std::string& source) override;

 private:
  std::vector<BucketTrial> trials_;
  std::optional<BucketCaps> settled_;
};

}  // namespace rt
