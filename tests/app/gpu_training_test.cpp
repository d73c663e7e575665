// The trainer end to end on the GPU (CTest label "gpu"): real Fashion-MNIST batches through the
// page-locked staging buffer, evaluation, a checkpoint written from the GPU that the CPU backend
// reads back and scores alike, steps replayed from a CUDA graph against steps issued call by
// call, and LARS, clipping and accumulation against the CPU. Without a usable GPU every test
// skips, saying why.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "app/trainer.h"
#include "app/run/training_run.h"
#include "dist/world.h"
#include "nn/device.h"
#include "tests/support/synthetic_idx.h"

namespace rt::testing {
namespace {

namespace fs = std::filesystem;

class GpuTraining : public ::testing::TestWithParam<const char*> {
 protected:
  void SetUp() override {
    std::string why;
    if (!cuda_usable(&why)) GTEST_SKIP() << "no usable GPU, so the trainer's GPU tests skip: " << why;
    root_ = fs::temp_directory_path() / ("ringtrain_gpu_training_" + std::to_string(::getpid()));
    fs::remove_all(root_);
  }
  void TearDown() override { fs::remove_all(root_); }

  fs::path root_;
  std::ostringstream log_;
};

// As TrainerFashionMnist.ThreeHundredStepsLowerTheLoss on the CPU, at each GPU precision.
TEST_P(GpuTraining, FashionMnistLowersTheLossAndLearns) {
  const fs::path data = "/usr/share/datasets/fashion-mnist";
  if (!fs::exists(data / "train-images-idx3-ubyte.gz")) GTEST_SKIP() << "Fashion-MNIST not installed in " << data;
  Config c;
  c.model.name = "lenet";
  c.train.device = Device::kCuda;
  c.train.precision = *enum_named<Precision>(GetParam());
  c.train.epochs = 1;
  c.train.batch_per_rank = 200;  // 300 steps
  c.train.lr_per_256 = 0.2;
  c.log.progress = ProgressMode::kNone;
  c.checkpoint.dir = (root_ / "run").string();
  const TrainResult r = train(Trainer(c, log_, World::get()));
  ASSERT_EQ(r.step_losses.size(), 300u);
  double head = 0, tail = 0;
  for (int i = 0; i < 20; ++i) head += r.step_losses[i] / 20, tail += r.step_losses[280 + i] / 20;
  EXPECT_LT(tail, 0.5 * head) << "mean loss of the first 20 steps " << head << ", of the last 20 " << tail;
  EXPECT_GT(r.last_eval.top1, 0.7);  // chance is 0.1; LeNet reaches ~0.8 after one epoch on the CPU
}

// The GPU's checkpoint holds float32 master weights and running statistics: the CPU, resuming it,
// scores the test set as the GPU did, to the GPU's own rounding.
TEST_P(GpuTraining, CheckpointFromTheGpuScoresAlikeOnTheCpu) {
  Config gpu = synthetic_config(root_);
  gpu.train.device = Device::kCuda;
  gpu.train.precision = *enum_named<Precision>(GetParam());
  const TrainResult trained = train(Trainer(gpu, log_, World::get()));
  ASSERT_EQ(trained.last_eval.samples, 160);

  Config cpu = gpu;
  cpu.train.device = Device::kCpu;
  cpu.train.precision = Precision::kFp32;
  Trainer reader(cpu, log_, World::get());
  reader.resume(gpu.checkpoint.dir);
  const EvalResult scored = reader.evaluate();
  ASSERT_EQ(scored.samples, 160);
  // The GPU's evaluation differs from the CPU's by its sums' order (fp32), TF32's rounding of
  // each product's inputs (2^-11), or a 16-bit rounding of every activation (u = 2^-8 for bf16),
  // a few of those over the model's layers: logits z move by |dz| <= e |z| with e some units of
  // that rounding. Per sample, cross-entropy moves by sum_k (p_k - y_k) dz_k, at most
  // 2 (1 - p_y) max |dz| <= 2 L max |dz| (as 1 - p_y <= -log p_y = L): a relative bound on the
  // mean loss of 2 e max |z|, here with e = 4 roundings and |z| up to 10 (the synthetic task is
  // learned with confident logits). A prediction near a tie may flip.
  const std::string p = GetParam();
  const double rounding = p == "fp32" ? 1e-6 : p == "tf32" ? 1.0 / 2048 : p == "bf16" ? 1.0 / 256 : 1.0 / 2048;
  const double relative = 2 * (4 * rounding) * 10;
  EXPECT_NEAR(scored.loss, trained.last_eval.loss, relative * trained.last_eval.loss + 1e-5);
  EXPECT_NEAR(scored.top1, trained.last_eval.top1, (p == "fp32" ? 1.0 : 3.0) / 160);
}

// max |a - b| / max |a|: how far b is from a, relative to a's scale.
template <typename T>
double relative_difference(const std::vector<T>& a, const std::vector<T>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - static_cast<double>(b[i])));
    scale = std::max(scale, std::abs(static_cast<double>(a[i])));
  }
  return scale > 0 ? diff / scale : diff;
}

