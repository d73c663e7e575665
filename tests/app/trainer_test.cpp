// The trainer end to end: checkpoints resume bit-for-bit, a crash mid-write loses nothing, bad
// checkpoints are named errors, and a short run on the real Fashion-MNIST lowers the loss.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <filesystem>
#include <fstream>
#include <numeric>
#include <sstream>

#include "app/checkpoint.h"
#include "app/checkpoint_files.h"
#include "formats/json.h"
#include "formats/safetensors.h"
#include "app/trainer.h"
#include "app/run/training_run.h"
#include "base/check.h"
#include "base/rng.h"
#include "dist/world.h"
#include "tests/support/synthetic_idx.h"

namespace rt::testing {
namespace {

namespace fs = std::filesystem;

class TrainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("ringtrain_trainer_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    config_ = synthetic_config(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  std::string error_of(const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return e.what();
    }
    return "(no error)";
  }

  // A run of `config` that ends early, as a job that stops there would.
  TrainResult train_within(const Config& config, const TrainLimits& limits) {
    return train(Trainer(config, log_, World::get()), limits);
  }

  fs::path root_;
  Config config_;
  std::ostringstream log_;
};

TEST_F(TrainerTest, ResumedRunRepeatsTheUninterruptedOneStepForStep) {
  Config whole = config_;
  whole.checkpoint.dir = (root_ / "whole").string();
  const TrainResult uninterrupted = train(Trainer(whole, log_, World::get()));
  ASSERT_EQ(uninterrupted.step_losses.size(), 40u);  // 2 epochs x 640 / 32

  Config split = config_;
  split.checkpoint.dir = (root_ / "split").string();
  const TrainResult first = train_within(split, {.epochs = 1});
  ASSERT_EQ(first.step_losses.size(), 20u);
  // The crash: the next checkpoint's temporary file is left half-written.
  const fs::path ckpt = newest_checkpoint(split.checkpoint.dir);
  const std::string before = [&] {
    std::ifstream f(ckpt, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(f), {});
  }();
  { std::ofstream(numbered_checkpoint_path(split.checkpoint.dir, 30 * 32) + ".tmp") << "half a checkpoint"; }
  EXPECT_EQ(read_safetensors(ckpt.string()).meta("epochs_done"), "1");

  Trainer resumed(split, log_, World::get());
  resumed.resume(split.checkpoint.dir);
  EXPECT_EQ(resumed.position().step, 20);
  const TrainResult second = train(resumed);
  ASSERT_EQ(second.step_losses.size(), 20u);
  double worst = 0;
  size_t worst_at = 0;
  for (size_t i = 0; i < 20; ++i) {
    const double a = uninterrupted.step_losses[20 + i], b = second.step_losses[i];
    const double rel = std::abs(a - b) / std::abs(a);
    if (rel > worst) worst = rel, worst_at = i;
  }
  EXPECT_LE(worst, 1e-6) << "largest relative difference at resumed step " << worst_at;
  EXPECT_NEAR(second.last_eval.top1, uninterrupted.last_eval.top1, 1e-12);
  // The crashed file did not replace the checkpoint of epoch 1 before the resumed run wrote epoch 2.
  EXPECT_FALSE(before.empty());
  EXPECT_FALSE(fs::exists(ckpt));  // checkpoint.keep = 1: epoch 1's went once epoch 2's was complete
  EXPECT_EQ(read_safetensors(newest_checkpoint(split.checkpoint.dir)).meta("epochs_done"), "2");
  EXPECT_EQ(numbered_checkpoints(split.checkpoint.dir).size(), 1u);  // checkpoint.keep = 1
  EXPECT_FALSE(fs::exists(numbered_checkpoint_path(split.checkpoint.dir, 30 * 32) + ".tmp"));
}

