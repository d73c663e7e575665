#include "app/run/epoch_sums.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "base/check.h"

namespace rt {

void SavedEpochSums::save(StFile& into) {
  std::string text;
  for (int i = 0; i < EpochSums::kCount; ++i) {
    char v[32];
    std::snprintf(v, sizeof v, "%.17g", value.data()[i]);  // reads back to the same double
    if (i > 0) text += ' ';
    text += v;
  }
  into.metadata.emplace_back("epoch_sums", text);
}

void SavedEpochSums::load(const StFile& from, const std::string& source) {
  const std::string text = from.meta("epoch_sums");
  value = EpochSums{};
  if (text.empty()) return;
  const char* p = text.c_str();
  for (int i = 0; i < EpochSums::kCount; ++i) {
    char* end = nullptr;
    value.data()[i] = std::strtod(p, &end);
    RT_CHECK(end != p && std::isfinite(value.data()[i]), source, ": metadata 'epoch_sums' = '", text, "' is not ",
             EpochSums::kCount, " numbers");
    p = end;
  }
  RT_CHECK(*p == '\0', source, ": metadata 'epoch_sums' = '", text, "' has more than ", EpochSums::kCount, " numbers");
}

}  // namespace rt
