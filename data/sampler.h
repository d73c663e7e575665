// EpochSampler: which sample indices each rank trains on, step by step, in each epoch.
// The order depends only on (seed, epoch, num_samples, shuffle), never on rank, thread count or
// platform, so every rank computes the same permutation and takes its own part without
// communicating. Every rank gets exactly steps_per_epoch() * batch_per_rank indices.
// See Note [Sampler layout] for which positions of the permutation each rank takes.
#pragma once

#include <cstdint>
#include <vector>

#include "base/run_settings.h"  // TailPolicy

namespace rt {

// What to do with the samples left over after the last full global batch.
//   kDrop: leave them out (a different random subset each epoch when shuffling);
//   kPad:  fill the last global batch by wrapping around to the start of the permutation, so
//          every sample is seen at least once and a few twice.

// Note [Sampler layout]
// The global batch is G = world * batch_per_rank. Global step s covers permutation positions
// [s*G, (s+1)*G); rank r takes the contiguous sub-block [s*G + r*B, s*G + (r+1)*B) of it
// (B = batch_per_rank). Hence what `world` ranks see at step s, concatenated in rank order, is
// exactly what one rank with batch G sees at step s: the data-parallel invariant
// "N ranks x batch B == 1 rank x batch N*B" holds sample for sample. With kPad, position p >= N
// reads permutation[p % N].
class EpochSampler {
 public:
  // Throws rt::Error unless num_samples >= 1, batch_per_rank >= 1, world >= 1, 0 <= rank < world,
  // and (for kDrop) num_samples >= world * batch_per_rank.
  EpochSampler(int64_t num_samples, int64_t batch_per_rank, uint64_t seed, int rank = 0, int world = 1,
               TailPolicy tail = TailPolicy::kDrop, bool shuffle = true);

  // The same on every rank: kDrop floor(N / G), kPad ceil(N / G).
  int64_t steps_per_epoch() const { return steps_; }

  // The whole epoch's order before sharding: a permutation of 0..N-1 (identity when shuffle is
  // off), Fisher-Yates driven by rt::Rng(seed, kShuffleStreamBase + epoch). epoch >= 0.
  std::vector<int64_t> permutation(int64_t epoch) const;

  // This rank's indices in step order, length steps_per_epoch() * batch_per_rank(); step s is
  // [s * batch_per_rank, (s + 1) * batch_per_rank). epoch >= 0.
  std::vector<int64_t> epoch_indices(int64_t epoch) const { return epoch_indices(epoch, 0); }

  // Note [Resuming inside an epoch]: a run stopped after `first_position` positions of the
  // epoch's permutation goes on from there, its global steps laid out as in Note [Sampler
  // layout] but starting at that position. At the world size that stopped, first_position is a
  // multiple of the global batch and the steps are exactly the uninterrupted epoch's remaining
  // ones; at another, the remaining samples are shared among the new ranks, the tail policy
  // applied to what is left.
  int64_t steps_from(int64_t first_position) const;
  std::vector<int64_t> epoch_indices(int64_t epoch, int64_t first_position) const;

  // For evaluation: this rank's contiguous slice of 0..N-1 in order, ignoring shuffle, tail and
  // batch. Slices partition 0..N-1 exactly; their sizes differ by at most one (ranks r < N % world
  // get the larger size; a rank gets none when N < world). Callers sum counts across ranks.
  std::vector<int64_t> eval_indices() const;

  int64_t num_samples() const { return num_samples_; }
  int64_t batch_per_rank() const { return batch_per_rank_; }
  int rank() const { return rank_; }
  int world() const { return world_; }

  // Offset of the rt::Rng stream the shuffle uses, away from small stream numbers other code uses.
  static constexpr uint64_t kShuffleStreamBase = 0x53485546464C4500ull;  // "SHUFFLE\0"

 private:
  int64_t num_samples_, batch_per_rank_;
  uint64_t seed_;
  int rank_, world_;
  TailPolicy tail_;
  bool shuffle_;
  int64_t steps_ = 0;
};

}  // namespace rt