// Note [Stopping at a target] in app/run/run_target.h: the run stops at the first evaluation that
// reaches eval.target_top1 and says so in metrics.jsonl; a run resumed from a checkpoint counts its
// seconds from the first part's start. (A missed target: tests/app/mlperf_log_test.sh.)
TEST_F(TrainerTest, ATargetStopsTheRunAndAResumedRunKeepsCountingItsTime) {
  Config reach = config_;
  reach.checkpoint.dir = (root_ / "reach").string();
  reach.eval.target_top1 = 0.05;  // any learning at all, after epoch 1 of 2
  const TrainResult reached = train(Trainer(reach, log_, World::get()));
  EXPECT_TRUE(reached.target.reached);
  EXPECT_EQ(reached.target.epoch, 1);
  EXPECT_EQ(reached.step_losses.size(), 20u) << "the run went on after reaching its target";
  EXPECT_GE(reached.target.top1, 0.05);
  std::ifstream metrics(fs::path(reach.checkpoint.dir) / "metrics.jsonl");
  Json last;
  for (std::string line; std::getline(metrics, line);) last = parse_json(line);
  EXPECT_EQ(last["kind"], "target");
  EXPECT_EQ(last["reached"], true);
  EXPECT_EQ(last["epoch"], 1);

  Config split = config_;
  split.checkpoint.dir = (root_ / "split").string();
  train_within(split, {.epochs = 1});  // no target yet: epoch 1 ends the first part
  const double first_part = std::stod(read_safetensors(newest_checkpoint(split.checkpoint.dir)).meta("run_seconds"));
  EXPECT_GT(first_part, 0);
  split.eval.target_top1 = 0.05;
  Trainer resumed(split, log_, World::get());
  resumed.resume(split.checkpoint.dir);
  const TrainResult second = train(resumed);
  EXPECT_TRUE(second.target.reached);
  EXPECT_EQ(second.target.epoch, 2);
  EXPECT_GT(second.target.run_seconds, first_part) << "the resumed part did not count the first part's time";
  EXPECT_LT(second.target.run_seconds, first_part + second.train_seconds + 60);
}

// The decay's own length (schedule.decay_steps) ends the decay inside the run, which goes on at
// the end rate to train.epochs; an absolute rate (train.lr) is taken as it is, whatever the batch.
TEST_F(TrainerTest, TheDecayHasItsOwnLengthAndTheRateHoldsAfterIt) {
  Config c = config_;
  c.checkpoint.dir = (root_ / "decay").string();
  c.log.every_steps = 1;
  c.train.lr = 0.05;
  c.train.lr_per_256 = 0;
  c.schedule.kind = ScheduleKind::kPoly;
  c.schedule.warmup_epochs = 0;
  c.schedule.power = 2;
  c.schedule.end_lr = 0.001;
  c.schedule.final_fraction = 0;
  c.schedule.decay_steps = 10;
  train(Trainer(c, log_, World::get()));
  std::ifstream f(fs::path(c.checkpoint.dir) / "metrics.jsonl");
  std::vector<double> rates;
  for (std::string line; std::getline(f, line);) {
    const Json r = parse_json(line);
    if (r["kind"] == "step") rates.push_back(r["lr"].get<double>());
  }
  ASSERT_EQ(rates.size(), 40u);  // 2 epochs of 20 steps
  EXPECT_DOUBLE_EQ(rates[0], 0.05);
  EXPECT_NEAR(rates[5], 0.001 + (0.05 - 0.001) * 0.25, 1e-12);  // halfway: (1 - 1/2)^2
  for (size_t i = 10; i < rates.size(); ++i) EXPECT_NEAR(rates[i], 0.001, 1e-15) << "step " << i + 1;
}

// Parameters, then momentum, as the run left them.
std::vector<float> weights_and_momentum(Trainer& t) {
  const size_t n = static_cast<size_t>(t.graph().arena_floats());
  std::vector<float> v(t.graph().param_arena(), t.graph().param_arena() + n);
  v.insert(v.end(), t.optimizer().state_arena(0), t.optimizer().state_arena(0) + n);
  return v;
}

