// The trainer across ranks: N ranks x batch B end with the same weights as 1 rank x batch N*B on
// the same samples; sharded evaluation equals single-rank evaluation; a config that differs on
// one rank is refused naming the key; a run resumes at a different world size.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "tools/simulate.h"
#include "app/trainer.h"
#include "app/run/training_run.h"
#include "base/check.h"
#include "dist/world.h"
#include "nn/optim/lars.h"
#include "tests/support/synthetic_idx.h"

namespace rt::testing {
namespace {

namespace fs = std::filesystem;

// Rank 0 writes the data; every rank reads the same folder (the config must agree everywhere).
// All ranks are children of one mpirun, so the parent pid names the folder for all of them.
Config rank_config(const std::string& test, int64_t batch_per_rank) {
  const World& w = World::get();
  const fs::path dir = fs::temp_directory_path() / str_cat("ringtrain_dp_", test, "_", ::getppid());
  if (w.rank() == 0) fs::remove_all(dir);
  Config c;
  if (w.rank() == 0) c = synthetic_config(dir);
  w.barrier();
  if (w.rank() != 0) {
    // The same config without writing the files again.
    const fs::path probe = fs::temp_directory_path() / str_cat("ringtrain_dp_probe_", ::getpid());
    c = synthetic_config(probe);
    fs::remove_all(probe);
    c.data.dir = (dir / "data").string();
    c.checkpoint.dir = (dir / "run").string();
  }
  c.model.name = "lenet";  // no batch norm: the invariant is exact up to float rounding
  c.model.dropout = 0;
  c.train.batch_per_rank = batch_per_rank;
  c.train.epochs = 1;
  c.train.threads = 1;
  c.schedule.kind = ScheduleKind::kConstant;
  return c;
}

std::vector<float> arena(Graph& g) { return std::vector<float>(g.param_arena(), g.param_arena() + g.arena_floats()); }

// The same parameters and momentum, bit for bit; returns the momentum checked.
std::vector<float> expect_same_parameters_and_momentum(Trainer& got, Trainer& want) {
  const int64_t n = got.graph().arena_floats();
  EXPECT_EQ(arena(got.graph()), arena(want.graph()));
  const float* m = got.optimizer().state_arena(0);
  const float* w = want.optimizer().state_arena(0);
  EXPECT_EQ(std::vector<float>(m, m + n), std::vector<float>(w, w + n));
  return std::vector<float>(m, m + n);
}

TEST(DataParallel, RanksWithBatchBEndWhereOneRankWithBatchNBEnds) {
  const World& w = World::get();
  std::ostringstream log;
  // 640 samples: world W x B = 8 gives 640 / (8 W) steps; the reference uses batch 8 W.
  Config c = rank_config("invariant", 8);
  c.checkpoint.every_epochs = 1;
  Trainer parallel(c, log, w);
  train(parallel);
  const std::vector<float> got = arena(parallel.graph());

  Config single = c;
  single.train.batch_per_rank = 8 * w.size();
  single.checkpoint.dir += str_cat("_single", w.rank());
  World one = World::single();
  Trainer reference(single, log, one);
  EXPECT_EQ(reference.schedule().steps_per_epoch, parallel.schedule().steps_per_epoch);
  train(reference);
  const std::vector<float> want = arena(reference.graph());
  ASSERT_EQ(got.size(), want.size());
  double worst = 0, scale = 0;
  size_t where = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    scale = std::max(scale, static_cast<double>(std::abs(want[i])));
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    if (err > worst) worst = err, where = i;
  }
  EXPECT_LE(worst, 1e-5 * scale) << "largest difference " << worst << " at arena float " << where << " (scale " << scale
                                 << ") after " << parallel.schedule().steps_per_epoch << " steps on " << w.size()
                                 << " ranks";
}

// Note [Sharded update] in dist/ring_schedule.h: each rank updating only its share (the default)
// ends where every rank updating everything ends: the same parameters and, once gathered, the same
// momentum, bit for bit (the owner of each element computes exactly what every rank would have).
TEST(DataParallel, ShardedUpdateEndsWithTheParametersAndMomentumOfTheFullUpdate) {
  const World& w = World::get();
  std::ostringstream log;
  Config c = rank_config("sharded", 8);
  c.train.momentum = 0.9;
  c.train.weight_decay = 1e-3;
  Config full = c;
  full.dist.sharded_update = false;
  full.checkpoint.dir += "_full";
  Trainer sharded(c, log, w);
  train(sharded);
  Trainer reference(full, log, w);
  train(reference);
  const std::vector<float> m = expect_same_parameters_and_momentum(sharded, reference);
  EXPECT_TRUE(std::any_of(m.begin(), m.end(), [](float x) { return x != 0; }));
}

// Note [Norms across shards] in nn/optim/shard_norms.h: LARS with each rank updating its own part,
// its weights' norms summed in pieces across ranks, ends where LARS with every rank updating
// everything ends, bit for bit: over the flat ring, and over the two-level ring where the world
// splits into fake hosts.
void expect_sharded_lars_equals_whole(const std::string& test, Hierarchy hierarchy) {
  const World& w = World::get();
  std::ostringstream log;
  Config c = rank_config(test, 8);
  c.train.optimizer = OptimizerKind::kLars;
  c.train.lr_per_256 = 2;
  c.train.momentum = 0.94;
  c.train.weight_decay = 5e-4;
  c.dist.hierarchy = hierarchy;
  c.dist.bucket_mb = c.dist.first_bucket_mb = 0.05;  // several buckets, each cut between the ranks
  Config full = c;
  full.dist.sharded_update = false;
  full.checkpoint.dir += "_full";
  Trainer sharded(c, log, w);
  ASSERT_TRUE(sharded.reducer() && sharded.reducer()->updates_parameters());
  EXPECT_GT(sharded.reducer()->buckets().size(), 1u);
  train(sharded);
  Trainer reference(full, log, w);
  ASSERT_FALSE(reference.reducer()->updates_parameters());
  train(reference);
  expect_same_parameters_and_momentum(sharded, reference);
  const int64_t n = sharded.graph().arena_floats();
  // Some weight straddles two ranks' parts: the norms did cross ranks.
  EXPECT_GT(dynamic_cast<Lars&>(sharded.optimizer()).norm_pieces(0, n).size(), static_cast<size_t>(4));
}

TEST(DataParallel, ShardedLarsEndsWithTheParametersAndMomentumOfTheWholeLars) {
  expect_sharded_lars_equals_whole("lars_flat", Hierarchy::kFlat);
}

TEST(DataParallel, ShardedLarsOverTheTwoLevelRingEndsWhereTheWholeLarsEnds) {
  const World& w = World::get();
  if (w.size() < 4 || w.size() % 2 != 0) GTEST_SKIP() << "needs hosts of 2 ranks, at least two of them";
  setenv("RINGTRAIN_FAKE_HOST_RANKS", "2", 1);
  expect_sharded_lars_equals_whole("lars_two_level", Hierarchy::kTwoLevel);
  unsetenv("RINGTRAIN_FAKE_HOST_RANKS");
}

TEST(DataParallel, ShardedEvaluationEqualsSingleRankEvaluation) {
  const World& w = World::get();
  std::ostringstream log;
  Config c = rank_config("eval", 8);
  c.eval.batch = 7;  // shards and chunks of awkward sizes
  Trainer parallel(c, log, w);
  const EvalResult sharded = parallel.evaluate();
  World one = World::single();
  Trainer alone(c, log, one);  // same seed: same initial weights as rank 0 broadcast
  const EvalResult whole = alone.evaluate();
  EXPECT_EQ(sharded.samples, 160);
  EXPECT_EQ(sharded.samples, whole.samples);
  EXPECT_NEAR(sharded.top1, whole.top1, 1e-12);
  EXPECT_NEAR(sharded.top5, whole.top5, 1e-12);
  EXPECT_NEAR(sharded.loss, whole.loss, 1e-6 * std::abs(whole.loss));
}

TEST(DataParallel, AConfigThatDiffersOnOneRankIsRefusedNamingTheKey) {
  const World& w = World::get();
  std::ostringstream log;
  Config c = rank_config("mismatch", 8);
  if (w.rank() == w.size() - 1) c.train.lr_per_256 = 0.123;
  try {
    Trainer t(c, log, w);
    FAIL() << "a differing train.lr_per_256 must be refused";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("'train.lr_per_256'"), std::string::npos) << m;
    EXPECT_NE(m.find(str_cat("rank(s) ", w.size() - 1)), std::string::npos) << m;
  }
}

