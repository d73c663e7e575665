// Tests of config/config: strict loading (each error's message is checked, since users read them),
// --set overrides, and to_toml's exact round trip.
#include "config/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <tuple>
#include <vector>

#include "base/check.h"
#include "config/batch_shape.h"
#include "config/config_schema.h"
#include "data/image_decode.h"

namespace rt {
namespace {

// The message parse_config throws for `text`, or "" when it loads.
std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {}) {
  try {
    parse_config(text, "run.toml", overrides);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

#define EXPECT_CONTAINS(haystack, needle)                          \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) \
      << "expected to find: " << (needle) << "\nin: " << (haystack)

// A temporary file removed when the test ends.
struct TempFile {
  explicit TempFile(const std::string& text)
      : path((std::filesystem::temp_directory_path() /
              ("rt_config_test_" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "_" +
               ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".toml"))
                 .string()) {
    std::ofstream(path) << text;
  }
  ~TempFile() { std::remove(path.c_str()); }
  std::string path;
};

// ---- Reading files ----

TEST(ConfigLoad, MissingFileNamesPathAndReason) {
  try {
    load_config("/nonexistent/dir/run.toml");
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "cannot read config '/nonexistent/dir/run.toml': No such file or directory");
  }
}

TEST(ConfigLoad, DirectoryIsNotReadableAsConfig) {
  std::string dir = std::filesystem::temp_directory_path().string();
  try {
    load_config(dir);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot read config '" + dir + "': Is a directory");
  }
}

TEST(ConfigLoad, ReadsFileFromDiskAndAppliesOverrides) {
  TempFile file("[train]\nepochs = 3\n");
  Config c = load_config(file.path, {"train.seed=7"});
  EXPECT_EQ(c.train.epochs, 3);
  EXPECT_EQ(c.train.seed, 7);
}

TEST(ConfigLoad, FileErrorsNameTheFilePath) {
  TempFile file("[train]\n\nepochs = \"many\"\n");
  try {
    load_config(file.path);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), file.path + ":3: 'train.epochs' expects an integer, got a string");
  }
}

TEST(ConfigLoad, MalformedTomlNamesFileLineAndColumn) {
  std::string e = error_of("[train]\nepochs = 3\nseed = = 4\n");
  EXPECT_EQ(e.rfind("run.toml:3:", 0), 0u) << e;
  EXPECT_CONTAINS(e, "run.toml:3:8: ");
  EXPECT_GT(e.size(), std::string("run.toml:3:8: ").size()) << "no description from toml++";
}

TEST(ConfigLoad, DuplicateKeyIsATomlError) {
  EXPECT_CONTAINS(error_of("[train]\nepochs = 3\nepochs = 4\n"), "run.toml:3:");
}

// ---- Defaults and values ----

TEST(ConfigLoad, EmptyFileGivesTheDefaults) { EXPECT_EQ(parse_config("", "run.toml"), Config{}); }

TEST(ConfigLoad, FewKeysSetThoseAndLeaveTheRestAtDefaults) {
  Config c = parse_config(
      "[model]\nname = \"resnet8\"\n[train]\nlr_per_256 = 0.4\nnesterov = true\n"
      "[data]\nmean = [0.5, 0.25, 0.125]\nstd = [1, 2, 3]\n",
      "run.toml");
  Config expected;
  expected.model.name = "resnet8";
  expected.train.lr_per_256 = 0.4;
  expected.train.nesterov = true;
  expected.data.mean = {0.5, 0.25, 0.125};
  expected.data.std = {1.0, 2.0, 3.0};
  EXPECT_EQ(c, expected);
}

TEST(ConfigLoad, DottedKeysAndInlineTablesWorkLikeTables) {
  Config c = parse_config("train.epochs = 9\neval = { batch = 100 }\n", "run.toml");
  EXPECT_EQ(c.train.epochs, 9);
  EXPECT_EQ(c.eval.batch, 100);
}

TEST(ConfigLoad, IntegerIsAcceptedWhereAFloatIsExpected) {
  Config c = parse_config("[schedule]\nwarmup_epochs = 2\nmilestones = [3, 4.5]\n", "run.toml");
  EXPECT_EQ(c.schedule.warmup_epochs, 2.0);
  EXPECT_EQ(c.schedule.milestones, (std::vector<double>{3.0, 4.5}));
}

// ---- Unknown names ----

TEST(ConfigLoad, UnknownKeySuggestsTheNearOne) {
  EXPECT_EQ(error_of("[train]\nepochs = 3\nlerning_rate = 0.1\n"),
            "run.toml:3: unknown key 'train.lerning_rate' (did you mean 'train.lr_per_256'?)");
  EXPECT_EQ(error_of("[train]\nmomentun = 0.8\n"),
            "run.toml:2: unknown key 'train.momentun' (did you mean 'train.momentum'?)");
}

TEST(ConfigLoad, UnknownKeySuggestsAKeyThatContainsIt) {
  EXPECT_CONTAINS(error_of("[model]\nclasses = 3\n"), "(did you mean 'model.num_classes'?)");
  EXPECT_CONTAINS(error_of("[train]\nbatch = 3\n"), "(did you mean 'train.batch_per_rank' or 'eval.batch'?)");
}