// The `step` of each step record in DIR/metrics.jsonl, in file order.
std::vector<int64_t> metric_steps(const fs::path& dir) {
  std::vector<int64_t> steps;
  std::ifstream f(dir / "metrics.jsonl");
  for (std::string line; std::getline(f, line);) {
    const Json r = parse_json(line);
    if (r["kind"] == "step") steps.push_back(r["step"].get<int64_t>());
  }
  return steps;
}

// The long-run check at one rank: saves every 7 steps, a crash after step 17 (inside epoch 1, so
// the newest checkpoint is inside the epoch, at step 14), a resume: the weights, momentum and
// dropout draws end bit-identical to a run that neither saved nor stopped, and metrics.jsonl
// holds each step once although the crashed run had logged steps 15 to 17.
TEST_F(TrainerTest, ResumeInsideAnEpochEndsBitIdenticalToTheUninterruptedRun) {
  Config whole = config_;
  whole.checkpoint.dir = (root_ / "whole").string();
  Trainer uninterrupted(whole, log_, World::get());
  const TrainResult u = train(uninterrupted);

  Config split = config_;
  split.checkpoint.dir = (root_ / "split").string();
  split.checkpoint.every_steps = 7;
  split.checkpoint.keep = 2;
  train_within(split, {.steps = 17});                                // a crash: no save after step 14
  ASSERT_EQ(numbered_checkpoints(split.checkpoint.dir).size(), 2u);  // steps 7 and 14
  const TrainingPosition saved = read_training_position(newest_checkpoint(split.checkpoint.dir));
  EXPECT_EQ(saved.step, 14);
  EXPECT_EQ(saved.epochs_done, 0);
  EXPECT_EQ(saved.epoch_positions, 14 * 32);
  EXPECT_EQ(fs::read_symlink(fs::path(split.checkpoint.dir) / kCheckpointFile),
            fs::path(newest_checkpoint(split.checkpoint.dir)).filename());

  Trainer resumed(split, log_, World::get());
  resumed.resume(split.checkpoint.dir);
  EXPECT_EQ(resumed.position().step, 14);
  const TrainResult r = train(resumed);
  ASSERT_EQ(r.step_losses.size(), 26u);
  for (size_t i = 0; i < 26; ++i) EXPECT_EQ(r.step_losses[i], u.step_losses[14 + i]) << "step " << 15 + i;
  EXPECT_TRUE(weights_and_momentum(resumed) == weights_and_momentum(uninterrupted));
  EXPECT_EQ(r.last_eval.top1, u.last_eval.top1);

  std::vector<int64_t> expected(40);
  std::iota(expected.begin(), expected.end(), 1);
  EXPECT_EQ(metric_steps(split.checkpoint.dir), expected);
  // The epoch's report covers the whole epoch, its first 14 steps from the checkpoint.
  const auto epoch_loss = [](const fs::path& dir) {
    std::ifstream f(dir / "metrics.jsonl");
    for (std::string line; std::getline(f, line);)
      if (parse_json(line)["kind"] == "epoch") return parse_json(line)["train_loss"].get<double>();
    return -1.0;
  };
  EXPECT_NEAR(epoch_loss(split.checkpoint.dir), epoch_loss(whole.checkpoint.dir), 1e-12);
}

// Saves inside epochs leave each epoch's report as it would be without them, also where the
// epoch itself does not end with a save (every_epochs = 2): its figures do not carry over.
TEST_F(TrainerTest, SavesInsideEpochsLeaveTheEpochReportsAlone) {
  const auto epoch_losses = [](const fs::path& dir) {
    std::vector<double> losses;
    std::ifstream f(dir / "metrics.jsonl");
    for (std::string line; std::getline(f, line);)
      if (parse_json(line)["kind"] == "epoch") losses.push_back(parse_json(line)["train_loss"].get<double>());
    return losses;
  };
  Config plain = config_;
  plain.checkpoint.dir = (root_ / "plain").string();
  train(Trainer(plain, log_, World::get()));
  Config saving = config_;
  saving.checkpoint.dir = (root_ / "saving").string();
  saving.checkpoint.every_steps = 7;
  saving.checkpoint.every_epochs = 2;
  train(Trainer(saving, log_, World::get()));
  const std::vector<double> want = epoch_losses(plain.checkpoint.dir), got = epoch_losses(saving.checkpoint.dir);
  ASSERT_EQ(want.size(), 2u);
  ASSERT_EQ(got.size(), 2u);
  for (size_t e = 0; e < 2; ++e) EXPECT_NEAR(got[e], want[e], 1e-12) << "epoch " << e + 1;
}

