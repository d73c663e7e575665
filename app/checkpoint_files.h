// Note [Checkpoint files]: every save is a new file DIR/checkpoint-<N>.safetensors, N the
// training images seen so far (zero-padded), which orders saves at any world size where the step
// count does not. Each is written atomically (formats/atomic_file.h), so a file under that name
// is complete. After each save DIR/checkpoint.safetensors, a symbolic link, is pointed at the new
// file (also atomically), and only then are files beyond checkpoint.keep removed, oldest first.
// A resume takes the newest by N; a folder from before numbered files holds only the plain name.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rt {

inline constexpr const char* kCheckpointFile = "checkpoint.safetensors";  // the link to the newest

// DIR/checkpoint-<images_seen>.safetensors.
std::string numbered_checkpoint_path(const std::string& dir, int64_t images_seen);
// The numbered checkpoints in dir, oldest first (files whose name is exactly the pattern).
std::vector<std::string> numbered_checkpoints(const std::string& dir);
// The newest complete checkpoint in dir; "" when there is none.
std::string newest_checkpoint(const std::string& dir);
// After `saved` (a numbered path) is complete: DIR/checkpoint.safetensors points at it, the
// newest `keep` numbered files stay (keep 0: all) and the rest go, with temporary files of
// saves that never finished.
void publish_checkpoint(const std::string& dir, const std::string& saved, int64_t keep);

}  // namespace rt
