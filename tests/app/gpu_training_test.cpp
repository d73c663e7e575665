// The trainer end to end on the GPU (CTest label "gpu"): real Fashion-MNIST batches through the
// page-locked staging buffer, evaluation, and a checkpoint written from the GPU that the CPU
// backend reads back and scores alike. Without a usable GPU every test skips, saying why.
#include <gtest/gtest.h>

#include <filesystem>
#include <sstream>
#include <string>

#include "app/trainer.h"
#include "dist/world.h"
#include "nn/device.h"
#include "tests/app/synthetic_idx.h"

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
  c.train.device = "cuda";
  c.train.precision = GetParam();
  c.train.epochs = 1;
  c.train.batch_per_rank = 200;  // 300 steps
  c.train.lr_per_256 = 0.2;
  c.log.progress = "none";
  c.checkpoint.dir = (root_ / "run").string();
  const TrainResult r = Trainer(c, log_, World::get()).train();
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
  gpu.train.device = "cuda";
  gpu.train.precision = GetParam();
  const TrainResult trained = Trainer(gpu, log_, World::get()).train();
  ASSERT_EQ(trained.last_eval.samples, 160);

  Config cpu = gpu;
  cpu.train.device = "cpu";
  cpu.train.precision = "fp32";
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

INSTANTIATE_TEST_SUITE_P(Precisions, GpuTraining, ::testing::Values("fp32", "tf32", "bf16", "fp16"),
                         [](const ::testing::TestParamInfo<const char*>& i) { return std::string(i.param); });

}  // namespace
}  // namespace rt::testing
