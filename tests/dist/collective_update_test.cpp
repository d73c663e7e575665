// Collective::average with an update, over a stand-in collective that does not shard (no MPI, no
// GPU): on the host it averages and then updates the whole range; on GPU memory, where the update
// would run outside the communication stream, it refuses before anything is enqueued.
#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "base/check.h"
#include "dist/collective.h"

namespace rt {
namespace {

class NoOrder final : public StreamOrder {
 public:
  void prepare(size_t, int64_t) override {}
  void mark_ready(int) override {}
  void join_compute() override {}
  void* communication_stream(const WaitContext&) override { return nullptr; }
};

// Averages nothing; says whether it has a stream order (as a collective on GPU memory does).
class NotSharding final : public Collective {
 public:
  explicit NotSharding(bool on_gpu) : on_gpu_(on_gpu) {}
  std::string describe() const override { return "a stand-in collective"; }
  StreamOrder* stream_order() override { return on_gpu_ ? &order_ : nullptr; }
  int reduces = 0;

 protected:
  PhaseSwitch reduce(float*, int64_t, const WaitContext&, const ShardUpdate* update) override {
    EXPECT_EQ(update, nullptr) << "a collective that does not shard is given no update";
    ++reduces;
    return std::nullopt;
  }

 private:
  bool on_gpu_;
  NoOrder order_;
};

// Records the ranges apply and finish were called with.
struct Recorded {
  std::vector<std::pair<int64_t, int64_t>> applied, finished;
  ShardUpdate update() {
    return ShardUpdate{[this](int64_t b, int64_t n) { applied.emplace_back(b, n); }, nullptr,
                       [this](int64_t b, int64_t n) { finished.emplace_back(b, n); }, 100};
  }
};

TEST(CollectiveUpdate, OnTheHostANonShardingCollectiveUpdatesTheWholeRangeAfterTheAverage) {
  NotSharding c(/*on_gpu=*/false);
  Recorded r;
  float data[7] = {};
  c.average(data, 7, {}, r.update());
  EXPECT_EQ(c.reduces, 1);
  EXPECT_EQ(r.applied, (std::vector<std::pair<int64_t, int64_t>>{{100, 7}}));
  EXPECT_EQ(r.finished, (std::vector<std::pair<int64_t, int64_t>>{{100, 7}}));
}

TEST(CollectiveUpdate, OnGpuMemoryANonShardingCollectiveRefusesAnUpdate) {
  NotSharding c(/*on_gpu=*/true);
  Recorded r;
  float data[7] = {};
  try {
    c.average(data, 7, {}, r.update());
    ADD_FAILURE() << "the update was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("outside its communication stream"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.reduces, 0) << "nothing may be enqueued before the refusal";
  EXPECT_TRUE(r.applied.empty());
  EXPECT_TRUE(r.finished.empty());
  c.average(data, 7, {});  // without an update it averages as before
  EXPECT_EQ(c.reduces, 1);
}

}  // namespace
}  // namespace rt
