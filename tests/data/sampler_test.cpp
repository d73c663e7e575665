// Tests for EpochSampler: permutations, determinism, sharding across simulated ranks in one
// process, and the evaluation partition. Expectations come from set properties (disjoint, equal
// length, covering) and from an independent Python re-implementation of the shuffle.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <numeric>
#include <set>
#include <string>
#include <vector>

#include "base/check.h"
#include "data/sampler.h"

namespace rt {
namespace {

const std::vector<int64_t> kAwkwardSizes = {1, 2, 3, 7, 10, 11, 64, 97, 100, 1000, 1001};

std::vector<int64_t> sorted(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v;
}

std::vector<int64_t> iota_vector(int64_t n, int64_t first = 0) {
  std::vector<int64_t> v(n);
  std::iota(v.begin(), v.end(), first);
  return v;
}

void expect_error_containing(const std::function<void()>& fn, const std::string& phrase) {
  try {
    fn();
    ADD_FAILURE() << "expected rt::Error containing \"" << phrase << "\"";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(phrase), std::string::npos) << e.what();
  }
}

TEST(EpochSampler, PermutationContainsEverySampleExactlyOnce) {
  for (int64_t n : kAwkwardSizes) {
    const EpochSampler sampler(n, 1, 1234);
    for (int64_t epoch : {0, 1, 5}) {
      EXPECT_EQ(sorted(sampler.permutation(epoch)), iota_vector(n)) << "n=" << n << " epoch=" << epoch;
    }
  }
}

TEST(EpochSampler, SameSeedAndEpochGiveTheSameOrderInSeparateSamplers) {
  const EpochSampler a(1000, 8, 99, 0, 2), b(1000, 8, 99, 1, 2, TailPolicy::kPad);
  for (int64_t epoch : {0, 3, 17}) EXPECT_EQ(a.permutation(epoch), b.permutation(epoch));
  EXPECT_EQ(a.epoch_indices(4), EpochSampler(1000, 8, 99, 0, 2).epoch_indices(4));
}

TEST(EpochSampler, DifferentEpochsOrSeedsGiveDifferentOrders) {
  const EpochSampler a(1000, 8, 99), b(1000, 8, 100);
  EXPECT_NE(a.permutation(0), a.permutation(1));
  EXPECT_NE(a.permutation(1), a.permutation(2));
  EXPECT_NE(a.permutation(0), b.permutation(0));
  EXPECT_NE(a.permutation(0), iota_vector(1000));
}

TEST(EpochSampler, OrderMatchesAnIndependentPythonImplementation) {
  // Python: rt::hash3 and Rng::below transcribed with 64-bit masks, stream 0x53485546464C4500 +
  // epoch, Fisher-Yates "for i in range(n-1, 0, -1): j = below(i+1); swap(p[i], p[j])".
  // Pins the shuffle so that resumed runs and other platforms see the same order.
  EXPECT_EQ(EpochSampler(10, 1, 42).permutation(0), (std::vector<int64_t>{3, 2, 8, 1, 6, 7, 4, 0, 5, 9}));
  EXPECT_EQ(EpochSampler(10, 1, 42).permutation(1), (std::vector<int64_t>{9, 8, 3, 2, 5, 7, 4, 1, 6, 0}));
  EXPECT_EQ(EpochSampler(10, 1, 7).permutation(3), (std::vector<int64_t>{1, 6, 4, 5, 3, 8, 7, 9, 0, 2}));
}

TEST(EpochSampler, ShuffleOffGivesTheIdentityOrder) {
  const EpochSampler sampler(10, 5, 42, 0, 1, TailPolicy::kDrop, /*shuffle=*/false);
  EXPECT_EQ(sampler.permutation(3), iota_vector(10));
  EXPECT_EQ(sampler.epoch_indices(3), iota_vector(10));
}

TEST(EpochSampler, DropShardsAreDisjointEqualLengthAndWithinRange) {
  for (int world = 1; world <= 5; ++world) {
    for (int64_t batch : {1, 2, 3, 7}) {
      for (int64_t n : kAwkwardSizes) {
        if (n < world * batch) continue;
        std::set<int64_t> seen;
        const int64_t steps = EpochSampler(n, batch, 5, 0, world).steps_per_epoch();
        EXPECT_EQ(steps, n / (world * batch));  // the full global batches that fit
        for (int rank = 0; rank < world; ++rank) {
          const EpochSampler sampler(n, batch, 5, rank, world, TailPolicy::kDrop);
          EXPECT_EQ(sampler.steps_per_epoch(), steps);
          const std::vector<int64_t> mine = sampler.epoch_indices(2);
          ASSERT_EQ(static_cast<int64_t>(mine.size()), steps * batch);
          for (int64_t i : mine) {
            EXPECT_TRUE(i >= 0 && i < n) << i;
            EXPECT_TRUE(seen.insert(i).second)
                << "index " << i << " seen twice; world=" << world << " batch=" << batch << " n=" << n;
          }
        }
        EXPECT_EQ(static_cast<int64_t>(seen.size()), steps * batch * world);
      }
    }
  }
}

TEST(EpochSampler, PadShardsAreEqualLengthAndCoverEverySample) {
  for (int world = 1; world <= 5; ++world) {
    for (int64_t batch : {1, 2, 3, 7}) {
      for (int64_t n : kAwkwardSizes) {
        const int64_t global = world * batch;
        const int64_t steps = (n + global - 1) / global;
        std::set<int64_t> seen;
        for (int rank = 0; rank < world; ++rank) {
          const EpochSampler sampler(n, batch, 5, rank, world, TailPolicy::kPad);
          EXPECT_EQ(sampler.steps_per_epoch(), steps);
          const std::vector<int64_t> mine = sampler.epoch_indices(1);
          ASSERT_EQ(static_cast<int64_t>(mine.size()), steps * batch);
          for (int64_t i : mine) {
            EXPECT_TRUE(i >= 0 && i < n) << i;
            seen.insert(i);
          }
        }
        EXPECT_EQ(static_cast<int64_t>(seen.size()), n) << "world=" << world << " batch=" << batch << " n=" << n;
      }
    }
  }
}

TEST(EpochSampler, PadWithoutShuffleCoversEachSampleOnceBeforeWrapping) {
  // 10 samples, 3 ranks x batch 2 = 6 per step, 2 steps = 12 positions: 0..9 then 0, 1.
  std::vector<int64_t> by_position;
  for (int step = 0; step < 2; ++step) {
    for (int rank = 0; rank < 3; ++rank) {
      const EpochSampler sampler(10, 2, 0, rank, 3, TailPolicy::kPad, /*shuffle=*/false);
      const std::vector<int64_t> mine = sampler.epoch_indices(0);
      by_position.insert(by_position.end(), mine.begin() + step * 2, mine.begin() + step * 2 + 2);
    }
  }
  EXPECT_EQ(by_position, (std::vector<int64_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 0, 1}));
}