TEST(ConfigLoad, KeyInTheWrongTableSuggestsTheRightTable) {
  EXPECT_EQ(error_of("[train]\ndir = \"x\"\n"),
            "run.toml:2: unknown key 'train.dir' (did you mean 'data.dir' or 'checkpoint.dir'?)");
  EXPECT_CONTAINS(error_of("[eval]\nepochs = 3\n"), "(did you mean 'eval.every_epochs' or 'train.epochs'?)");
}

TEST(ConfigLoad, UnknownKeyWithNothingNearListsTheTableKeys) {
  EXPECT_EQ(
      error_of("[eval]\nzzzzzz = 1\n"),
      "run.toml:2: unknown key 'eval.zzzzzz' (keys of [eval] are: batch, every_epochs, offset_epochs, target_top1)");
}

TEST(ConfigLoad, UnknownTableSuggestsTheNearOne) {
  EXPECT_EQ(error_of("[trian]\nepochs = 3\n"), "run.toml:1: unknown table 'trian' (did you mean 'train'?)");
  EXPECT_CONTAINS(
      error_of("[optimizer]\nlr = 3\n"),
      "unknown table 'optimizer' (tables are: model, data, train, finetune, schedule, dist, bench, eval, log, "
      "checkpoint, mlperf)");
}

TEST(ConfigLoad, KeyOutsideAnyTableIsAnError) {
  EXPECT_EQ(error_of("epochs = 3\n[train]\nseed = 2\n"),
            "run.toml:1: key 'epochs' is outside any table; every key belongs to one of: model, data, "
            "train, finetune, schedule, dist, bench, eval, log, checkpoint, mlperf (did you mean 'train.epochs'?)");
}

TEST(ConfigLoad, TableNameHoldingAPlainValueIsAnError) {
  EXPECT_EQ(error_of("train = 5\n"), "run.toml:1: 'train' must be a table ([train]), got an integer");
  EXPECT_CONTAINS(error_of("[[train]]\nepochs = 5\n"), "'train' must be a table ([train]), got an array");
}

TEST(ConfigLoad, NestedTableInsideATableIsAnUnknownKey) {
  EXPECT_CONTAINS(error_of("[train.extra]\nx = 1\n"), "unknown key 'train.extra'");
}

// ---- Types ----

TEST(ConfigLoad, WrongTypeNamesExpectedAndActual) {
  EXPECT_EQ(error_of("[train]\nepochs = \"5\"\n"), "run.toml:2: 'train.epochs' expects an integer, got a string");
  EXPECT_EQ(error_of("[train]\nnesterov = 1\n"), "run.toml:2: 'train.nesterov' expects a boolean, got an integer");
  EXPECT_EQ(error_of("[model]\nname = 3\n"), "run.toml:2: 'model.name' expects a string, got an integer");
  EXPECT_EQ(error_of("[train]\nlr_per_256 = \"0.1\"\n"),
            "run.toml:2: 'train.lr_per_256' expects a number, got a string");
}

TEST(ConfigLoad, FloatIsRejectedWhereAnIntegerIsExpected) {
  EXPECT_EQ(error_of("[train]\nepochs = 5.0\n"), "run.toml:2: 'train.epochs' expects an integer, got a float");
}

TEST(ConfigLoad, ArrayKeysRejectScalarsAndNonNumbers) {
  EXPECT_EQ(error_of("[data]\nmean = 0.5\n"), "run.toml:2: 'data.mean' expects an array of numbers, got a float");
  EXPECT_EQ(error_of("[schedule]\nmilestones = [10, \"20\"]\n"),
            "run.toml:2: 'schedule.milestones' expects an array of numbers, got an array holding a "
            "string "
            "at index 1");
}

// ---- Ranges, choices and cross-key rules ----

TEST(ConfigLoad, OutOfRangeNamesValueAndBound) {
  EXPECT_EQ(error_of("[train]\nbatch_per_rank = -4\n"),
            "run.toml:2: 'train.batch_per_rank' = -4 is out of range: expected >= 1");
}

TEST(ConfigLoad, NegativeOrZeroLearningRateIsRejected) {
  EXPECT_EQ(error_of("[train]\nlr_per_256 = -0.1\n"),
            "run.toml:2: 'train.lr_per_256' = -0.1 is out of range: expected >= 0");
  EXPECT_CONTAINS(error_of("[train]\nlr_per_256 = 0\n"),
                  "no learning rate: give train.lr_per_256 (scaled by the global batch) or train.lr");
}