// checkpoint.keep = 2 with a save every 5 steps of a 20-step epoch: after the saves at 5, 10, 15
// and the epoch's own at 20, the newest two remain and the link names the newest.
TEST_F(TrainerTest, KeepLeavesTheNewestCheckpointsAndTheLinkOnTheLast) {
  config_.train.epochs = 1;
  config_.checkpoint.every_steps = 5;
  config_.checkpoint.keep = 2;
  train(Trainer(config_, log_, World::get()));
  const std::vector<std::string> left = numbered_checkpoints(config_.checkpoint.dir);
  ASSERT_EQ(left.size(), 2u);
  EXPECT_EQ(left[0], numbered_checkpoint_path(config_.checkpoint.dir, 15 * 32));
  EXPECT_EQ(left[1], numbered_checkpoint_path(config_.checkpoint.dir, 20 * 32));
  EXPECT_EQ(read_training_position(left[1]).epochs_done, 1);
  EXPECT_EQ(fs::read_symlink(fs::path(config_.checkpoint.dir) / kCheckpointFile), fs::path(left[1]).filename());
}

// A new run in a folder whose checkpoints are ahead of it would be pruned or outranked by them.
TEST_F(TrainerTest, FreshRunWhereALaterCheckpointExistsIsRefused) {
  config_.train.epochs = 1;
  train(Trainer(config_, log_, World::get()));
  const std::string e = error_of([&] { train(Trainer(config_, log_, World::get())); });
  EXPECT_NE(e.find("already holds"), std::string::npos) << e;
  EXPECT_NE(e.find("--resume " + config_.checkpoint.dir), std::string::npos) << e;
  EXPECT_EQ(numbered_checkpoints(config_.checkpoint.dir).size(), 1u);
}

// A part the engine and the writer know nothing of rides in the checkpoint (Note [Saved parts] in
// app/saved_state.h). One with a tensor registers before the resume and is loaded by it; one of
// metadata registers after (as the run's do) and is loaded as it registers. Two parts that save
// under one key are refused, naming both.
class SeenPart final : public SavedPart {
 public:
  std::vector<float> values;
  void save(StFile& into) override {
    into.tensors.emplace_back("test.seen", make_f32_tensor({int64_t(values.size())}, values.data()));
  }
  void load(const StFile& from, const std::string& source) override {
    const StTensor* t = from.find("test.seen");
    RT_CHECK(t, source, ": no test.seen");
    values = as_f32(*t, source);
  }
};
class VisitsPart final : public SavedPart {
 public:
  explicit VisitsPart(const char* key = "test.visits") : key_(key) {}
  int64_t count = 0;
  void save(StFile& into) override { into.metadata.emplace_back(key_, std::to_string(count)); }
  void load(const StFile& from, const std::string& source) override {
    RT_CHECK(!from.meta(key_).empty(), source, ": no ", key_);
    count = std::stoll(from.meta(key_));
  }

 private:
  std::string key_;
};

