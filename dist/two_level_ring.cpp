#include "dist/two_level_ring.h"

#include "base/check.h"

namespace rt {

std::vector<RingPhase> TwoLevelRing::average(float* data, int64_t count, const WaitContext& context,
                                             const ShardUpdate* update) {
  const ChunkRange share = host_share(count, place_);
  std::vector<RingPhase> phases{{RingPhase::kInside, [=, this] { inside_.reduce_scatter(data, count, context); }}};
  if (!update) {
    phases.push_back({RingPhase::kAcross, [=, this] { across_.run(data + share.begin, share.count, context); }});
    phases.push_back({RingPhase::kInside, [=, this] { inside_.gather(data, count, context); }});
    return phases;
  }
  // The ring across hosts finishes part of the host's share: its offsets move by the share's
  // start, and its finish covers the whole bucket, which every rank's norms are summed over.
  const ChunkRange mine = finished_share(count, place_);
  within_ = *update;
  within_.offset = 0;
  within_.gather = update->gathered() + share.begin;
  within_.apply = [update, share, mine](int64_t begin, int64_t n) {
    RT_ASSERT(share.begin + begin >= mine.begin && share.begin + begin + n <= mine.begin + mine.count);
    update->apply_to(share.begin + begin, n);
  };
  if (update->finish) within_.finish = [update, count](int64_t, int64_t) { update->finish_for(0, count); };
  phases.push_back({RingPhase::kAcross, [=, this] { across_.run(data + share.begin, share.count, context, within_); }});
  phases.push_back({RingPhase::kInside, [=, this] { inside_.gather(update->gathered(), count, context); }});
  return phases;
}

std::vector<RingPhase> TwoLevelRing::gather_updated(float* data, int64_t count, const WaitContext& context) {
  const ChunkRange share = host_share(count, place_);
  return {{RingPhase::kAcross, [=, this] { across_.gather(data + share.begin, share.count, context); }},
          {RingPhase::kInside, [=, this] { inside_.gather(data, count, context); }}};
}

std::vector<int64_t> TwoLevelRing::shard_cuts(int64_t count) const {
  const int L = static_cast<int>(place_.local_ring.size()), H = static_cast<int>(place_.cross_ring.size());
  std::vector<int64_t> cuts;
  for (int c = 0; c < L; ++c) {
    const ChunkRange share = chunk_range(count, L, c);
    if (share.begin > 0 && share.begin < count && (cuts.empty() || cuts.back() != share.begin))
      cuts.push_back(share.begin);
    chunk_cuts(share.count, H, share.begin, cuts);
  }
  return cuts;
}

}  // namespace rt
