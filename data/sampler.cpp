// EpochSampler: Fisher-Yates over rt::Rng, then the slicing described in Note [Sampler layout].
#include "data/sampler.h"

#include <algorithm>
#include <numeric>
#include <utility>

#include "base/check.h"
#include "base/rng.h"

namespace rt {

EpochSampler::EpochSampler(int64_t num_samples, int64_t batch_per_rank, uint64_t seed, int rank, int world,
                           TailPolicy tail, bool shuffle)
    : num_samples_(num_samples),
      batch_per_rank_(batch_per_rank),
      seed_(seed),
      rank_(rank),
      world_(world),
      tail_(tail),
      shuffle_(shuffle) {
  RT_CHECK(num_samples >= 1, "EpochSampler: num_samples is ", num_samples, ", expected >= 1");
  RT_CHECK(batch_per_rank >= 1, "EpochSampler: batch_per_rank is ", batch_per_rank, ", expected >= 1");
  RT_CHECK(world >= 1, "EpochSampler: world is ", world, ", expected >= 1");
  RT_CHECK(rank >= 0 && rank < world, "EpochSampler: rank is ", rank, ", expected 0 <= rank < world (", world, ")");
  const int64_t global_batch = batch_per_rank * world;
  if (tail == TailPolicy::kDrop) {
    RT_CHECK(num_samples >= global_batch, "EpochSampler: ", num_samples,
             " samples are fewer than one global batch (world ", world, " x batch_per_rank ", batch_per_rank, " = ",
             global_batch, "), so dropping the tail leaves nothing; use a smaller batch or tail padding");
    steps_ = num_samples / global_batch;
  } else {
    steps_ = (num_samples + global_batch - 1) / global_batch;
  }
}

std::vector<int64_t> EpochSampler::permutation(int64_t epoch) const {
  RT_CHECK(epoch >= 0, "EpochSampler: epoch is ", epoch, ", expected >= 0");
  std::vector<int64_t> order(num_samples_);
  std::iota(order.begin(), order.end(), int64_t{0});
  if (!shuffle_) return order;
  Rng rng(seed_, kShuffleStreamBase + static_cast<uint64_t>(epoch));
  for (int64_t i = num_samples_ - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(rng.below(static_cast<uint64_t>(i) + 1));
    std::swap(order[i], order[j]);
  }
  return order;
}

int64_t EpochSampler::steps_from(int64_t first_position) const {
  RT_CHECK(first_position >= 0, "EpochSampler: first position is ", first_position, ", expected >= 0");
  const int64_t left = std::max<int64_t>(0, num_samples_ - first_position);
  const int64_t global_batch = batch_per_rank_ * world_;
  return tail_ == TailPolicy::kDrop ? left / global_batch : (left + global_batch - 1) / global_batch;
}

std::vector<int64_t> EpochSampler::epoch_indices(int64_t epoch, int64_t first_position) const {
  const std::vector<int64_t> order = permutation(epoch);
  const int64_t global_batch = batch_per_rank_ * world_;
  const int64_t steps = steps_from(first_position);
  std::vector<int64_t> mine;
  mine.reserve(steps * batch_per_rank_);
  for (int64_t s = 0; s < steps; ++s) {
    const int64_t begin = first_position + s * global_batch + rank_ * batch_per_rank_;
    for (int64_t p = begin; p < begin + batch_per_rank_; ++p) mine.push_back(order[p % num_samples_]);
  }
  return mine;
}

std::vector<int64_t> EpochSampler::eval_indices() const {
  const int64_t base = num_samples_ / world_, extra = num_samples_ % world_;
  const int64_t begin = rank_ * base + std::min<int64_t>(rank_, extra);
  const int64_t size = base + (rank_ < extra ? 1 : 0);
  std::vector<int64_t> mine(size);
  std::iota(mine.begin(), mine.end(), begin);
  return mine;
}

}  // namespace rt
