// A warning from this rank on stderr, named by its rank and host: what the trainer's parts say when
// one rank meets something the others may not (a skipped file, a slow peer).
#pragma once

#include <functional>
#include <string>

#include "base/check.h"
#include "base/stderr_line.h"
#include "dist/world.h"

namespace rt {

inline std::function<void(const std::string&)> rank_warning(const World& world) {
  return [&world](const std::string& m) { stderr_line(str_cat(world.tag(), "ringtrain: warning: ", m)); };
}

}  // namespace rt
