// Note [Saved parts] in saved_state.h: the writer and the reader, which name no part's keys.
#include "app/saved_state.h"

#include <algorithm>
#include <filesystem>
#include <limits>
#include <map>
#include <ostream>

#include "app/checkpoint_files.h"
#include "app/rank_state.h"
#include "base/check.h"

namespace rt {
namespace {

constexpr const char* kFormat = "ringtrain-checkpoint-1";

}  // namespace

SavedState::Registration::~Registration() {
  if (state_) state_->remove(name_);
}

void SavedState::insert(Entry entry) {
  const bool taken = std::any_of(parts_.begin(), parts_.end(), [&](const Entry& e) { return e.name == entry.name; });
  RT_CHECK(!taken, "a saved part named '", entry.name, "' is registered already");
  parts_.push_back(std::move(entry));
}

void SavedState::add(const std::string& name, PartScope scope, SavedPart& part) {
  RT_CHECK(!resumed_, "the saved part '", name, "' registers after the resume, which did not load it");
  insert({name, scope, &part, nullptr});
}

void SavedState::add(const std::string& name, PartScope scope, std::unique_ptr<SavedPart> part) {
  SavedPart& p = *part;
  add(name, scope, p);
  parts_.back().kept = std::move(part);
}

SavedState::Registration SavedState::add_for_now(const std::string& name, SavedPart& part) {
  // Loaded before it is listed: a part that cannot load is not left behind its owner.
  RT_CHECK(std::none_of(parts_.begin(), parts_.end(), [&](const Entry& e) { return e.name == name; }),
           "a saved part named '", name, "' is registered already");
  if (resumed_) part.load(*resumed_, resumed_path_);
  insert({name, PartScope::kShared, &part, nullptr});
  return Registration(this, name);
}

void SavedState::remove(const std::string& name) {
  parts_.erase(std::remove_if(parts_.begin(), parts_.end(), [&](const Entry& e) { return e.name == name; }),
               parts_.end());
}

bool SavedState::has(PartScope scope) const {
  return std::any_of(parts_.begin(), parts_.end(), [&](const Entry& e) { return e.scope == scope; });
}

// `file` with every part of `scope` saved into it, each checked against what the file held and what
// earlier parts wrote: two parts under one key would overwrite each other's state.
StFile SavedState::compose(PartScope scope, StFile file) const {
  std::map<std::string, std::string> owner;
  for (const auto& [key, value] : file.metadata) owner.emplace("metadata " + key, "the checkpoint writer");
  for (const Entry& e : parts_) {
    if (e.scope != scope) continue;
    const size_t tensors = file.tensors.size(), keys = file.metadata.size();
    e.part->save(file);
    const auto claim = [&](const std::string& what) {
      const auto [at, fresh] = owner.emplace(what, e.name);
      RT_CHECK(fresh, "saved parts '", at->second, "' and '", e.name, "' both save ", at->first);
    };
    for (size_t i = tensors; i < file.tensors.size(); ++i) claim("tensor " + file.tensors[i].first);
    for (size_t i = keys; i < file.metadata.size(); ++i) claim("metadata " + file.metadata[i].first);
  }
  return file;
}

std::string SavedState::write(const std::string& dir, int64_t images_seen, int64_t keep, const std::string& what,
                              const StallPolicy& between_steps) const {
  const std::string path = numbered_checkpoint_path(dir, images_seen);
  if (has(PartScope::kPerRank)) {
    write_safetensors(rank_state_path(path, world_.rank(), world_.size()), compose(PartScope::kPerRank, {}));
    double written = 1;
    world_.allreduce_sum(&written, 1, {&between_steps, what + ": every rank's own state"});
  }
  if (world_.rank() == 0) {
    StFile f;
    f.metadata.emplace_back("format", kFormat);
    write_safetensors(path, compose(PartScope::kShared, std::move(f)));
    publish_checkpoint(dir, path, keep);
  }
  // A busy file system is no fault: a slow write only warns, past dist.stall_warn_s.
  StallPolicy patient = between_steps;
  patient.abort_s = std::numeric_limits<double>::infinity();
  double written = 1;
  world_.allreduce_sum(&written, 1, {&patient, what + ": rank 0's write"});
  return world_.rank() == 0 ? path : "";
}

std::string SavedState::resume(const std::string& dir) {
  const std::string path = newest_checkpoint(dir);
  RT_CHECK(!path.empty(), "cannot resume from '", dir, "': it has no checkpoint (checkpoint-<N>.safetensors or ",
           kCheckpointFile, ")");
  // Each rank picked the newest file itself: a folder whose listing differs between hosts (a
  // stale network-file-system cache) would start the ranks at different steps.
  const std::vector<std::string> chosen = world_.allgather(path);
  for (int r = 1; r < world_.size(); ++r)
    RT_CHECK(chosen[static_cast<size_t>(r)] == chosen[0], "cannot resume from '", dir, "': rank 0 found ", chosen[0],
             " newest, rank ", r, " found ", chosen[static_cast<size_t>(r)],
             "; every rank must see the same folder (shared storage, not a copy per host)");
  const StFile f = read_safetensors(path);
  RT_CHECK(f.meta("format") == kFormat, path, ": not a ringtrain checkpoint (format '", f.meta("format"),
           "', expected '", kFormat, "')");
  for (const Entry& e : parts_)
    if (e.scope == PartScope::kShared) e.part->load(f, path);
  resumed_ = StFile{f.metadata, {}};
  resumed_path_ = path;
  return path;
}

void SavedState::resume_per_rank(const std::string& checkpoint, std::ostream& out) {
  if (!has(PartScope::kPerRank)) return;
  const std::string path = rank_state_path(checkpoint, world_.rank(), world_.size());
  std::error_code ec;
  const bool found = std::filesystem::is_regular_file(path, ec);
  const std::vector<std::string> everywhere = world_.allgather(std::string(found ? "1" : "0"));
  const auto missing = std::count(everywhere.begin(), everywhere.end(), "0");
  if (missing == 0) {
    const StFile own = read_safetensors(path);
    for (const Entry& e : parts_)
      if (e.scope == PartScope::kPerRank) e.part->load(own, path);
    return;
  }
  const std::string example = std::filesystem::path(rank_state_path(checkpoint, 0, world_.size())).filename().string();
  for (const Entry& e : parts_)
    if (e.scope == PartScope::kPerRank)
      if (const std::string why = e.part->afresh(missing, world_.size(), example); !why.empty() && world_.rank() == 0)
        out << "ringtrain: " << why << "\n";
}

}  // namespace rt
