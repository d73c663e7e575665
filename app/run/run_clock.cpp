#include "app/run/run_clock.h"

#include <cmath>
#include <cstdlib>

#include "base/check.h"

namespace rt {

void RunClock::save(StFile& into) { into.metadata.emplace_back("run_seconds", str_cat(seconds())); }

void RunClock::load(const StFile& from, const std::string& source) {
  const std::string s = from.meta("run_seconds");
  if (s.empty()) return;
  char* end = nullptr;
  seconds_before_ = std::strtod(s.c_str(), &end);
  RT_CHECK(*end == '\0' && seconds_before_ >= 0 && std::isfinite(seconds_before_), source,
           ": metadata 'run_seconds' = '", s, "' is not a finite number >= 0");
}

}  // namespace rt
