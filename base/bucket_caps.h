// dist.bucket_mb and dist.first_bucket_mb as one value, and the text form the online tuner writes
// them in (checkpoints, tuned.toml's dist.autotune_trials; Note [Online bucket tuning] in
// app/run/bucket_tuner.h).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace rt {

struct BucketCaps {
  double bucket_mb = 25;
  double first_bucket_mb = 1;
  bool operator==(const BucketCaps&) const = default;
  // "25/1", each number as it reads back to the same double.
  std::string text() const;
  // The same text back; an rt::Error naming `source` otherwise.
  static BucketCaps parse(const std::string& text, const std::string& source);
};

// The caps in force from optimizer step `from_step` on.
struct BucketTrial {
  int64_t from_step = 0;
  BucketCaps caps;
  bool operator==(const BucketTrial&) const = default;
};

// "0:25/1 9:4/1 ...": steps strictly increasing, the last entry the settled choice.
std::string autotune_trials_text(const std::vector<BucketTrial>& trials);
std::vector<BucketTrial> parse_autotune_trials(const std::string& text);

}  // namespace rt