// What a run leaves behind, read back from the GPU.
struct RunState {
  std::vector<double> step_losses;
  std::vector<float> params, buffers;
  std::vector<int64_t> counters;
  int64_t replayed_steps = 0, recordings = 0, skipped_steps = 0;
};

// fp16 starts from a loss scale of 2^30, so that its first steps overflow and the scale backs off.
RunState train_and_read(const Config& c, std::ostream& log) {
  Trainer t(c, log, World::get());
  t.loss_scaling().load(StFile{{{"loss_scale", "1073741824"}}, {}}, "2^30");  // fp16 only: the others keep it
  RunState s;
  s.step_losses = train(t).step_losses;
  Graph& g = t.graph();
  s.params.resize(static_cast<size_t>(g.arena_floats()));
  copy_bytes(s.params.data(), Device::kCpu, g.param_arena(), g.device(), s.params.size() * sizeof(float));
  for (const BufferRef& b : g.buffers()) {
    std::vector<float> host(static_cast<size_t>(b.value.numel()));
    copy_bytes(host.data(), Device::kCpu, b.value.data(), g.device(), b.value.bytes());
    s.buffers.insert(s.buffers.end(), host.begin(), host.end());
  }
  for (const CounterRef& counter : g.counters()) s.counters.push_back(*counter.value);
  s.replayed_steps = t.replay().replayed_steps();
  s.recordings = t.replay().recordings();
  if (const auto fp16 = t.loss_scaling().state()) s.skipped_steps = fp16->skipped_steps;
  return s;
}

// Note [CUDA graph steps] in nn/device.h: steps replayed from the recording (train.cuda_graph)
// train as steps issued call by call do: the same loss at every step and the same weights, running
// statistics and counters at the end, within how far two issued runs differ from each other
// (cuDNN's fastest algorithms may add in any order). simple_cnn has batch norm, whose counter the
// host keeps, and dropout, whose mask must move on at every replayed step: a frozen one would train
// another network. fp16, from a loss scale that overflows, records again at each back-off and must
// skip the same steps.
TEST_P(GpuTraining, StepsReplayedFromACudaGraphTrainAsIssuedStepsDo) {
  Config issued = synthetic_config(root_);
  issued.train.device = Device::kCuda;
  issued.train.precision = *enum_named<Precision>(GetParam());
  Config replayed = issued;
  replayed.train.cuda_graph = true;
  const RunState a = train_and_read(issued, log_), b = train_and_read(issued, log_);
  const RunState r = train_and_read(replayed, log_);
  ASSERT_EQ(a.step_losses.size(), 40u);  // 2 epochs of 640 images at 32
  EXPECT_EQ(a.replayed_steps, 0);
  EXPECT_EQ(r.replayed_steps, 39) << "every step but the run's first is replayed";
  EXPECT_EQ(r.counters, a.counters);
  EXPECT_EQ(r.skipped_steps, a.skipped_steps);
  if (std::string(GetParam()) == "fp16") {
    EXPECT_GT(a.skipped_steps, 1) << "a loss scale of 2^30 should overflow more than once";
    EXPECT_GT(r.recordings, 1) << "each back-off of the loss scale needs a new recording";
  } else {
    EXPECT_EQ(r.recordings, 1);
  }
  const double loss_bound = std::max(4 * relative_difference(a.step_losses, b.step_losses), 1e-6);
  const double param_bound = std::max(4 * relative_difference(a.params, b.params), 1e-6);
  const double buffer_bound = std::max(4 * relative_difference(a.buffers, b.buffers), 1e-6);
  EXPECT_LE(relative_difference(a.step_losses, r.step_losses), loss_bound);
  EXPECT_LE(relative_difference(a.params, r.params), param_bound);
  EXPECT_LE(relative_difference(a.buffers, r.buffers), buffer_bound);
}