// MLPerf's reference points give a rate for a global batch: train.lr takes it as it is, and the
// resolved config (every key present) reads back.
TEST(ConfigRules, AnAbsoluteRateReplacesThePer256OneAndBothAreRefused) {
  const Config c = parse_config("[train]\nlr = 21.2\n", "run.toml");
  EXPECT_EQ(c.train.lr, 21.2);
  EXPECT_EQ(c.train.lr_per_256, 0);
  EXPECT_EQ(parse_config(to_toml(c), "config.toml"), c);
  EXPECT_EQ(error_of("[train]\nlr = 21.2\nlr_per_256 = 0.1\n"),
            "run.toml:3: train.lr = 21.2 gives the rate for the whole global batch and train.lr_per_256 = 0.1 one "
            "scaled by it: give one of the two (the other = 0)");
  EXPECT_EQ(error_of("[schedule]\ndecay_epochs = 40\ndecay_steps = 2267\n"),
            "run.toml:3: schedule.decay_epochs = 40 and schedule.decay_steps = 2267 both give the decay's length: give "
            "one of the two");
  EXPECT_EQ(error_of("[schedule]\nend_lr = 0.0001\nfinal_fraction = 0.01\n"),
            "run.toml:3: schedule.end_lr = 0.0001 and schedule.final_fraction = 0.01 both give the final rate: give "
            "one of the two");
}

TEST(ConfigRules, TheMlperfLogNeedsWhatItsRulesAsk) {
  const std::string ok =
      "[model]\nname = \"resnet50\"\n[schedule]\nkind = \"poly\"\n[eval]\ntarget_top1 = 0.759\n[log]\nmlperf = "
      "true\n[mlperf]\nsubmission_org = \"us\"\nsubmission_platform = \"8 hosts\"\n";
  EXPECT_EQ(error_of(ok), "");
  EXPECT_CONTAINS(error_of(ok, {"mlperf.submission_org=\"\""}), "set mlperf.submission_org");
  EXPECT_CONTAINS(error_of(ok, {"mlperf.submission_status=lab"}),
                  "'mlperf.submission_status' = \"lab\" is not one of: onprem, cloud, preview, research");
  EXPECT_CONTAINS(error_of(ok, {"mlperf.submission_division=closd"}),
                  "'mlperf.submission_division' = \"closd\" is not one of: closed, open (did you mean");
  EXPECT_CONTAINS(error_of(ok, {"eval.target_top1=0"}), "set eval.target_top1 (ResNet-50: 0.759)");
  EXPECT_CONTAINS(error_of(ok, {"schedule.kind=cosine"}), "name a polynomial decay");
  EXPECT_CONTAINS(error_of(ok, {"model.name=vgg16"}), "closed division trains ResNet-50");
  // The open division may train another model: the mission's ResNet-101 recipe writes its log.
  EXPECT_EQ(error_of(ok, {"model.name=resnet101", "mlperf.submission_division=open"}), "");
}

TEST(ConfigLoad, EveryBoundRejectsTheValueJustOutside) {
  struct Case {
    std::string text, message;
  };
  std::vector<Case> cases = {
      {"[model]\nnum_classes = 1", "'model.num_classes' = 1 is out of range: expected >= 2"},
      {"[model]\ndropout = 1.0", "'model.dropout' = 1.0 is out of range: expected in [0, 1)"},
      {"[model]\ndropout = -0.1", "'model.dropout' = -0.1 is out of range: expected in [0, 1)"},
      {"[train]\nepochs = 0", "'train.epochs' = 0 is out of range: expected >= 1"},
      {"[train]\nmomentum = 1", "'train.momentum' = 1.0 is out of range: expected in [0, 1)"},
      {"[train]\nweight_decay = -1e-4", "'train.weight_decay' = -0.0001 is out of range: expected >= 0"},
      {"[train]\nlabel_smoothing = 1", "'train.label_smoothing' = 1.0 is out of range: expected in [0, 1)"},
      {"[train]\nseed = -1", "'train.seed' = -1 is out of range: expected >= 0"},
      {"[train]\nthreads = -1", "'train.threads' = -1 is out of range: expected >= 0"},
      {"[schedule]\nwarmup_epochs = -1", "'schedule.warmup_epochs' = -1.0 is out of range: expected >= 0"},
      {"[schedule]\nfactor = 0", "'schedule.factor' = 0.0 is out of range: expected in (0, 1]"},
      {"[schedule]\nfactor = 1.5", "'schedule.factor' = 1.5 is out of range: expected in (0, 1]"},
      {"[schedule]\nfinal_fraction = 1.01", "'schedule.final_fraction' = 1.01 is out of range: expected in [0, 1]"},
      {"[schedule]\npower = 0", "'schedule.power' = 0.0 is out of range: expected > 0"},
      {"[schedule]\nkind = \"linear\"", "'schedule.kind' = \"linear\" is not one of: constant, step, cosine, poly"},
      {"[train]\noptimizer = \"adam\"", "'train.optimizer' = \"adam\" is not one of: sgd, lars"},
      {"[train]\ntrust_coefficient = -0.001", "'train.trust_coefficient' = -0.001 is out of range: expected > 0"},
      {"[train]\nlars_epsilon = -1e-9", "'train.lars_epsilon' = -1e-09 is out of range: expected >= 0"},
      {"[eval]\nbatch = 0", "'eval.batch' = 0 is out of range: expected >= 1"},
      {"[eval]\nevery_epochs = 0", "'eval.every_epochs' = 0 is out of range: expected >= 1"},
      {"[log]\nevery_steps = 0", "'log.every_steps' = 0 is out of range: expected >= 1"},
      {"[checkpoint]\nevery_epochs = 0", "'checkpoint.every_epochs' = 0 is out of range: expected >= 1"},
      {"[data]\nsource = \"mnist\"",
       "'data.source' = \"mnist\" is not one of: idx, imagefolder, synthetic, shards, tfrecord"},
      {"[data]\ntail = \"keep\"", "'data.tail' = \"keep\" is not one of: drop, pad"},
      {"[log]\nprogress = \"fancy\"", "'log.progress' = \"fancy\" is not one of: auto, bar, lines, none"},
      {"[train]\ndevice = \"gpu\"", "'train.device' = \"gpu\" is not one of: cpu, cuda"},
      {"[model]\nname = \"\"", "'model.name' must not be empty"},
      {"[checkpoint]\ndir = \"\"", "'checkpoint.dir' must not be empty"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.text);
    EXPECT_EQ(error_of(c.text + "\n"), "run.toml:2: " + c.message);
  }
}

