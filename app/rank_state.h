// Note [Rank state]: what differs between ranks and must survive a resume, so far PowerSGD's
// errors and carried Q's (Note [PowerSGD buckets] in dist/powersgd_buckets.h), lies beside each
// checkpoint in one file per rank, checkpoint-<N>.rank<R>-of-<P>.safetensors. Every rank writes its
// own before rank 0 writes the checkpoint, so a published checkpoint has all of them, and
// publish_checkpoint removes them with it. A resume loads them only where every rank finds its
// own at the same rank count (the Q's must be the same on every rank); otherwise every rank starts
// afresh and rank 0 says why.
#pragma once

#include <string>
#include <vector>

#include "app/saved_state.h"
#include "app/training_position.h"
#include "dist/powersgd_buckets.h"
#include "formats/safetensors.h"

namespace rt {

// checkpoint-<N>.safetensors -> checkpoint-<N>.rank<rank>-of-<ranks>.safetensors, beside it.
std::string rank_state_path(const std::string& checkpoint, int rank, int ranks);

// "powersgd.error.<name>" and "powersgd.q.<name>" of each compressed tensor, `names` the
// parameters' in arena order.
StFile powersgd_state(PowerSgdBuckets& compression, const std::vector<std::string>& names);
// Reads them back from `file` (called `source` in messages), each checked for its shape (Q as k x m: its columns).
void load_powersgd_state(PowerSgdBuckets& compression, const std::vector<std::string>& names, const StFile& file,
                         const std::string& source);

// PowerSGD's errors and Q's as a per-rank part of the checkpoint (Note [Saved parts] in
// app/saved_state.h). `resumed`: the position a resume loaded, to say whether compressed steps
// were made before the state that starts afresh.
class SavedPowerSgd final : public SavedPart {
 public:
  SavedPowerSgd(PowerSgdBuckets& compression, std::vector<std::string> names, int64_t start_step,
                const std::optional<TrainingPosition>& resumed)
      : compression_(compression), names_(std::move(names)), start_step_(start_step), resumed_(resumed) {}
  void save(StFile& into) override;
  void load(const StFile& from, const std::string& source) override;
  std::string afresh(int64_t missing, int ranks, const std::string& example) override;

 private:
  PowerSgdBuckets& compression_;
  std::vector<std::string> names_;
  int64_t start_step_;
  const std::optional<TrainingPosition>& resumed_;
};

}  // namespace rt
