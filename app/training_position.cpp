#include "app/training_position.h"

#include "base/check.h"

namespace rt {
namespace {

int64_t meta_int(const StFile& f, const char* key, const std::string& source) {
  const std::string v = f.meta(key);
  RT_CHECK(!v.empty(), source, ": metadata '", key, "' is missing");
  try {
    size_t used = 0;
    const int64_t x = std::stoll(v, &used);
    RT_CHECK(used == v.size(), source, ": metadata '", key, "' = '", v, "' is not an integer");
    return x;
  } catch (const std::logic_error&) {
    RT_CHECK(false, source, ": metadata '", key, "' = '", v, "' is not an integer");
  }
  return 0;
}

TrainingPosition position_of(const StFile& f, const std::string& source) {
  TrainingPosition pos;
  pos.epochs_done = meta_int(f, "epochs_done", source);
  pos.step = meta_int(f, "step", source);
  pos.images_seen = meta_int(f, "images_seen", source);
  pos.seed = meta_int(f, "seed", source);
  // Checkpoints from before mid-epoch saves fall on epoch ends.
  if (!f.meta("epoch_positions").empty()) pos.epoch_positions = meta_int(f, "epoch_positions", source);
  return pos;
}

}  // namespace

TrainingPosition read_training_position(const std::string& path) {
  return position_of(read_safetensors_metadata(path), path);
}

void SavedPosition::save(StFile& into) {
  for (auto [key, value] : {std::pair{"epochs_done", now.epochs_done}, std::pair{"step", now.step},
                            std::pair{"images_seen", now.images_seen}, std::pair{"seed", now.seed},
                            std::pair{"epoch_positions", now.epoch_positions}})
    into.metadata.emplace_back(key, std::to_string(value));
}

void SavedPosition::load(const StFile& from, const std::string& source) { resumed = position_of(from, source); }

}  // namespace rt
