#include "app/run/progress.h"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <ostream>

namespace rt {

Progress::Mode Progress::resolve(ProgressMode setting) {
  if (setting == ProgressMode::kBar) return Mode::kBar;
  if (setting == ProgressMode::kLines) return Mode::kLines;
  if (setting == ProgressMode::kNone) return Mode::kNone;
  return isatty(STDOUT_FILENO) ? Mode::kBar : Mode::kLines;
}

Progress::Progress(Mode mode, int64_t every_steps, std::ostream& out) : mode_(mode), every_(every_steps), out_(out) {}

void Progress::begin_epoch(int64_t epoch, int64_t epochs, int64_t steps) {
  epoch_ = epoch;
  epochs_ = epochs;
  steps_ = steps;
}

void Progress::step(int64_t step, double loss, double lr, double images_per_s, double eta_s) {
  char line[256];
  if (mode_ == Mode::kBar) {
    constexpr int kWidth = 28;
    const int filled = static_cast<int>(kWidth * (step + 1) / std::max<int64_t>(steps_, 1));
    std::string bar(static_cast<size_t>(filled), '#');
    bar.resize(kWidth, '.');
    std::snprintf(line, sizeof line, "\repoch %lld/%lld [%s] %lld/%lld  loss %.4f  %.0f img/s  ETA %s   ",
                  static_cast<long long>(epoch_ + 1), static_cast<long long>(epochs_), bar.c_str(),
                  static_cast<long long>(step + 1), static_cast<long long>(steps_), loss, images_per_s,
                  format_duration(eta_s).c_str());
    out_ << line << std::flush;
    open_line_ = true;
  } else if (mode_ == Mode::kLines && ((step + 1) % every_ == 0 || step + 1 == steps_)) {
    std::snprintf(line, sizeof line, "epoch %lld/%lld step %lld/%lld loss %.4f lr %.5f %.1f img/s ETA %s",
                  static_cast<long long>(epoch_ + 1), static_cast<long long>(epochs_), static_cast<long long>(step + 1),
                  static_cast<long long>(steps_), loss, lr, images_per_s, format_duration(eta_s).c_str());
    out_ << line << "\n" << std::flush;
  }
}

void Progress::end_epoch() {
  if (open_line_) out_ << "\n";
  open_line_ = false;
}

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const long long s = std::llround(seconds);
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", s / 3600, s % 3600 / 60);
  else if (s >= 60)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", s / 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%llds", s);
  return buf;
}

}  // namespace rt