TEST_F(TrainerTest, APartOfItsOwnIsSavedAndResumedBesideTheEngines) {
  fs::create_directories(config_.checkpoint.dir);
  Trainer t(config_, log_, World::get());
  SeenPart seen;
  seen.values = {0.25f, -3.5f, 1e-30f};
  t.saved_state().add("seen", PartScope::kShared, seen);
  VisitsPart visits;
  visits.count = 41;
  {
    const SavedState::Registration r = t.saved_state().add_for_now("visits", visits);
    EXPECT_EQ(visits.count, 41) << "nothing resumed: the part keeps its own";
    EXPECT_NE(t.save(), "");
  }
  const StFile file = read_safetensors(newest_checkpoint(config_.checkpoint.dir));
  EXPECT_EQ(file.meta("test.visits"), "41");
  EXPECT_EQ(file.meta("step"), "0") << "the engine's parts are saved beside it";
  ASSERT_NE(file.find("features.0.weight"), nullptr);

  Trainer resumed(config_, log_, World::get());
  SeenPart seen_back;
  resumed.saved_state().add("seen", PartScope::kShared, seen_back);
  resumed.resume(config_.checkpoint.dir);
  EXPECT_EQ(seen_back.values, seen.values) << "loaded by the resume, bit for bit";
  VisitsPart visits_back;
  const SavedState::Registration r = resumed.saved_state().add_for_now("visits", visits_back);
  EXPECT_EQ(visits_back.count, 41) << "loaded as it registers after the resume";
  VisitsPart other;
  EXPECT_NE(error_of([&] {
              const SavedState::Registration twice = resumed.saved_state().add_for_now("visits", other);
            }).find("a saved part named 'visits' is registered already"),
            std::string::npos);
  EXPECT_NE(error_of([&] {
              resumed.saved_state().add("late", PartScope::kShared, seen_back);
            }).find("'late' registers after the resume"),
            std::string::npos);

  Trainer clash(config_, log_, World::get());
  VisitsPart on_the_step("step");
  clash.saved_state().add("a step of its own", PartScope::kShared, on_the_step);
  EXPECT_NE(
      error_of([&] { clash.save(); }).find("saved parts 'position' and 'a step of its own' both save metadata step"),
      std::string::npos);
}

// train.clip_grad_norm in the training step: the first step's update (weight decay off, so SGD
// moves each weight by lr x its gradient) is the unclipped step's times the factor, and the norm
// is that of the gradients the unclipped step left in its arena. (clip_grad_norm itself is
// checked against PyTorch in tests/nn/clip_grad_norm_test.cpp.)
TEST_F(TrainerTest, ClippingScalesTheStepByTheNormsFactor) {
  config_.train.weight_decay = 0;
  Trainer plain(config_, log_, World::get());
  Config clipped_config = config_;
  clipped_config.train.clip_grad_norm = 0.05;
  Trainer clipped(clipped_config, log_, World::get());
  const Shape in = plain.data().input_shape;
  const int64_t B = config_.train.batch_per_rank;
  std::vector<float> images(static_cast<size_t>(B * in[0] * in[1] * in[2]));
  std::vector<int32_t> labels(static_cast<size_t>(B));
  Rng rng(11, 0);
  for (float& v : images) v = static_cast<float>(rng.uniform() * 2 - 1);
  for (int32_t& l : labels) l = static_cast<int32_t>(rng.below(4));
  const std::vector<float> before = weights_and_momentum(plain);
  ASSERT_TRUE(before == weights_and_momentum(clipped));
  plain.train_step(images.data(), labels.data());
  clipped.train_step(images.data(), labels.data());

  const int64_t n = plain.graph().arena_floats();
  double squares = 0;
  for (int64_t i = 0; i < n; ++i) squares += double{plain.graph().grad_arena()[i]} * plain.graph().grad_arena()[i];
  const GradNorm& norm = clipped.last_grad_norm();
  EXPECT_NEAR(norm.total, std::sqrt(squares), 1e-9 * std::sqrt(squares));
  ASSERT_LT(norm.coef, 0.5) << "the limit should clip: norm " << norm.total;
  EXPECT_NEAR(norm.coef, 0.05 / norm.total, 1e-6);
  const float* w0 = before.data();
  const float* wp = plain.graph().param_arena();
  const float* wc = clipped.graph().param_arena();
  double worst = 0, largest = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double unclipped = double{wp[i]} - w0[i], step = double{wc[i]} - w0[i];
    worst = std::max(worst, std::abs(step - norm.coef * unclipped));
    largest = std::max(largest, std::abs(norm.coef * unclipped));
  }
  EXPECT_GT(largest, 0);
  EXPECT_LE(worst, 1e-3 * largest) << "largest clipped move " << largest;
}

