// The command line: argument parsing, and the ringtrain binary's exit status and messages on bad
// input (each names what was wrong and exits non-zero).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "app/cli.h"
#include "base/check.h"

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

TEST(ParseCli, SubcommandsAndResume) {
  const char* argv[] = {"ringtrain", "eval", "--config", "x.toml", "--resume", "runs/a"};
  const CliArgs a = parse_cli(6, argv);
  EXPECT_EQ(a.command, "eval");
  EXPECT_EQ(a.resume_dir, "runs/a");
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
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("cannot read config '/nonexistent/ringtrain.toml'"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, MisspeltKeySuggestsTheNearOne) {
  const fs::path p = write_config("misspelt.toml", "[train]\nepohcs = 3\n");
  const ProcessResult r = ringtrain("--config " + p.string());
  fs::remove(p);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find(":2: unknown key 'train.epohcs'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("train.epochs"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, NegativeBatchFromSetIsRejected) {
  const fs::path p = write_config("ok.toml", "[train]\nepochs = 1\n");
  const ProcessResult r = ringtrain("--config " + p.string() + " --set train.batch_per_rank=-8");
  fs::remove(p);
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("train.batch_per_rank"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, UnknownModelListsTheValidOnes) {
  const fs::path p = write_config("model.toml", "[model]\nname = \"resnet9000\"\n[checkpoint]\ndir = \"" +
                                                    (fs::temp_directory_path() / "ringtrain_cli_model").string() + "\"\n");
  const ProcessResult r = ringtrain("--config " + p.string());
  fs::remove(p);
  fs::remove_all(fs::temp_directory_path() / "ringtrain_cli_model");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("unknown model 'resnet9000'"), std::string::npos) << r.output;
  EXPECT_NE(r.output.find("lenet"), std::string::npos) << r.output;
}

TEST(RingtrainBinary, MissingDataFolderNamesTheFile) {
  const fs::path p = write_config("data.toml", "[data]\ndir = \"/nonexistent-data\"\n[checkpoint]\ndir = \"" +
                                                   (fs::temp_directory_path() / "ringtrain_cli_data").string() + "\"\n");
  const ProcessResult r = ringtrain("--config " + p.string());
  fs::remove(p);
  fs::remove_all(fs::temp_directory_path() / "ringtrain_cli_data");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("/nonexistent-data/train-images-idx3-ubyte.gz"), std::string::npos) << r.output;
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
  const size_t at = r.output.find("total  params 44549160  macs per image ");  // REFERENCE.md: 44,549,160
  ASSERT_NE(at, std::string::npos) << r.output;
  const double macs = std::stod(r.output.substr(at + std::string("total  params 44549160  macs per image ").size()));
  EXPECT_NEAR(macs / 7.80e9, 1.0, 0.01);  // REFERENCE.md: 7.80 GMACs at 224x224
}

TEST(RingtrainBinary, InfoInputSizeMustBePositive) {
  const ProcessResult r = ringtrain("info --model vgg16 --input -3");
  EXPECT_EQ(r.status, 1);
  EXPECT_NE(r.output.find("--input expects a positive image size, got '-3'"), std::string::npos) << r.output;
}

}  // namespace
}  // namespace rt::testing
