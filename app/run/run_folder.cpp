#include "app/run/run_folder.h"

#include <filesystem>
#include <system_error>
#include <vector>

#include "app/checkpoint_files.h"
#include "base/check.h"
#include "formats/atomic_file.h"
#include "formats/json.h"

namespace rt {

RunFolder::RunFolder(const Config& config, const std::string& resolved_config, int rank, const TrainingPosition& start,
                     const std::optional<TrainingPosition>& resumed) {
  if (rank != 0) return;
  const std::string& dir = config.checkpoint.dir;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  RT_CHECK(!ec, "cannot create checkpoint folder '", dir, "': ", ec.message());
  const std::vector<std::string> saved = numbered_checkpoints(dir);
  if (!saved.empty()) {
    const TrainingPosition newest = read_training_position(saved.back());
    RT_CHECK(newest.images_seen <= start.images_seen, "checkpoint.dir '", dir, "' already holds ", saved.back(),
             ", saved after ", newest.images_seen, " images, later than where this run starts (", start.images_seen,
             " images): go on from it with --resume ", dir,
             " (or --auto-resume), or give this run another checkpoint.dir");
  }
  write_file_atomically((std::filesystem::path(dir) / "config.toml").string(), resolved_config);
  const TrainingPosition from = resumed ? *resumed : TrainingPosition{};
  if (!config.log.metrics.empty()) {
    metrics_path_ = (std::filesystem::path(dir) / config.log.metrics).string();
    remove_metrics_after(from);
  }
  // Steps are numbered as the run that saved counted them, like the records to drop.
  if (config.log.tensorboard) tensorboard_.emplace(dir, from.step + 1);
}

void RunFolder::write_metric(const Json& record) const {
  if (!metrics_path_.empty()) append_line(metrics_path_, to_json(record));
  if (tensorboard_) tensorboard_->write(record);
}

void RunFolder::remove_metrics_after(const TrainingPosition& from) const {
  if (!std::filesystem::exists(metrics_path_)) return;
  const std::string text = read_file(metrics_path_);
  std::string kept;
  size_t removed = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    const std::string line = text.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    bool after = false;
    try {
      const Json r = parse_json(line, metrics_path_);
      const std::string kind = r.value("kind", "");
      // Images seen order steps at any world size; the step number, of older records, at one.
      const bool step_after = r.contains("images_seen") ? r.value("images_seen", int64_t{0}) > from.images_seen
                                                        : r.value("step", int64_t{0}) > from.step;
      after = (kind == "step" && step_after) || (kind == "epoch" && r.value("epoch", int64_t{0}) > from.epochs_done);
    } catch (const Error&) {
      after = true;  // a line cut short by the crash
    }
    if (after)
      ++removed;
    else
      kept += line + "\n";
  }
  if (removed > 0) write_file_atomically(metrics_path_, kept);
}

}  // namespace rt
