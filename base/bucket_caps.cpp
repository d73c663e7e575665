#include "base/bucket_caps.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "base/check.h"

namespace rt {

std::string BucketCaps::text() const {
  char out[64];
  std::snprintf(out, sizeof out, "%.17g/%.17g", bucket_mb, first_bucket_mb);
  return out;
}

BucketCaps BucketCaps::parse(const std::string& text, const std::string& source) {
  BucketCaps caps;
  const char* p = text.c_str();
  char* end = nullptr;
  caps.bucket_mb = std::strtod(p, &end);
  bool ok = end != p && *end == '/';
  if (ok) {
    const char* q = end + 1;
    caps.first_bucket_mb = std::strtod(q, &end);
    ok = end != q && *end == '\0';
  }
  RT_CHECK(ok && std::isfinite(caps.bucket_mb) && caps.bucket_mb >= 0 && std::isfinite(caps.first_bucket_mb) &&
               caps.first_bucket_mb > 0,
           source, ": '", text, "' is not BUCKET_MB/FIRST_BUCKET_MB (as 25/1: a number >= 0, then one > 0)");
  return caps;
}

std::string autotune_trials_text(const std::vector<BucketTrial>& trials) {
  std::string out;
  for (const BucketTrial& t : trials) out += str_cat(out.empty() ? "" : " ", t.from_step, ":", t.caps.text());
  return out;
}

std::vector<BucketTrial> parse_autotune_trials(const std::string& text) {
  std::vector<BucketTrial> trials;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const size_t colon = item.find(':');
    const std::string source = str_cat("dist.autotune_trials entry '", item, "'");
    RT_CHECK(colon != std::string::npos && colon > 0, source, ": expected STEP:BUCKET_MB/FIRST_BUCKET_MB");
    BucketTrial t;
    size_t used = 0;
    try {
      t.from_step = std::stoll(item.substr(0, colon), &used);
    } catch (const std::exception&) {
      used = 0;
    }
    RT_CHECK(used == colon && t.from_step >= 0, source, ": the step before ':' is not an integer >= 0");
    RT_CHECK(trials.empty() || t.from_step > trials.back().from_step, source,
             ": steps must increase from entry to entry");
    t.caps = BucketCaps::parse(item.substr(colon + 1), source);
    trials.push_back(t);
  }
  RT_CHECK(!trials.empty(),
           "dist.autotune_trials is empty: expected \"STEP:BUCKET_MB/FIRST_BUCKET_MB ...\", as a "
           "tuned run's tuned.toml writes it");
  return trials;
}

}  // namespace rt