INSTANTIATE_TEST_SUITE_P(Precisions, GpuTraining, ::testing::Values("fp32", "tf32", "bf16", "fp16"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

// The long-run features whose GPU code is the CPU's arithmetic on other kernels: LARS (its norms
// from the agreed sums of squares on the device, the rate inside the momentum buffer), gradient
// clipping (the device's sum of squares), frozen layers (Note [Frozen layers] in nn/graph.h:
// eval-mode batch norm's backward, a shorter gradient arena) and accumulation (the device's
// accumulate op in the grad-ready hook). In float32 the GPU trains as the CPU does, within ten times the CPU's own
// spread (its thread count changed; Note [Batch-norm conditioning]) over the first steps, where
// a wrong update shows at once, and within 5% over the whole run, where a wrong one would have
// taken the loss elsewhere. Dropout is off: its mask is checked by GpuParity.DropoutDrawsTheCpuMask.
class GpuLongRunFeature : public GpuTraining {};

Config with_feature(Config c, const std::string& feature) {
  c.model.dropout = 0;
  if (feature == "lars") {
    c.train.optimizer = OptimizerKind::kLars;
    c.train.lr_per_256 = 2.0;  // LARS scales each tensor's step by its trust ratio (0.001 by default)
  } else if (feature == "clip") {
    c.train.clip_grad_norm = 0.05;  // below the gradients' norm, so that clipping acts at every step
  } else if (feature == "freeze") {
    c.finetune.freeze = "features.0,features.1";  // the first convolution and its batch norm (eval mode)
    c.finetune.head_lr_scale = 2;
  } else {
    c.train.accumulate_steps = 2;
    c.train.batch_per_rank = 16;  // 2 micro-batches of 16 make the 32 of a step
  }
  return c;
}

TEST_P(GpuLongRunFeature, TrainsAsTheCpuDoes) {
  Config cpu = with_feature(synthetic_config(root_), GetParam());
  Config cpu_one_thread = cpu;
  cpu_one_thread.train.threads = 1;
  Config gpu = cpu;
  gpu.train.device = Device::kCuda;
  const std::vector<double> a = train(Trainer(cpu, log_, World::get())).step_losses;
  const std::vector<double> b = train(Trainer(cpu_one_thread, log_, World::get())).step_losses;
  const std::vector<double> g = train(Trainer(gpu, log_, World::get())).step_losses;
  ASSERT_EQ(a.size(), 40u);  // 2 epochs of 640 images at 32 a step
  ASSERT_EQ(g.size(), a.size());
  const auto first = [](const std::vector<double>& v) { return std::vector<double>(v.begin(), v.begin() + 5); };
  const double spread = relative_difference(first(a), first(b));
  EXPECT_LE(relative_difference(first(a), first(g)), std::max(10 * spread, 1e-4))
      << "the GPU's first 5 losses against the CPU's; the CPU's own spread is " << spread;
  EXPECT_LE(relative_difference(a, g), 0.05) << "over the whole run";
  EXPECT_LT(g.back(), 0.8 * g.front()) << "the loss should fall";
}

INSTANTIATE_TEST_SUITE_P(Features, GpuLongRunFeature, ::testing::Values("lars", "clip", "freeze", "accumulate"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace rt::testing