TEST(ConfigLoad, EdgesInsideTheRangeAreAccepted) {
  Config c = parse_config(
      "[model]\nnum_classes = 2\ndropout = 0\n[train]\nmomentum = 0\nseed = 0\nthreads = 0\n"
      "weight_decay = 0\n[schedule]\nfactor = 1\nfinal_fraction = 1\n[log]\nmetrics = \"\"\n",
      "run.toml");
  EXPECT_EQ(c.schedule.factor, 1.0);
  EXPECT_EQ(c.log.metrics, "");
}

TEST(ConfigLoad, BadChoiceListsTheChoicesAndSuggestsTheNearOne) {
  EXPECT_EQ(error_of("[schedule]\nkind = \"cosin\"\n"),
            "run.toml:2: 'schedule.kind' = \"cosin\" is not one of: constant, step, cosine, poly "
            "(did you mean 'cosine'?)");
}

TEST(ConfigLoad, NonFiniteNumbersAreRejected) {
  EXPECT_EQ(error_of("[train]\nlr_per_256 = inf\n"), "run.toml:2: 'train.lr_per_256' = inf is not a finite number");
  EXPECT_EQ(error_of("[data]\nmean = [nan]\n"), "run.toml:2: 'data.mean[0]' = nan is not a finite number");
}

TEST(ConfigLoad, MeanAndStdMustHaveTheSameLength) {
  EXPECT_EQ(error_of("[data]\nmean = [0.5, 0.5, 0.5]\n"),
            "run.toml:2: 'data.mean' has 3 values but 'data.std' has 1: give one of each per channel");
  EXPECT_EQ(error_of("[data]\nmean = []\nstd = []\n"),
            "run.toml:2: 'data.mean' must hold at least one value\n"
            "run.toml:3: 'data.std' must hold at least one value");
}

TEST(ConfigLoad, StdMustBePositive) {
  EXPECT_EQ(error_of("[data]\nmean = [0.1, 0.2]\nstd = [0.3, 0]\n"),
            "run.toml:3: 'data.std[1]' = 0.0 is out of range: expected > 0");
}

TEST(ConfigLoad, MilestonesMustBePositiveAndStrictlyIncreasing) {
  EXPECT_EQ(error_of("[schedule]\nmilestones = [30, 20]\n"),
            "run.toml:2: 'schedule.milestones' = [30.0, 20.0] must be strictly increasing");
  EXPECT_CONTAINS(error_of("[schedule]\nmilestones = [10, 10]\n"), "must be strictly increasing");
  EXPECT_EQ(error_of("[schedule]\nmilestones = [0, 10]\n"),
            "run.toml:2: 'schedule.milestones[0]' = 0.0 is out of range: expected > 0");
}

// The rules that tie keys together are checked at load, whichever command reads the config, and
// reported at the line of the key to blame.
TEST(ConfigRules, TheGpuRingTakesEveryWireNcclOnlyFloat32AndMpiNothing) {
  const std::string cuda = "[train]\ndevice = \"cuda\"\n[dist]\n";
  for (const char* wire : {"fp32", "fp16", "bf16"}) EXPECT_EQ(error_of(cuda + "wire = \"" + wire + "\"\n"), "") << wire;
  EXPECT_EQ(error_of(cuda + "allreduce = \"nccl\"\n"), "");
  EXPECT_EQ(error_of(cuda + "allreduce = \"nccl\"\nwire = \"bf16\"\n"),
            "run.toml:5: dist.wire = \"bf16\" applies to ringtrain's ring; ncclAllReduce (dist.allreduce = \"nccl\") "
            "moves float32");
  EXPECT_EQ(error_of(cuda + "allreduce = \"mpi\"\n"),
            "run.toml:4: dist.allreduce = \"mpi\" moves host memory; with device = \"cuda\" use ring (ours, over "
            "NCCL point-to-point) or nccl (ncclAllReduce)");
  EXPECT_EQ(error_of(cuda + "transport = \"tcp\"\n"),
            "run.toml:4: dist.transport = \"tcp\" moves host memory; with device = \"cuda\" the ring moves GPU "
            "memory with NCCL (leave dist.transport = \"auto\")");
}

