// Training progress for people: a one-line bar with loss, images/s and ETA redrawn in place on
// a terminal; plain periodic lines when output goes to a file or a pipe (logs stay readable).
#pragma once

#include <cstdint>
#include <iosfwd>
#include <string>

#include "base/run_settings.h"

namespace rt {

class Progress {
 public:
  enum class Mode { kBar, kLines, kNone };
  // log.progress: kAuto is the bar on a terminal, lines otherwise.
  static Mode resolve(ProgressMode setting);

  Progress(Mode mode, int64_t every_steps, std::ostream& out);
  void begin_epoch(int64_t epoch, int64_t epochs, int64_t steps);
  // step is 0-based within the epoch.
  void step(int64_t step, double loss, double lr, double images_per_s, double eta_s);
  // Ends the bar's line, if one is open.
  void end_epoch();

 private:
  Mode mode_;
  int64_t every_;
  std::ostream& out_;
  int64_t epoch_ = 0, epochs_ = 0, steps_ = 0;
  bool open_line_ = false;
};

std::string format_duration(double seconds);  // "1h02m", "3m07s", "12s"

}  // namespace rt