TEST(EpochSampler, RanksAtEachStepTogetherFormTheSingleRankGlobalBatch) {
  // Note [Sampler layout] in data/sampler.h: world ranks x batch B at step s == 1 rank x batch
  // world*B at step s.
  for (TailPolicy tail : {TailPolicy::kDrop, TailPolicy::kPad}) {
    const int world = 4;
    const int64_t batch = 3, n = 101;
    const std::vector<int64_t> single = EpochSampler(n, world * batch, 8, 0, 1, tail).epoch_indices(6);
    std::vector<std::vector<int64_t>> per_rank;
    for (int rank = 0; rank < world; ++rank) {
      per_rank.push_back(EpochSampler(n, batch, 8, rank, world, tail).epoch_indices(6));
    }
    const int64_t steps = EpochSampler(n, batch, 8, 0, world, tail).steps_per_epoch();
    std::vector<int64_t> combined;
    for (int64_t s = 0; s < steps; ++s) {
      for (int rank = 0; rank < world; ++rank) {
        combined.insert(combined.end(), per_rank[rank].begin() + s * batch, per_rank[rank].begin() + (s + 1) * batch);
      }
    }
    EXPECT_EQ(combined, single);
  }
}

// Note [Resuming inside an epoch], at the world size that stopped: the resumed shard is the
// uninterrupted shard's tail, for every step a run could stop after.
TEST(EpochSampler, ResumingAtTheSameWorldGivesTheUninterruptedRemainder) {
  for (TailPolicy tail : {TailPolicy::kDrop, TailPolicy::kPad})
    for (int rank = 0; rank < 3; ++rank) {
      const EpochSampler sampler(101, 4, 5, rank, 3, tail);
      const std::vector<int64_t> whole = sampler.epoch_indices(2);
      for (int64_t done = 0; done <= sampler.steps_per_epoch(); ++done) {
        const int64_t first = done * 4 * 3;
        ASSERT_EQ(sampler.steps_from(first), sampler.steps_per_epoch() - done);
        const std::vector<int64_t> rest(whole.begin() + done * 4, whole.end());
        EXPECT_EQ(sampler.epoch_indices(2, first), rest) << "after step " << done << ", rank " << rank;
      }
    }
}