TEST(ConfigRules, PowerSgdRefusesFp16) {
  EXPECT_EQ(error_of("[dist]\ncompression = \"powersgd\"\n"), "");
  EXPECT_EQ(error_of("[dist]\ncompression = \"powersgd\"\nwire = \"bf16\"\nhierarchy = \"two_level\"\n"), "");
  EXPECT_EQ(error_of("[train]\ndevice = \"cuda\"\n[dist]\ncompression = \"powersgd\"\n"), "");
  EXPECT_CONTAINS(error_of("[train]\ndevice = \"cuda\"\nprecision = \"fp16\"\n[dist]\ncompression = \"powersgd\"\n"),
                  "run.toml:5: dist.compression = \"powersgd\" with train.precision = \"fp16\": a step whose scaled "
                  "gradients overflow would leave inf in every later step's error feedback");
  EXPECT_EQ(error_of("[dist]\npowersgd_rank = 0\n"),
            "run.toml:2: 'dist.powersgd_rank' = 0 is out of range: expected >= 1");
}

TEST(ConfigRules, LibraryAllreducesRefuseTheRingsOwnSettings) {
  EXPECT_EQ(error_of("[dist]\nallreduce = \"mpi\"\nhierarchy = \"two_level\"\nwire = \"fp16\"\n"),
            "run.toml:3: dist.hierarchy = \"two_level\" applies to ringtrain's ring; MPI_Allreduce (dist.allreduce = "
            "\"mpi\") runs the MPI library's own algorithm\n"
            "run.toml:4: dist.wire = \"fp16\" applies to ringtrain's ring; MPI_Allreduce (dist.allreduce = \"mpi\") "
            "sums in float32 on the wire");
  EXPECT_EQ(error_of("[train]\ndevice = \"cuda\"\n[dist]\nallreduce = \"nccl\"\nhierarchy = \"two_level\"\n"),
            "run.toml:5: dist.hierarchy = \"two_level\" applies to ringtrain's ring; ncclAllReduce (dist.allreduce = "
            "\"nccl\") chooses its own rings and trees");
  EXPECT_EQ(error_of("[dist]\nallreduce = \"mpi\"\n"), "");
}

TEST(ConfigRules, CudaGraphsReplayOneMicroBatchAndTheOverrideIsBlamed) {
  EXPECT_EQ(error_of("[train]\ndevice = \"cuda\"\ncuda_graph = true\naccumulate_steps = 2\n"),
            "run.toml:4: train.cuda_graph replays one forward and backward per step; with train.accumulate_steps = 2 "
            "leave it off");
  EXPECT_EQ(error_of("[train]\ndevice = \"cuda\"\ncuda_graph = true\nbn_group = 2\n"),
            "run.toml:4: train.cuda_graph replays a recorded step, and train.bn_group = 2 averages over NCCL calls the "
            "watchdog follows one by one: leave cuda_graph off");
  EXPECT_EQ(error_of("[train]\ndevice = \"cuda\"\nbn_group = 2\n"), "");
  EXPECT_EQ(error_of("[train]\nprecision = \"bf16\"\n", {"train.device=cuda"}), "");
  EXPECT_EQ(error_of("[train]\ndevice = \"cuda\"\nprecision = \"fp16\"\n", {"train.device=cpu"}),
            "--set train.device=cpu: train.precision = \"fp16\" applies to device = \"cuda\" only; the CPU computes "
            "in fp32 or bf16");
  // bf16 on the CPU passes the config's rules; whether this CPU runs it is decided at start.
  EXPECT_EQ(error_of("[train]\ndevice = \"cuda\"\nprecision = \"bf16\"\n", {"train.device=cpu"}), "");
  // A misspelt device is the one error: the rules are not judged against the default it left.
  EXPECT_EQ(error_of("[train]\ndevice = \"gpu\"\nprecision = \"bf16\"\n"),
            "run.toml:2: 'train.device' = \"gpu\" is not one of: cpu, cuda");
}

TEST(ConfigRules, AConfigMadeInCodeIsCheckedByTheSameRules) {
  Config c;
  EXPECT_NO_THROW(check_rules(c));
  c.train.cuda_graph = true;
  try {
    check_rules(c);
    ADD_FAILURE() << "cuda_graph on the CPU was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "train.cuda_graph = true needs train.device = \"cuda\": the CPU runs each op as it is called", 0),
              0u)
        << e.what();
  }
}

TEST(ConfigLoad, AllErrorsAreReportedInLineOrder) {
  EXPECT_EQ(error_of("[train]\nseed = -1\nepochs = \"x\"\n[model]\nnmae = \"a\"\n"),
            "run.toml:2: 'train.seed' = -1 is out of range: expected >= 0\n"
            "run.toml:3: 'train.epochs' expects an integer, got a string\n"
            "run.toml:5: unknown key 'model.nmae' (did you mean 'model.name'?)");
}

