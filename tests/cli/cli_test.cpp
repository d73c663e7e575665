// The command line: argument parsing, and the ringtrain binary's exit status and messages on bad
// input (each names what was wrong and exits non-zero).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "app/checkpoint.h"
#include "base/check.h"
#include "cli/cli.h"
#include "formats/safetensors.h"
#include "models/registry.h"
#include "nn/cpu_bf16.h"
#include "nn/device.h"

namespace rt::testing {
namespace {

namespace fs = std::filesystem;

struct ProcessResult {
  int status = -1;
  std::string output;
};

ProcessResult ringtrain(const std::string& args) {
  const std::string cmd = std::string(RT_BINARY_DIR) + "/ringtrain " + args + " 2>&1";
  ProcessResult r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  r.status = WEXITSTATUS(pclose(p));
  return r;
}

fs::path write_config(const std::string& name, const std::string& text) {
  const fs::path p = fs::temp_directory_path() / ("ringtrain_cli_" + std::to_string(::getpid()) + "_" + name);
  std::ofstream(p) << text;
  return p;
}

TEST(ParseCli, TrainIsTheDefaultCommand) {
  const char* argv[] = {"ringtrain", "--config", "x.toml", "--set", "train.epochs=1", "--set=model.name=lenet"};
  const CliArgs a = parse_cli(6, argv);
  EXPECT_EQ(a.command, "train");
  EXPECT_EQ(a.config_path, "x.toml");
  EXPECT_EQ(a.overrides, (std::vector<std::string>{"train.epochs=1", "model.name=lenet"}));
}

TEST(ParseCli, TheEnvironmentsOverridesComeAfterTheCommandLines) {
  const char* argv[] = {"ringtrain", "--config", "x.toml", "--set", "train.epochs=5"};
  ::setenv("RINGTRAIN_SET", " train.epochs=1  log.progress=none ", 1);
  const CliArgs a = parse_cli(5, argv);
  ::unsetenv("RINGTRAIN_SET");
  EXPECT_EQ(a.overrides, (std::vector<std::string>{"train.epochs=5", "train.epochs=1", "log.progress=none"}));
  EXPECT_EQ(parse_cli(5, argv).overrides, std::vector<std::string>{"train.epochs=5"});
}

TEST(ParseCli, SubcommandsAndResume) {
  const char* argv[] = {"ringtrain", "eval", "--config", "x.toml", "--resume", "runs/a"};
  const CliArgs a = parse_cli(6, argv);
  EXPECT_EQ(a.command, "eval");
  EXPECT_EQ(a.resume_dir, "runs/a");
}

TEST(ParseCli, PredictTakesEveryPathAfterImageUntilTheNextFlag) {
  const char* argv[] = {"ringtrain", "predict",   "--image",       "a.png",   "b c.jpg", "--config",
                        "x.toml",    "--weights", "w.safetensors", "--image", "d.bmp"};
  const CliArgs a = parse_cli(11, argv);
  EXPECT_EQ(a.command, "predict");
  EXPECT_EQ(a.images, (std::vector<std::string>{"a.png", "b c.jpg", "d.bmp"}));
  EXPECT_EQ(a.weights, "w.safetensors");
  const char* no_image[] = {"ringtrain", "predict", "--config", "x.toml", "--weights", "w"};
  EXPECT_THROW(parse_cli(6, no_image), Error);
}

TEST(ParseCli, UnknownArgumentAndMissingValueAreErrors) {
  const char* unknown[] = {"ringtrain", "--config", "x.toml", "--epochs", "3"};
  EXPECT_THROW(parse_cli(5, unknown), Error);
  const char* missing[] = {"ringtrain", "--config"};
  EXPECT_THROW(parse_cli(2, missing), Error);
  const char* no_config[] = {"ringtrain", "train"};
  EXPECT_THROW(parse_cli(2, no_config), Error);
}

TEST(RingtrainBinary, MissingConfigFileExitsNonZeroNamingIt) {
  const ProcessResult r = ringtrain("--config /nonexistent/ringtrain.toml");
  EXPECT_EQ(r.status, kExitConfigError);
  EXPECT_NE(r.output.find("cannot read config '/nonexistent/ringtrain.toml'"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, MisspeltKeySuggestsTheNearOne) {
  const fs::path p = write_config("misspelt.toml", "[train]\nepohcs = 3\n");
  const ProcessResult r = ringtrain("--config " + p.string());
  fs::remove(p);
  EXPECT_EQ(r.status, kExitConfigError);
  EXPECT_NE(r.output.find(":2: unknown key 'train.epohcs'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("train.epochs"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, NegativeBatchFromSetIsRejected) {
  const fs::path p = write_config("ok.toml", "[train]\nepochs = 1\n");
  const ProcessResult r = ringtrain("--config " + p.string() + " --set train.batch_per_rank=-8");
  fs::remove(p);
  EXPECT_EQ(r.status, kExitConfigError);
  EXPECT_NE(r.output.find("train.batch_per_rank"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, UnknownModelListsTheValidOnes) {
  const fs::path p =
      write_config("model.toml", "[model]\nname = \"resnet9000\"\n[checkpoint]\ndir = \"" +
                                     (fs::temp_directory_path() / "ringtrain_cli_model").string() + "\"\n");
  const ProcessResult r = ringtrain("--config " + p.string());
  fs::remove(p);
  fs::remove_all(fs::temp_directory_path() / "ringtrain_cli_model");
  EXPECT_EQ(r.status, kExitConfigError);
  EXPECT_NE(r.output.find("unknown model 'resnet9000'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lenet"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, MissingDataFolderNamesTheFile) {
  const fs::path p =
      write_config("data.toml", "[data]\ndir = \"/nonexistent-data\"\n[checkpoint]\ndir = \"" +
                                    (fs::temp_directory_path() / "ringtrain_cli_data").string() + "\"\n");
  const ProcessResult r = ringtrain("--config " + p.string());
  fs::remove(p);
  fs::remove_all(fs::temp_directory_path() / "ringtrain_cli_data");
  EXPECT_EQ(r.status, kExitDataError);
  EXPECT_NE(r.output.find("/nonexistent-data/train-images-idx3-ubyte.gz"), std::string::npos) << r.output;
}

// device = "cuda" where no GPU can run it stops at start, in the driver's own words (or saying the
// build has no CUDA), before any data is read.
TEST(RingtrainBinary, CudaWithoutAUsableGpuFailsAtStartInTheDriversWords) {
  std::string why;
  if (cuda_usable(&why)) GTEST_SKIP() << "a GPU is usable here";
  const fs::path runs = fs::temp_directory_path() / "ringtrain_cli_cuda";
  const fs::path p = write_config("cuda.toml",
                                  "[model]\nname = \"lenet\"\n[data]\ndir = \"/nonexistent-data\"\n"
                                  "[train]\ndevice = \"cuda\"\n[checkpoint]\ndir = \"" +
                                      runs.string() + "\"\n");
  const ProcessResult r = ringtrain("--config " + p.string());
  fs::remove(p);
  fs::remove_all(runs);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find(why), std::string::npos) << "expected: " << why << "\ngot: " << r.output;
  EXPECT_EQ(r.output.find("/nonexistent-data/train-images"), std::string::npos) << "read data first:\n" << r.output;
}

// A setting only the GPU honours, in a config that trains on the CPU: exit 78, the message naming it.
void expect_refused_on_the_cpu(const std::string& name, const std::string& setting, const std::string& why) {
  const fs::path runs = fs::temp_directory_path() / ("ringtrain_cli_" + name);
  const fs::path p = write_config(name + ".toml", setting + "[checkpoint]\ndir = \"" + runs.string() + "\"\n");
  const ProcessResult r = ringtrain("--config " + p.string());
  fs::remove(p);
  fs::remove_all(runs);
  EXPECT_EQ(r.status, kExitConfigError);
  EXPECT_NE(r.output.find(why), std::string::npos) << r.output;
}

TEST(RingtrainBinary, Tf32OnTheCpuIsRefused) {
  expect_refused_on_the_cpu("tf32", "[train]\nprecision = \"tf32\"\n",
                            "train.precision = \"tf32\" applies to device = \"cuda\" only");
}

TEST(RingtrainBinary, CudnnGraphApiOnTheCpuIsRefused) {
  expect_refused_on_the_cpu("cudnn_graph", "[train]\ncudnn_graph = \"where_faster\"\n",
                            "train.cudnn_graph = \"where_faster\" applies to device = \"cuda\" only");
}

TEST(RingtrainBinary, NcclOnTheCpuIsRefusedEvenOnOneRank) {
  expect_refused_on_the_cpu("nccl", "[dist]\nallreduce = \"nccl\"\n",
                            "dist.allreduce = \"nccl\" needs train.device = \"cuda\"");
}

TEST(RingtrainBinary, CudaGraphOnTheCpuIsRefused) {
  expect_refused_on_the_cpu("cuda_graph", "[train]\ncuda_graph = true\n",
                            "train.cuda_graph = true needs train.device = \"cuda\"");
}

// bench --profile writes one line per layer; simulate --profile reads it back and predicts the
// one-rank step as the profile's own sum.
TEST(RingtrainBinary, BenchProfileFeedsSimulate) {
  const fs::path dir = fs::temp_directory_path() / "ringtrain_cli_profile";
  fs::create_directories(dir);
  const fs::path config = write_config("profile.toml",
                                       "[model]\nname = \"lenet\"\n[data]\nsource = \"synthetic\"\n"
                                       "[train]\nbatch_per_rank = 4\nthreads = 1\n"
                                       "[bench]\nwarmup_steps = 1\nwindows = 2\nsteps_per_window = 2\n");
  const fs::path profile = dir / "lenet.profile", cluster = dir / "cluster.toml";
  const ProcessResult bench = ringtrain("bench --config " + config.string() + " --profile " + profile.string());
  ASSERT_EQ(bench.status, 0) << bench.output;
  EXPECT_NE(bench.output.find("bench: profile of 2 steps"), std::string::npos) << bench.output;
  std::ofstream(cluster) << "ranks_per_host = 2\n[intra_host]\ngbit_per_s = 80\nlatency_us = 1\n"
                            "[inter_host]\ngbit_per_s = 1\nlatency_us = 50\n";
  const ProcessResult sim = ringtrain("simulate --config " + config.string() + " --ranks 1,4 --network " +
                                      cluster.string() + " --profile " + profile.string());
  fs::remove(config);
  fs::remove_all(dir);
  ASSERT_EQ(sim.status, 0) << sim.output;
  EXPECT_NE(sim.output.find("(measured per layer: "), std::string::npos) << sim.output;
  // Row "1 1 step ..." then "4 2 ...": four ranks over a 1 Gbit/s link take longer than one.
  std::istringstream rows(sim.output);
  std::string line;
  std::vector<double> step_ms;
  while (std::getline(rows, line))
    if (!line.empty() && line[0] != '#') {
      std::istringstream f(line);
      int ranks = 0, hosts = 0;
      double step = 0;
      f >> ranks >> hosts >> step;
      step_ms.push_back(step);
    }
  ASSERT_EQ(step_ms.size(), 2u) << sim.output;
  EXPECT_GT(step_ms[1], step_ms[0]) << sim.output;
}

TEST(RingtrainBinary, InfoListsTheModelsAndExitsZero) {
  const ProcessResult r = ringtrain("info");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("resnet_mini"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("oneDNN 2."), std::string::npos) << r.output;
}

TEST(RingtrainBinary, InfoModelPrintsTheLayerTableWithReferenceTotals) {
  const ProcessResult r = ringtrain("info --model resnet101");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("layer4.2.conv3  conv2d  (1, 2048, 7, 7)"), std::string::npos) << r.output;
  const size_t at = r.output.find("total  params 44549160  macs per image ");  // torchvision's count: 44,549,160
  ASSERT_NE(at, std::string::npos) << r.output;
  const double macs = std::stod(r.output.substr(at + std::string("total  params 44549160  macs per image ").size()));
  EXPECT_NEAR(macs / 7.80e9, 1.0, 0.01);  // torchvision's table: 7.80 GFLOPS (multiply-adds) at 224x224
}

// The recipe in words, each figure as the config file wrote it.
TEST(RingtrainBinary, InfoConfigSaysTheOptimizerAndTheSchedule) {
  const fs::path p = write_config("recipe.toml",
                                  "[model]\nname = \"lenet\"\n[train]\nepochs = 56\noptimizer = \"lars\"\n"
                                  "trust_coefficient = 0.002\nmomentum = 0.94\nweight_decay = 2.5e-5\n"
                                  "lr_per_256 = 0.165625\n[schedule]\nkind = \"poly\"\nwarmup_epochs = 16\n"
                                  "power = 2.0\nfinal_fraction = 0.001\n");
  const ProcessResult r = ringtrain("info --config " + p.string());
  const ProcessResult step = ringtrain("info --config " + p.string() +
                                       " --set train.optimizer=sgd --set schedule.kind=step --set "
                                       "schedule.warmup_epochs=0 --set schedule.milestones=[30,45]");
  fs::remove(p);
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("optimizer: lars (trust coefficient 0.002, epsilon 0), momentum 0.94, weight decay 2.5e-05 "
                          "(biases and batch norm: neither trust ratio nor decay), 0.165625 per 256 images\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("schedule: linear warmup over 16 epochs, then poly decay (power 2) to 0.001 x the rate at "
                          "epoch 56\n"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(step.status, 0) << step.output;
  EXPECT_NE(step.output.find("optimizer: sgd, momentum 0.94"), std::string::npos) << step.output;
  EXPECT_NE(step.output.find("schedule: x 0.1 at epochs 30, 45\n"), std::string::npos) << step.output;
  EXPECT_NE(r.output.find("batch norm: statistics over each rank's "), std::string::npos) << r.output;
  const ProcessResult grouped = ringtrain("info --config " + std::string(RT_SOURCE_DIR) +
                                          "/configs/large_batch/resnet50_32k.toml --set model.name=lenet --input 32");
  EXPECT_NE(grouped.output.find("batch norm: statistics pooled over groups of 2 ranks (train.bn_group), 128 images "
                                "each\n"),
            std::string::npos)
      << grouped.output;
  EXPECT_NE(grouped.output.find("base rate 21.2 for the global batch"), std::string::npos) << grouped.output;
  EXPECT_NE(grouped.output.find("schedule: linear warmup over 16 epochs, then poly decay (power 2) to the rate 0.0001 "
                                "over 2267 steps after warmup, then held\n"),
            std::string::npos)
      << grouped.output;
}

// dist.compression: the tensors PowerSGD compresses, each at k (n + m) floats, and the step's total:
// LeNet's 4 weights of 2+ dimensions but the first convolution's (6 x 25 at rank 4 is not below
// half of 150), and 386 floats of the rest (biases, that convolution) as they are.
TEST(RingtrainBinary, InfoConfigListsTheTensorsPowerSgdCompresses) {
  const ProcessResult r =
      ringtrain("info --config " + std::string(RT_SOURCE_DIR) +
                "/configs/fashion_mnist.toml --set model.name=lenet --set dist.compression=powersgd");
  EXPECT_EQ(r.status, 0) << r.output;
  EXPECT_NE(r.output.find("  PowerSGD (dist.compression) at rank 4 from step 1001, where n m > 2 x k (n + m):\n"),
            std::string::npos)
      << r.output;
  EXPECT_NE(r.output.find("    features.3.weight (16, 6, 5, 5): 16 x 150 at rank 4, 664 floats instead of 2400\n"),
            std::string::npos)
      << r.output;
  EXPECT_EQ(r.output.find("features.0.weight ("), std::string::npos) << r.output;
  const int64_t sent = 664 + 4 * (120 + 400) + 4 * (84 + 120) + 4 * (10 + 84) + 150 + 6 + 16 + 120 + 84 + 10;
  EXPECT_NE(r.output.find(str_cat("4 of 10 tensors compressed: a rank averages ", sent * 4 / 1e6, " MB a step")),
            std::string::npos)
      << r.output;
}

// `info` plans the model in the precision the config trains in: its layer table marks Winograd on
// the convolutions `bench` runs with Winograd, in float32 and in bf16 (where ours runs only from 256
// channels: resnet_mini has none, so both count 0; tests/nn/cpu_bf16_test.cpp checks the choice).
TEST(RingtrainBinary, InfoMarksWinogradWhereBenchRunsItInEitherPrecision) {
  const std::string config = "--config " + std::string(RT_SOURCE_DIR) +
                             "/configs/fashion_mnist.toml --set train.conv_algorithm=winograd "
                             "--set train.bf16_emulation=true --set train.threads=1";
  const auto count_rows = [](const std::string& out) {
    int64_t rows = 0;
    for (size_t at = out.find("  winograd\n"); at != std::string::npos; at = out.find("  winograd\n", at + 1)) ++rows;
    return rows;
  };
  for (const char* precision : {"fp32", "bf16"}) {
    SCOPED_TRACE(precision);
    if (std::string(precision) == "bf16" && !cpu_bf16().runs) continue;  // bf16 is refused below AVX-512
    const std::string set = str_cat(" --set train.precision=", precision);
    const ProcessResult info = ringtrain("info " + config + set);
    const ProcessResult bench =
        ringtrain("bench " + config + set +
                  " --set bench.warmup_steps=0 --set bench.windows=2 --set bench.steps_per_window=1 "
                  "--set log.progress=none");
    ASSERT_EQ(info.status, 0) << info.output;
    ASSERT_EQ(bench.status, 0) << bench.output;
    const size_t at = bench.output.find("Winograd on ");
    ASSERT_NE(at, std::string::npos) << bench.output;
    EXPECT_EQ(count_rows(info.output), std::stoll(bench.output.substr(at + std::string("Winograd on ").size())))
        << info.output << bench.output;
    EXPECT_EQ(info.output.find(" parameters, in bf16:") != std::string::npos, std::string(precision) == "bf16")
        << info.output;
  }
}

TEST(RingtrainBinary, InfoInputSizeMustBePositive) {
  const ProcessResult r = ringtrain("info --model vgg16 --input -3");
  EXPECT_EQ(r.status, kExitConfigError);
  EXPECT_NE(r.output.find("--input expects a positive image size, got '-3'"), std::string::npos) << r.output;
}

// ---- forward and bench ----

// A temporary folder with lenet's initial weights and a batch of `n` 1x`side`x`side` images.
struct ForwardFiles {
  fs::path dir, weights, batch, out;
  ForwardFiles(const std::string& tag, int64_t side, bool with_target) {
    dir = fs::temp_directory_path() / ("ringtrain_cli_forward_" + std::to_string(::getpid()) + "_" + tag);
    fs::create_directories(dir);
    weights = dir / "w.safetensors", batch = dir / "b.safetensors", out = dir / "o.safetensors";
    ModelOptions o;
    o.num_classes = 10;
    auto g = build_model("lenet", o);
    g->plan(1, Device::kCpu);
    g->init_parameters(1);
    write_safetensors(weights.string(), model_state(*g));
    StFile b;
    const std::vector<float> pixels(static_cast<size_t>(2 * side * side), 0.5f);
    b.tensors.push_back({"input", make_f32_tensor({2, 1, side, side}, pixels.data())});
    if (with_target) {
      StTensor t;
      t.dtype = DType::kI64;
      t.shape = {2};
      t.bytes.assign(16, 0);
      t.bytes[8] = 3;  // targets 0 and 3
      b.tensors.push_back({"target", t});
    }
    write_safetensors(batch.string(), b);
  }
  ~ForwardFiles() { fs::remove_all(dir); }
  std::string args(const std::string& model) const {
    return "forward --model " + model + " --set model.num_classes=10 --weights " + weights.string() + " --batch " +
           batch.string() + " --out " + out.string();
  }
};

TEST(RingtrainBinary, ForwardWritesLogitsLossAndEveryGradient) {
  const ForwardFiles f("ok", 28, true);
  const ProcessResult r = ringtrain(f.args("lenet") + " --backward");
  ASSERT_EQ(r.status, 0) << r.output;
  const StFile out = read_safetensors(f.out.string());
  ASSERT_NE(out.find("logits"), nullptr);
  EXPECT_EQ(out.find("logits")->shape, (std::vector<int64_t>{2, 10}));
  ASSERT_NE(out.find("loss"), nullptr);
  EXPECT_NE(out.find("grad.features.0.weight"), nullptr);
  EXPECT_NE(out.find("grad.classifier.4.bias"), nullptr);
}

TEST(RingtrainBinary, ForwardWithAnotherModelsWeightsListsTheMismatchesWithShapes) {
  const ForwardFiles f("mismatch", 28, true);
  const ProcessResult r = ringtrain(f.args("simple_cnn"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("do not match the model"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("missing 'classifier.3.weight' (10, 128)"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("more"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, ForwardOnATruncatedWeightsFileNamesIt) {
  const ForwardFiles f("truncated", 28, true);
  fs::resize_file(f.weights, fs::file_size(f.weights) - 100);
  const ProcessResult r = ringtrain(f.args("lenet"));
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find(f.weights.string()), std::string::npos) << r.output;
}

TEST(RingtrainBinary, ForwardBackwardWithoutTargetsIsAnError) {
  const ForwardFiles f("notarget", 28, false);
  const ProcessResult r = ringtrain(f.args("lenet") + " --backward");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("--backward needs a tensor 'target'"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, ForwardRefusesAnInputBelowTheModelsMinimum) {
  const ForwardFiles f("small", 74, false);
  const ProcessResult r = ringtrain(f.args("inception_v3") + " --set model.aux_logits=false");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("at least 75x75"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, BenchPrintsWindowsAndAJsonRecordWhileTrainRefusesSyntheticData) {
  const fs::path p = write_config("bench.toml",
                                  "[model]\nname = \"lenet\"\n[data]\nsource = \"synthetic\"\n"
                                  "[train]\nbatch_per_rank = 4\n[bench]\nwarmup_steps = 1\nwindows = 3\n"
                                  "steps_per_window = 2\n");
  const ProcessResult bench = ringtrain("bench --config " + p.string());
  const ProcessResult train = ringtrain("--config " + p.string());
  fs::remove(p);
  EXPECT_EQ(bench.status, 0) << bench.output;
  EXPECT_NE(bench.output.find("bench: window 3: "), std::string::npos) << bench.output;
  EXPECT_NE(bench.output.find("{\"kind\":\"bench\",\"model\":\"lenet\",\"ranks\":1,"), std::string::npos)
      << bench.output;
  EXPECT_EQ(train.status, 1);
  EXPECT_NE(train.output.find("ringtrain bench"), std::string::npos) << train.output;
}

}  // namespace
}  // namespace rt::testing