// At another world size the ranks together take the permutation's remaining positions in order,
// each exactly once (kDrop: whole global batches of them; kPad: all, wrapping to fill the last).
TEST(EpochSampler, ResumingAtAnotherWorldSharesTheRemainingPositions) {
  const int64_t n = 101, first = 36;  // 3 steps of 3 ranks x 4, resumed on 2 ranks x 5
  const std::vector<int64_t> order = EpochSampler(n, 4, 5, 0, 3).permutation(2);
  for (TailPolicy tail : {TailPolicy::kDrop, TailPolicy::kPad}) {
    const int64_t steps = EpochSampler(n, 5, 5, 0, 2, tail).steps_from(first);
    EXPECT_EQ(steps, tail == TailPolicy::kDrop ? 6 : 7);  // 65 positions left, 10 per step
    std::vector<int64_t> combined;
    std::vector<std::vector<int64_t>> shards;
    for (int rank = 0; rank < 2; ++rank) shards.push_back(EpochSampler(n, 5, 5, rank, 2, tail).epoch_indices(2, first));
    for (int64_t s = 0; s < steps; ++s)
      for (int rank = 0; rank < 2; ++rank)
        combined.insert(combined.end(), shards[rank].begin() + s * 5, shards[rank].begin() + (s + 1) * 5);
    std::vector<int64_t> expected;
    for (int64_t p = first; p < first + steps * 10; ++p) expected.push_back(order[p % n]);
    EXPECT_EQ(combined, expected);
  }
  EXPECT_EQ(EpochSampler(n, 5, 5, 0, 2).steps_from(n), 0);  // stopped after the epoch's last step
}

TEST(EpochSampler, EvalIndicesPartitionAllSamplesIntoContiguousNearEqualSlices) {
  for (int world = 1; world <= 7; ++world) {
    for (int64_t n : kAwkwardSizes) {
      std::vector<int64_t> all;
      int64_t smallest = n, largest = 0;
      for (int rank = 0; rank < world; ++rank) {
        // batch and tail do not matter for evaluation; kPad lets n < world * batch construct.
        const std::vector<int64_t> mine = EpochSampler(n, 4, 1, rank, world, TailPolicy::kPad, false).eval_indices();
        if (!mine.empty()) {
          EXPECT_EQ(mine, iota_vector(static_cast<int64_t>(mine.size()), mine.front()));
        }
        smallest = std::min<int64_t>(smallest, mine.size());
        largest = std::max<int64_t>(largest, mine.size());
        all.insert(all.end(), mine.begin(), mine.end());
      }
      EXPECT_EQ(all, iota_vector(n)) << "world=" << world << " n=" << n;
      EXPECT_LE(largest - smallest, 1);
    }
  }
}

TEST(EpochSampler, RejectsInvalidArgumentsWithClearMessages) {
  expect_error_containing([] { EpochSampler(0, 1, 0); }, "num_samples is 0");
  expect_error_containing([] { EpochSampler(10, 0, 0); }, "batch_per_rank is 0");
  expect_error_containing([] { EpochSampler(10, 1, 0, 0, 0); }, "world is 0");
  expect_error_containing([] { EpochSampler(10, 1, 0, 2, 2); }, "expected 0 <= rank < world");
  expect_error_containing([] { EpochSampler(10, 1, 0, -1, 2); }, "rank is -1");
  expect_error_containing([] { EpochSampler(10, 4, 0, 0, 3, TailPolicy::kDrop); },
                          "10 samples are fewer than one global batch");
  expect_error_containing([] { EpochSampler(10, 1, 0).epoch_indices(-1); }, "epoch is -1");
  EXPECT_NO_THROW(EpochSampler(10, 4, 0, 0, 3, TailPolicy::kPad));
}

}  // namespace
}  // namespace rt
