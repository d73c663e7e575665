#include "app/run/tuned_buckets.h"

#include "base/check.h"

namespace rt {

void TunedBuckets::record(int64_t step, const BucketCaps& caps, bool settled) {
  if (trials_.empty() || trials_.back().caps != caps || settled) {
    if (!trials_.empty() && trials_.back().from_step == step) trials_.pop_back();  // replaced before use
    trials_.push_back({step, caps});
  }
  if (settled) settled_ = caps;
}

void TunedBuckets::save(StFile& into) {
  if (settled_) into.metadata.emplace_back("tuned_buckets", settled_->text());
  if (!trials_.empty()) into.metadata.emplace_back("bucket_trials", autotune_trials_text(trials_));
}

void TunedBuckets::load(const StFile& from, const std::string& source) {
  if (const std::string s = from.meta("tuned_buckets"); !s.empty())
    settled_ = BucketCaps::parse(s, str_cat(source, ": metadata 'tuned_buckets'"));
  if (const std::string s = from.meta("bucket_trials"); !s.empty()) {
    try {
      trials_ = parse_autotune_trials(s);
    } catch (const Error& e) {
      RT_CHECK(false, source, ": metadata 'bucket_trials': ", e.what());
    }
  }
}

}  // namespace rt