// ---- Overrides ----

TEST(ConfigOverride, OverrideWinsOverTheFile) {
  Config c = parse_config("[train]\nepochs = 3\nseed = 5\n", "run.toml", {"train.epochs=8"});
  EXPECT_EQ(c.train.epochs, 8);
  EXPECT_EQ(c.train.seed, 5);
}

TEST(ConfigOverride, LaterOverrideWinsOverEarlier) {
  Config c = parse_config("", "run.toml", {"train.epochs=8", "train.epochs = 9"});
  EXPECT_EQ(c.train.epochs, 9);
}

TEST(ConfigOverride, ValuesParseAsToml) {
  Config c = parse_config("", "run.toml",
                          {"data.mean=[0.5, 0.4]", "data.std=[1, 2]", "train.nesterov=true", "train.lr_per_256=1e-3",
                           "model.name=\"vgg11\"", "schedule.warmup_epochs=2"});
  EXPECT_EQ(c.data.mean, (std::vector<double>{0.5, 0.4}));
  EXPECT_EQ(c.data.std, (std::vector<double>{1.0, 2.0}));
  EXPECT_TRUE(c.train.nesterov);
  EXPECT_EQ(c.train.lr_per_256, 1e-3);
  EXPECT_EQ(c.model.name, "vgg11");
  EXPECT_EQ(c.schedule.warmup_epochs, 2.0);
}

TEST(ConfigOverride, BareWordIsTakenAsAString) {
  Config c = parse_config("", "run.toml", {"model.name=resnet8", "checkpoint.dir=runs/r1-b", "train.device=cuda"});
  EXPECT_EQ(c.model.name, "resnet8");
  EXPECT_EQ(c.checkpoint.dir, "runs/r1-b");
  EXPECT_EQ(c.train.device, Device::kCuda);
}

TEST(ConfigOverride, ErrorsNameTheOverrideNotTheFile) {
  EXPECT_EQ(error_of("", {"train.epochs=many"}),
            "--set train.epochs=many: 'train.epochs' expects an integer, got a string");
  EXPECT_EQ(error_of("", {"train.batch_per_rank=-4"}),
            "--set train.batch_per_rank=-4: 'train.batch_per_rank' = -4 is out of range: expected >= 1");
}

TEST(ConfigOverride, FinalValueIsTheOneValidated) {
  EXPECT_EQ(error_of("[train]\nbatch_per_rank = -4\n", {"train.batch_per_rank=8"}), "");
  EXPECT_EQ(error_of("[data]\nmean = [0.5, 0.5]\n", {"data.std=[1, 1, 1]"}),
            "--set data.std=[1, 1, 1]: 'data.mean' has 2 values but 'data.std' has 3: give one of "
            "each per "
            "channel");
}

TEST(ConfigOverride, UnknownKeySuggestsTheNearOne) {
  EXPECT_EQ(error_of("", {"train.lerning_rate=0.1"}),
            "--set train.lerning_rate=0.1: unknown key 'train.lerning_rate' (did you mean "
            "'train.lr_per_256'?)");
  EXPECT_EQ(error_of("", {"trian.epochs=2"}),
            "--set trian.epochs=2: unknown key 'trian.epochs' (did you mean 'train.epochs'?)");
}

TEST(ConfigOverride, MissingEqualsIsAnError) {
  EXPECT_EQ(error_of("", {"train.epochs"}), "--set train.epochs: expected table.key=value, found no '='");
}

TEST(ConfigOverride, MissingTableIsAnError) {
  EXPECT_EQ(error_of("", {"epochs=3"}),
            "--set epochs=3: 'epochs' names no table: expected table.key=value (did you mean "
            "'train.epochs'?)");
}

TEST(ConfigOverride, EmptyValueIsAnError) {
  EXPECT_CONTAINS(error_of("", {"log.metrics="}), "--set log.metrics=: no value after '='");
  EXPECT_EQ(parse_config("", "run.toml", {"log.metrics=\"\""}).log.metrics, "");
}

TEST(ConfigOverride, UnparsableValueThatIsNotAWordIsAnError) {
  EXPECT_CONTAINS(error_of("", {"data.mean=[0.5,"}), "--set data.mean=[0.5,: cannot read '[0.5,' as a TOML value: ");
  EXPECT_CONTAINS(error_of("", {"model.name=\"a\"\nx = 1"}), "is not a single TOML value");
}

// ---- to_toml ----

