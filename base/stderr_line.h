#pragma once
#include <string>

namespace rt {

// Writes text and a newline to stderr in one write(2), so that the lines of ranks that share a
// launcher's stderr never interleave mid-line (std::cerr writes each << on its own).
void stderr_line(const std::string& text);

}  // namespace rt