TEST_F(TrainerTest, SyntheticTaskIsLearned) {
  const TrainResult r = train(Trainer(config_, log_, World::get()));
  EXPECT_GT(r.last_eval.top1, 0.9) << log_.str();  // 4 separable classes; chance is 0.25
}

TEST_F(TrainerTest, ResumeWithOtherShapesNamesTheTensorAndBothShapes) {
  train_within(config_, {.epochs = 1});
  Config other = config_;
  other.model.num_classes = 5;
  const std::string e = error_of([&] { Trainer(other, log_, World::get()).resume(config_.checkpoint.dir); });
  EXPECT_NE(e.find("classifier.3.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("(4, 128)"), std::string::npos) << e;
  EXPECT_NE(e.find("(5, 128)"), std::string::npos) << e;
}

TEST_F(TrainerTest, ResumeWithAnotherModelNamesBoth) {
  train_within(config_, {.epochs = 1});
  Config other = config_;
  other.model.name = "resnet_mini";
  const std::string e = error_of([&] { Trainer(other, log_, World::get()).resume(config_.checkpoint.dir); });
  EXPECT_NE(e.find("'simple_cnn'"), std::string::npos) << e;
  EXPECT_NE(e.find("'resnet_mini'"), std::string::npos) << e;
}

TEST_F(TrainerTest, TruncatedCheckpointIsAnErrorNamingTheFile) {
  train_within(config_, {.epochs = 1});
  const fs::path ckpt = newest_checkpoint(config_.checkpoint.dir);
  fs::resize_file(ckpt, fs::file_size(ckpt) / 2);
  const std::string e = error_of([&] { Trainer(config_, log_, World::get()).resume(config_.checkpoint.dir); });
  EXPECT_NE(e.find(ckpt.string()), std::string::npos) << e;
}

// A checkpoint whose weights (or momentum) hold NaN or infinity is refused, naming the tensor,
// by resume (and so eval) and by load_model_state (predict and forward), instead of training on
// or reporting a loss of nan.
TEST_F(TrainerTest, NonFiniteTensorsInACheckpointAreRefusedByName) {
  config_.train.epochs = 1;
  train(Trainer(config_, log_, World::get()));
  const std::string path = newest_checkpoint(config_.checkpoint.dir);
  const StFile clean = read_safetensors(path);
  for (const std::string name : {"classifier.3.weight", "optimizer.momentum.classifier.3.bias"}) {
    StFile f = clean;
    for (auto& [n, t] : f.tensors)
      if (n == name) {
        const float values[2] = {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()};
        std::memcpy(t.bytes.data() + 8, values, sizeof values);
      }
    write_safetensors(path, f);
    const std::string e = error_of([&] { Trainer(config_, log_, World::get()).resume(config_.checkpoint.dir); });
    EXPECT_NE(e.find(str_cat("tensor '", name, "' holds 2 non-finite value(s)")), std::string::npos) << e;
    EXPECT_NE(e.find("at index 2"), std::string::npos) << e;
  }
  Trainer t(config_, log_, World::get());
  StFile bad = clean;
  for (auto& [n, tensor] : bad.tensors)
    if (n == "features.0.weight") {
      const float inf = -std::numeric_limits<float>::infinity();
      std::memcpy(tensor.bytes.data(), &inf, sizeof inf);
    }
  const std::string e = error_of([&] { load_model_state(t.graph(), bad, "weights.safetensors"); });
  EXPECT_NE(e.find("weights.safetensors: tensor 'features.0.weight' holds 1 non-finite value(s)"), std::string::npos)
      << e;
}

TEST_F(TrainerTest, ResumeFromAFolderWithoutCheckpointSaysSo) {
  const std::string e = error_of([&] { Trainer(config_, log_, World::get()).resume((root_ / "nothing").string()); });
  EXPECT_NE(e.find("has no checkpoint (checkpoint-<N>.safetensors"), std::string::npos) << e;
}

TEST_F(TrainerTest, UnwritableCheckpointFolderIsAnErrorNamingIt) {
  config_.checkpoint.dir = "/proc/ringtrain-cannot-be-here";
  Trainer trainer(config_, log_, World::get());
  const std::string e = error_of([&] { train(trainer); });
  EXPECT_NE(e.find("/proc/ringtrain-cannot-be-here"), std::string::npos) << e;
}

TEST_F(TrainerTest, MissingDataFileIsAnErrorNamingIt) {
  config_.data.train_labels = "no-such-labels";
  const std::string e = error_of([&] { Trainer(config_, log_, World::get()); });
  EXPECT_NE(e.find("no-such-labels"), std::string::npos) << e;
}

TEST_F(TrainerTest, LabelsBeyondTheModelsClassesAreAnError) {
  config_.model.num_classes = 3;
  const std::string e = error_of([&] { Trainer(config_, log_, World::get()); });
  EXPECT_NE(e.find("model.num_classes = 3"), std::string::npos) << e;
}

TEST_F(TrainerTest, DivergingLossStopsWithTheStepAndLeavesNoCheckpoint) {
  config_.train.lr_per_256 = 1e12;
  config_.schedule.kind = ScheduleKind::kConstant;
  const std::string e = error_of([&] { train(Trainer(config_, log_, World::get())); });
  EXPECT_NE(e.find("loss became"), std::string::npos) << e;
  EXPECT_FALSE(fs::exists(fs::path(config_.checkpoint.dir) / kCheckpointFile));
}

TEST_F(TrainerTest, MetricsAndResolvedConfigAreWrittenBesideTheCheckpoint) {
  config_.train.epochs = 1;
  train(Trainer(config_, log_, World::get()));
  const fs::path dir = config_.checkpoint.dir;
  EXPECT_EQ(load_config((dir / "config.toml").string()), config_);
  std::ifstream metrics(dir / "metrics.jsonl");
  int steps = 0, epochs = 0;
  for (std::string line; std::getline(metrics, line);) {
    steps += line.find("\"kind\":\"step\"") != std::string::npos;
    epochs += line.find("\"kind\":\"epoch\"") != std::string::npos && line.find("\"test_top5\"") != std::string::npos;
  }
  EXPECT_EQ(steps, 20);
  EXPECT_EQ(epochs, 1);
}

TEST(TrainerFashionMnist, ThreeHundredStepsLowerTheLoss) {
  const fs::path data = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data / "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST not installed in " << data;
  const fs::path dir = fs::temp_directory_path() / ("ringtrain_fmnist_" + std::to_string(::getpid()));
  Config c;
  c.model.name = "lenet";
  c.train.epochs = 1;
  c.train.batch_per_rank = 200;  // 300 steps
  c.train.lr_per_256 = 0.2;
  c.train.threads = 2;
  c.log.progress = ProgressMode::kNone;
  c.checkpoint.dir = dir.string();
  std::ostringstream log;
  const TrainResult r = train(Trainer(c, log, World::get()));
  fs::remove_all(dir);
  ASSERT_EQ(r.step_losses.size(), 300u);
  double head = 0, tail = 0;
  for (int i = 0; i < 20; ++i) head += r.step_losses[i] / 20, tail += r.step_losses[280 + i] / 20;
  EXPECT_LT(tail, 0.5 * head) << "mean loss of the first 20 steps " << head << ", of the last 20 " << tail;
  EXPECT_GT(r.last_eval.top1, 0.7);  // chance is 0.1; LeNet reaches ~0.8 after one epoch
}

}  // namespace
}  // namespace rt::testing