Config every_key_changed() {
  Config c;
  c.model = {"resnet8", 100, 0.25, false};
  c.data = {
      DataSource::kSynthetic, 96, "/data/mnist \"quoted\"\\", "a", "b", "c", "d", {0.1, 0.2, 1.0 / 3}, {0.3, 1e-7, 2.5},
      TailPolicy::kPad};
  c.data.train_folder = "tr";
  c.data.val_folder = "va";
  c.data.channels = 1;
  c.data.resize_size = 300;
  c.data.random_crop = false;
  c.data.crop_scale = {0.25, 0.5};
  c.data.crop_ratio = {0.5, 2.0};
  c.data.flip = false;
  c.data.workers = 3;
  c.data.prefetch = 9;
  c.data.on_bad_file = BadFilePolicy::kError;
  c.data.label_offset = 0;
  c.data.decode = JpegDecode::kScaled;
  c.data.rebuild_index = true;
  c.data.max_image_pixels = 1000;
  c.train = {7,
             128,
             4,
             0.1 + 0.2,
             0.0,
             0.95,
             true,
             1e-5,
             true,
             0.1,
             0.75,
             OptimizerKind::kLars,
             0.002,
             1e-9,
             2,
             42,
             3,
             Device::kCuda,
             ConvAlgorithm::kWinograd,
             Precision::kTf32};
  c.schedule = {ScheduleKind::kStep, 2.0, {30.0, 60.5, 1e20}, 0.5, 0.0, 1.5, 0.0001, 0.0, 2267};
  c.mlperf = {"an org", "a platform", MlperfDivision::kOpen, MlperfStatus::kResearch, true};
  // On the GPU the ring's transport stays "auto" (NCCL moves the bytes): the CPU round trip below changes it.
  c.dist = {Allreduce::kRing,
            TransportChoice::kAuto,
            "eth1",
            Hierarchy::kTwoLevel,
            Wire::kBf16,
            Compression::kNone,  // powersgd runs on the CPU only: the CPU round trip below sets it
            2,
            50,
            3.5,
            0.0,
            0.5,
            Autotune::kOff,
            0.25,
            "0:0/0.5 30:4/1",
            false,
            false,
            5.5,
            30.0};
  c.bench = {3, 4, 5};
  c.eval = {250, 2, 1, 0.5};
  c.log = {10, "", true, ProgressMode::kLines, "trace.json", 2, 7, 1.5};
  c.checkpoint = {"runs/x", 3, 100, 30.5, 4, "SIGUSR2", 12.5};
  return c;
}

TEST(ConfigToToml, DefaultConfigRoundTrips) {
  Config c;
  EXPECT_EQ(parse_config(to_toml(c), "printed.toml"), c) << to_toml(c);
}

TEST(ConfigToToml, ConfigWithEveryKeyChangedRoundTrips) {
  Config c = every_key_changed();
  Config defaults;
  // A guard on the guard: every struct differs from its default, so a key left out of the schema
  // would come back as its default and fail the round trip.
  EXPECT_NE(c.model, defaults.model);
  EXPECT_NE(c.data, defaults.data);
  EXPECT_NE(c.train, defaults.train);
  EXPECT_NE(c.schedule, defaults.schedule);
  EXPECT_NE(c.dist, defaults.dist);
  EXPECT_NE(c.bench, defaults.bench);
  EXPECT_NE(c.eval, defaults.eval);
  EXPECT_NE(c.mlperf, defaults.mlperf);
  EXPECT_NE(c.log, defaults.log);
  EXPECT_NE(c.checkpoint, defaults.checkpoint);
  EXPECT_EQ(parse_config(to_toml(c), "printed.toml"), c) << to_toml(c);
  Config cpu = c;  // the keys only the CPU takes changed
  cpu.train.device = Device::kCpu;
  cpu.train.precision = Precision::kFp32;
  cpu.dist.allreduce = Allreduce::kMpi;
  cpu.dist.transport = TransportChoice::kTcp;
  cpu.dist.hierarchy = Hierarchy::kFlat;
  cpu.dist.wire = Wire::kFp32;
  cpu.dist.compression = Compression::kPowerSgd;
  cpu.train.bn_group = 3;
  EXPECT_EQ(parse_config(to_toml(cpu), "printed.toml"), cpu) << to_toml(cpu);
}

TEST(ConfigToToml, AwkwardDoublesRoundTripExactly) {
  for (double v : {0.1 + 0.2, 1.0 / 3, 5e-324, 1e-300, 1.7976931348623157e308, 123456789.0, 1e22, 0.5}) {
    Config c;
    c.data.mean = {v};
    EXPECT_EQ(parse_config(to_toml(c), "printed.toml").data.mean[0], v) << to_toml(c);
  }
}

TEST(ConfigToToml, WholeNumberFloatsPrintAsFloats) {
  Config c;
  c.schedule.warmup_epochs = 2;
  c.schedule.milestones = {30, 60};
  std::string text = to_toml(c);
  EXPECT_CONTAINS(text, "warmup_epochs = 2.0 ");
  EXPECT_CONTAINS(text, "milestones = [30.0, 60.0]");
}

