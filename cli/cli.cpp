#include "cli/cli.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <sstream>
#include <string_view>

#include "base/check.h"

namespace rt {

std::string usage() {
  return "usage: ringtrain [train|eval|bench|info] --config FILE [--set table.key=value ...] [--resume DIR | "
         "--auto-resume]\n"
         "       ringtrain bench --config FILE --profile OUT\n"
         "       ringtrain info --model NAME [--input SIZE]\n"
         "       ringtrain forward (--model NAME | --config FILE) --weights W --batch B --out O [--backward] [--eval]\n"
         "       ringtrain predict --config FILE --weights W --image PATH [PATH ...]\n"
         "       ringtrain pack --from DIR --to OUT [--shard-mb N]\n"
         "       ringtrain ring-demo --ranks P [--hosts H] --elements N\n"
         "       ringtrain simulate --config FILE --ranks P1,P2,... --network CLUSTER [--cycle-ms C] [--profile P] "
         "[--suggest | --autotune] [--straggler PCT]\n"
         "  train    train the configured model (the default command)\n"
         "  eval     evaluate the checkpoint in --resume DIR (default: checkpoint.dir) on the test set\n"
         "  bench    training throughput on one fixed random batch: warm-up steps, then timed windows\n"
         "           (the [bench] table); under mpirun the total is all images / the slowest rank's time;\n"
         "           --profile OUT then times forward, each layer's backward and SGD (one rank)\n"
         "  forward  one pass of a model on weights W and a batch B (safetensors: \"input\" (N, C, H, W),\n"
         "           \"target\" (N)); writes logits, loss, buffers and, with --backward, every gradient to O;\n"
         "           --eval uses running batch-norm statistics\n"
         "  predict  the top-5 classes of each image, with probabilities, through the config's evaluation\n"
         "           transform (shorter side resized, centre crop); W: a checkpoint or state dict\n"
         "  pack     DIR/train and DIR/val (image folders) as tar shards of at most N MiB (default 256)\n"
         "           in OUT/train and OUT/val, for data.source = \"shards\" with data.dir = OUT\n"
         "  ring-demo  the ring-allreduce of N numbers on P simulated ranks, step by step, from the\n"
         "           trainer's own schedule (P 2..8, N 1..32); --hosts H: the two-level ring over H hosts\n"
         "  simulate the predicted step time and scaling efficiency of the config's model and [dist]\n"
         "           settings at each rank count on the cluster CLUSTER describes (configs/clusters/);\n"
         "           --cycle-ms C starts collectives only every C ms, as Horovod's fusion did; --profile P\n"
         "           takes the compute from a bench --profile file instead of the cluster's images/s;\n"
         "           --suggest searches dist.hierarchy and the bucket caps for the fastest predicted step;\n"
         "           --autotune lists the caps dist.autotune would measure and the one it would keep;\n"
         "           --straggler PCT adds the step with one rank PCT% slower in compute\n"
         "  info     build, devices and models; with --config or --model, the model layer by layer\n"
         "           (output shape, parameters, multiply-adds per image) and its totals\n"
         "  --set    override one config key, e.g. --set train.epochs=1 --set model.name=lenet; RINGTRAIN_SET=\"k=v "
         "...\"\n"
         "           in the environment adds more, after the command line's\n"
         "  --resume continue training (or evaluate) from DIR's newest checkpoint, inside an epoch if it was\n"
         "           saved there, at any number of ranks\n"
         "  --auto-resume  train: continue from checkpoint.dir's newest checkpoint if it has one, else start\n"
         "           (for a job that is requeued: a save on a signal exits with status 75)\n";
}

namespace {

// `text` as a number when all of it is one; nothing otherwise.
std::optional<double> number(const std::string& text) {
  try {
    size_t used = 0;
    const double v = std::stod(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

}  // namespace

CliArgs parse_cli(int argc, const char* const* argv) {
  CliArgs a;
  int i = 1;
  if (i < argc) {
    const std::string_view first = argv[i];
    if (first == "train" || first == "eval" || first == "bench" || first == "forward" || first == "predict" ||
        first == "pack" || first == "info" || first == "ring-demo" || first == "simulate") {
      a.command = first;
      ++i;
    } else if (first == "help" || first == "--help" || first == "-h") {
      a.command = "help";
      return a;
    } else if (first == "--version") {
      a.command = "version";
      return a;
    }
  }
  for (; i < argc; ++i) {
    const std::string_view arg = argv[i];
    auto value = [&](std::string_view flag) -> std::string {
      RT_CHECK(i + 1 < argc, flag, " needs a value\n", usage());
      return argv[++i];
    };
    if (arg == "--config") {
      a.config_path = value(arg);
    } else if (arg == "--set") {
      a.overrides.push_back(value(arg));
    } else if (arg == "--resume") {
      a.resume_dir = value(arg);
    } else if (arg == "--auto-resume") {
      a.auto_resume = true;
    } else if (arg == "--model") {
      a.model = value(arg);
    } else if (arg == "--weights") {
      a.weights = value(arg);
    } else if (arg == "--batch") {
      a.batch = value(arg);
    } else if (arg == "--out") {
      a.out = value(arg);
    } else if (arg == "--image") {
      a.images.push_back(value(arg));
      while (i + 1 < argc && std::string_view(argv[i + 1]).rfind("--", 0) != 0) a.images.emplace_back(argv[++i]);
    } else if (arg == "--from" && a.command == "pack") {
      a.pack_from = value(arg);
    } else if (arg == "--to" && a.command == "pack") {
      a.pack_to = value(arg);
    } else if (arg == "--shard-mb" && a.command == "pack") {
      const std::string v = value(arg);
      const std::optional<double> mb = number(v);
      RT_CHECK(mb && *mb > 0, "--shard-mb expects a shard size in MiB (more than 0), got '", v, "'");
      a.shard_mb = *mb;
    } else if (arg == "--backward") {
      a.backward = true;
    } else if (arg == "--eval") {
      a.eval_mode = true;
    } else if (arg == "--ranks" && a.command == "simulate") {
      a.rank_list = value(arg);
    } else if (arg == "--profile") {
      a.profile = value(arg);
    } else if (arg == "--suggest" && a.command == "simulate") {
      a.suggest = true;
    } else if (arg == "--autotune" && a.command == "simulate") {
      a.autotune = true;
    } else if (arg == "--network") {
      a.network = value(arg);
    } else if (arg == "--straggler" && a.command == "simulate") {
      const std::string v = value(arg);
      const std::optional<double> pct = number(v);
      RT_CHECK(pct && *pct > 0,
               "--straggler expects how much slower one rank computes, in percent (more than 0), got '", v, "'");
      a.straggler_pct = *pct;
    } else if (arg == "--cycle-ms") {
      const std::string v = value(arg);
      const std::optional<double> ms = number(v);
      RT_CHECK(ms && *ms >= 0, "--cycle-ms expects a duration in milliseconds (0 or more), got '", v, "'");
      a.cycle_ms = *ms;
    } else if (arg == "--ranks" || arg == "--elements" || arg == "--hosts") {
      const std::string v = value(arg);
      const std::optional<double> n = number(v);
      RT_CHECK(n && *n >= 1 && *n == std::floor(*n), arg, " expects a positive integer, got '", v, "'");
      if (arg == "--ranks")
        a.ranks = static_cast<int>(std::min(*n, double{1 << 20}));
      else if (arg == "--hosts")
        a.hosts = static_cast<int>(std::min(*n, double{1 << 20}));
      else
        a.elements = static_cast<int64_t>(std::min(*n, 1e15));
    } else if (arg == "--input") {
      const std::string v = value(arg);
      const std::optional<double> n = number(v);
      RT_CHECK(n && *n >= 1 && *n == std::floor(*n), "--input expects a positive image size, got '", v, "'");
      a.input = static_cast<int64_t>(std::min(*n, 1e9));
    } else if (arg.rfind("--set=", 0) == 0) {
      a.overrides.emplace_back(arg.substr(6));
    } else if (arg.rfind("--config=", 0) == 0) {
      a.config_path = arg.substr(9);
    } else if (arg.rfind("--resume=", 0) == 0) {
      a.resume_dir = arg.substr(9);
    } else {
      RT_CHECK(false, "unknown argument '", arg, "'\n", usage());
    }
  }
  // RINGTRAIN_SET="table.key=value ...": --set overrides from the environment, after the command
  // line's, for job scripts and wrappers that cannot edit a command (the tour's test runs its
  // commands as written, at a reduced size).
  if (const char* env = std::getenv("RINGTRAIN_SET")) {
    std::istringstream words(env);
    for (std::string word; words >> word;) a.overrides.push_back(word);
  }
  RT_CHECK(!a.auto_resume || (a.command == "train" && a.resume_dir.empty()),
           "--auto-resume is for train, without --resume\n", usage());
  if (a.command == "forward") {
    RT_CHECK(!a.model.empty() || !a.config_path.empty(), "ringtrain forward needs --model NAME or --config FILE\n",
             usage());
    for (const auto& [flag, v] : {std::pair{"--weights", &a.weights}, {"--batch", &a.batch}, {"--out", &a.out}})
      RT_CHECK(!v->empty(), "ringtrain forward needs ", flag, " FILE\n", usage());
  } else if (a.command == "predict") {
    RT_CHECK(!a.config_path.empty() && !a.weights.empty() && !a.images.empty(),
             "ringtrain predict needs --config FILE, --weights FILE and --image PATH...\n", usage());
  } else if (a.command == "pack") {
    RT_CHECK(!a.pack_from.empty() && !a.pack_to.empty(), "ringtrain pack needs --from DIR and --to OUT\n", usage());
  } else if (a.command == "simulate") {
    RT_CHECK(!a.config_path.empty() && !a.rank_list.empty() && !a.network.empty(),
             "ringtrain simulate needs --config FILE, --ranks P1,P2,... and --network FILE\n", usage());
  } else if (a.command == "ring-demo") {
    RT_CHECK(a.ranks > 0 && a.elements > 0, "ringtrain ring-demo needs --ranks P and --elements N\n", usage());
  } else {
    RT_CHECK(a.command == "info" || !a.config_path.empty(), "ringtrain ", a.command, " needs --config FILE\n", usage());
  }
  return a;
}

}  // namespace rt
