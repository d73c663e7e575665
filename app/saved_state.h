// Note [Saved parts]: a checkpoint is composed of parts. Each stateful part saves and loads itself
// under names of its own and registers once, with a name, here; the writer and the reader below
// know no part's keys. The engine registers the model, the optimizer, the position, loss scaling
// and a compression's per-rank state; the run registers its tallies, its clock and its tuning
// (app/run/training_run.cpp). The shape is Caffe's Solver::Snapshot, which writes the net and then
// calls each solver's own SnapshotSolverState, and PyTorch's, where the script composes the
// state_dict()s and a communication hook's state is saved beside them.
//
// A shared part is saved by rank 0 into the checkpoint (the model's tensors, the position's
// metadata); a per-rank part by every rank into its own file beside it (Note [Rank state] in
// app/rank_state.h). The files are today's: a part writes the keys it always wrote, so every
// checkpoint still resumes.
//
// A shared part registered after the resume (the run's parts: the run is made after the Trainer
// resumed) is loaded as it registers, from the resumed checkpoint's metadata: such a part keeps
// its state in metadata. Parts with tensors, and per-rank parts, register before the resume.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "dist/world.h"
#include "formats/safetensors.h"

namespace rt {

enum class PartScope { kShared, kPerRank };

class SavedPart {
 public:
  virtual ~SavedPart() = default;
  // Adds this part's tensors and metadata to `into`.
  virtual void save(StFile& into) = 0;
  // Restores them from `from`, called `source` in messages.
  virtual void load(const StFile& from, const std::string& source) = 0;
  // Per-rank parts: `missing` of `ranks` ranks found no file of their own at the resume (saved at
  // another rank count, or without this part), like `example`, so every rank starts afresh. What
  // rank 0 says of it; "" for nothing.
  virtual std::string afresh(int64_t /*missing*/, int /*ranks*/, const std::string& /*example*/) { return ""; }
};

// A part made of two functions, for state that is a few values of its owner.
class FunctionPart final : public SavedPart {
 public:
  FunctionPart(std::function<void(StFile&)> save, std::function<void(const StFile&, const std::string&)> load)
      : save_(std::move(save)), load_(std::move(load)) {}
  void save(StFile& into) override { save_(into); }
  void load(const StFile& from, const std::string& source) override { load_(from, source); }

 private:
  std::function<void(StFile&)> save_;
  std::function<void(const StFile&, const std::string&)> load_;
};

class SavedState {
 public:
  // Removes its part when it goes (a part whose owner is shorter-lived than the Trainer).
  class Registration {
   public:
    Registration(SavedState* state, std::string name) : state_(state), name_(std::move(name)) {}
    Registration(Registration&& o) noexcept : state_(o.state_), name_(std::move(o.name_)) { o.state_ = nullptr; }
    Registration& operator=(Registration&&) = delete;
    ~Registration();

   private:
    SavedState* state_;
    std::string name_;
  };

  explicit SavedState(const World& world) : world_(world) {}
  // Registers `part` (kept by its owner) under `name`, for the SavedState's life; a name is taken
  // once. Shared parts are saved and loaded in the order they were added.
  void add(const std::string& name, PartScope scope, SavedPart& part);
  void add(const std::string& name, PartScope scope, std::unique_ptr<SavedPart> part);  // kept here
  // The same, until the Registration goes; loaded at once where a resume came first.
  [[nodiscard]] Registration add_for_now(const std::string& name, SavedPart& part);

  // Writes DIR's checkpoint after `images_seen` images (Note [Checkpoint files]): every rank's own
  // file first, where a per-rank part is registered, so that a published checkpoint has all of
  // them; then rank 0's, published and pruned to `keep`; then every rank waits for it (a rank that
  // stopped on a signal and exited first could make the launcher end rank 0 mid-write). Every rank
  // calls it; `what` names the save in a stalled collective's message. Rank 0 returns the path.
  std::string write(const std::string& dir, int64_t images_seen, int64_t keep, const std::string& what,
                    const StallPolicy& between_steps) const;
  // The newest checkpoint in DIR, the same one on every rank, its shared parts loaded in order.
  // Returns its path. Every rank calls it.
  std::string resume(const std::string& dir);
  // Then the per-rank parts from each rank's file beside `checkpoint`, where every rank has its
  // own; otherwise each starts afresh and rank 0 writes why to `out`. Every rank calls it.
  void resume_per_rank(const std::string& checkpoint, std::ostream& out);

 private:
  struct Entry {
    std::string name;
    PartScope scope;
    SavedPart* part;
    std::unique_ptr<SavedPart> kept;  // where the registry keeps the part
  };
  void insert(Entry entry);
  StFile compose(PartScope scope, StFile file) const;
  void remove(const std::string& name);
  bool has(PartScope scope) const;

  const World& world_;
  std::vector<Entry> parts_;
  std::optional<StFile> resumed_;  // the resumed checkpoint's metadata, for parts added after it
  std::string resumed_path_;
};

}  // namespace rt
