// The run's wall clock over every part of it that a resume continued (Note [Stopping at a target]
// in app/run/run_target.h): what time to a target counts. A part of the checkpoint (Note [Saved parts]
// in app/saved_state.h): the seconds so far, as the metadata 'run_seconds'.
#pragma once

#include <chrono>
#include <string>

#include "app/saved_state.h"

namespace rt {

class RunClock final : public SavedPart {
 public:
  // Seconds since the run first started training, the parts before this one included.
  double seconds() const {
    return seconds_before_ + std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
  }
  void save(StFile& into) override;
  void load(const StFile& from, const std::string& source) override;  // absent: from zero (older checkpoints)

 private:
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();  // this part's start
  double seconds_before_ = 0;
};

}  // namespace rt