TEST(ConfigToToml, EveryKeyAppearsInSchemaOrderWithItsDoc) {
  std::string text = to_toml(Config{});
  size_t at = 0;
  std::string_view table;
  for (const KeySpec& spec : config_schema()) {
    if (spec.table != table) {
      table = spec.table;
      at = text.find(std::string("\n[").append(table).append("]\n"), at);
      ASSERT_NE(at, std::string::npos) << "table " << table << " missing or out of order";
    }
    // (std::string("\n").append(...) rather than "\n" + ...: GCC 12 warns falsely on the latter.)
    size_t line = text.find(std::string("\n").append(spec.key).append(" = "), at);
    ASSERT_NE(line, std::string::npos) << spec.table << "." << spec.key << " missing or out of order";
    std::string whole = text.substr(line + 1, text.find('\n', line + 1) - line - 1);
    EXPECT_CONTAINS(whole, "# " + std::string(spec.doc));
    at = line;
  }
  EXPECT_CONTAINS(text, "epochs = 5  ");
  EXPECT_CONTAINS(text, "# passes over the training set (>= 1)");
  EXPECT_CONTAINS(text, "# learning-rate schedule (one of: constant, step, cosine, poly)");
}

TEST(ConfigSchema, NamesEachKeyOnceAndKeepsTablesTogether) {
  std::vector<std::string> seen, tables;
  for (const KeySpec& spec : config_schema()) {
    std::string name = std::string(spec.table) + "." + std::string(spec.key);
    EXPECT_EQ(std::count(seen.begin(), seen.end(), name), 0) << name;
    seen.push_back(name);
    if (tables.empty() || tables.back() != spec.table) {
      EXPECT_EQ(std::count(tables.begin(), tables.end(), std::string(spec.table)), 0) << spec.table;
      tables.push_back(std::string(spec.table));
    }
    EXPECT_FALSE(spec.doc.empty()) << name;
  }
}

}  // namespace
}  // namespace rt

namespace rt {
namespace {

// data.max_image_pixels defaults to the decoder's own budget, Pillow's (Note [Pixel budget]).
TEST(ConfigDefaults, ImagePixelBudgetIsTheDecodersDefault) {
  EXPECT_EQ(DataConfig{}.max_image_pixels, kDefaultMaxImagePixels);
}

}  // namespace
}  // namespace rt

namespace rt {
namespace {

// Every config the repository ships loads, rules included (configs/clusters describe clusters
// for `simulate`, not runs); the large-batch recipes say what they promise.
TEST(ShippedConfigs, EveryRunConfigLoads) {
  int loaded = 0;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(RT_SOURCE_DIR "/configs")) {
    if (entry.path().extension() != ".toml" || entry.path().parent_path().filename() == "clusters") continue;
    EXPECT_NO_THROW(load_config(entry.path().string())) << entry.path();
    ++loaded;
  }
  EXPECT_GE(loaded, 10);
  const Config c = load_config(RT_SOURCE_DIR "/configs/large_batch/resnet50_32k.toml");
  EXPECT_EQ(c.train.optimizer, OptimizerKind::kLars);
  EXPECT_EQ(c.schedule.kind, ScheduleKind::kPoly);
  // MLPerf's reference point at 32k (rcps_resnet.json, training 4.0.0) and its rules' end rate.
  EXPECT_EQ(c.train.lr, 21.2);
  EXPECT_EQ(c.train.lr_per_256, 0);
  EXPECT_EQ(c.schedule.end_lr, 0.0001);
  EXPECT_EQ(c.schedule.warmup_epochs, 16);
  EXPECT_EQ(c.schedule.decay_steps, 2267);
  EXPECT_EQ(c.eval.target_top1, 0.759);
}

// Note [Fixed global batch] in config/batch_shape.h: each rank count gets an equal share of the global batch in the fewest
// micro-batches that fit train.batch_per_rank, the same global batch every time; deriving twice
// changes nothing; a share that cannot be equal is refused by name.
TEST(FixedGlobalBatch, EachRankCountTakesTheSameGlobalBatchInFittingMicroBatches) {
  Config c;
  c.train.global_batch = 96;
  c.train.batch_per_rank = 16;
  const std::vector<std::tuple<int64_t, int64_t, int64_t>> want = {
      {1, 16, 6}, {2, 16, 3}, {4, 12, 2}, {8, 12, 1}, {32, 3, 1}};  // ranks, micro-batch, micro-batches
  for (const auto& [ranks, micro, k] : want) {
    const Config f = fit_global_batch(c, ranks);
    EXPECT_EQ(f.train.batch_per_rank, micro) << ranks << " ranks";
    EXPECT_EQ(f.train.accumulate_steps, k) << ranks << " ranks";
    EXPECT_EQ(global_batch(f.train, ranks), 96) << ranks << " ranks";
    EXPECT_EQ(fit_global_batch(f, ranks).train, f.train) << ranks << " ranks: a second fit";
  }
  EXPECT_EQ(describe_global_batch(fit_global_batch(c, 4).train, 4),
            "train.global_batch 96 = 4 ranks x 2 micro-batches of 12");
  try {
    fit_global_batch(c, 5);
    ADD_FAILURE() << "96 among 5 ranks";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("train.global_batch = 96 does not divide among 5 ranks"), std::string::npos)
        << e.what();
  }
  c.train.global_batch = 0;
  EXPECT_EQ(fit_global_batch(c, 5).train, c.train);
}

}  // namespace
}  // namespace rt