TEST(DataParallel, ARunResumesAtADifferentWorldSize) {
  const World& w = World::get();
  std::ostringstream log;
  Config c = rank_config("resume", 8);
  c.train.epochs = 2;
  Trainer first(c, log, w);
  train(first, {.epochs = 1});  // rank 0 writes the checkpoint; train() returns on all ranks after it
  w.barrier();
  // Every rank continues alone: world size 1 instead of w.size().
  World one = World::single();
  Config alone = c;
  alone.checkpoint.dir += str_cat("_alone", w.rank());
  Trainer resumed(alone, log, one);
  resumed.resume(c.checkpoint.dir);
  EXPECT_EQ(resumed.position().epochs_done, 1);
  EXPECT_EQ(resumed.position().images_seen, 640 / (8 * w.size()) * 8 * w.size());
  EXPECT_EQ(resumed.position().step, resumed.schedule().steps_per_epoch);
  const TrainResult r = train(resumed);
  EXPECT_EQ(static_cast<int64_t>(r.step_losses.size()), resumed.schedule().steps_per_epoch);
  EXPECT_EQ(resumed.position().epochs_done, 2);
  w.barrier();
}

}  // namespace
}  // namespace rt::testing

namespace rt::testing {
namespace {

// `ringtrain simulate` plans its buckets with the trainer's own function: for the paper's three
// models, the buckets a 2-rank trainer's reducer averages are exactly the simulator's.
TEST(DataParallel, SimulatorBucketsAreTheTrainersForThePapersModels) {
  const World& w = World::get();
  if (w.size() != 2) GTEST_SKIP() << "runs at 2 ranks (the paper's models are large)";
  for (const char* name : {"resnet101", "vgg16", "inception_v3"}) {
    Config c;
    c.model.name = name;
    c.model.num_classes = 1000;
    c.data.source = DataSource::kSynthetic;
    // The buckets depend on the parameters alone, not the image size (Inception's aux head needs 299).
    c.data.image_size = std::string(name) == "inception_v3" ? 0 : 64;
    c.train.batch_per_rank = 1;
    c.train.threads = 1;
    c.dist.bucket_mb = 16;
    c.dist.first_bucket_mb = 2;
    std::ostringstream log;
    Trainer trainer(c, log, w);
    ASSERT_NE(trainer.reducer(), nullptr);
    const std::vector<Bucket>& real = trainer.reducer()->buckets();
    const SimulatedModel sim = plan_model_for_simulation(c);
    ASSERT_EQ(sim.gradients.buckets.size(), real.size()) << name;
    for (size_t b = 0; b < real.size(); ++b) {
      EXPECT_EQ(sim.gradients.buckets[b].offset, real[b].offset) << name << " bucket " << b;
      EXPECT_EQ(sim.gradients.buckets[b].count, real[b].count) << name << " bucket " << b;
      EXPECT_EQ(sim.gradients.buckets[b].first_param, real[b].first_param) << name << " bucket " << b;
    }
  }
}

}  // namespace
}  // namespace rt::testing
