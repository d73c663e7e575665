#include "app/cli.h"

#include <string_view>

#include "base/check.h"

namespace rt {

std::string usage() {
  return "usage: ringtrain [train|eval|info] --config FILE [--set table.key=value ...] [--resume DIR]\n"
         "       ringtrain info --model NAME [--input SIZE]\n"
         "  train    train the configured model (the default command)\n"
         "  eval     evaluate the checkpoint in --resume DIR (default: checkpoint.dir) on the test set\n"
         "  info     build, devices and models; with --config or --model, the model layer by layer\n"
         "           (output shape, parameters, multiply-adds per image) and its totals\n"
         "  --set    override one config key, e.g. --set train.epochs=1 --set model.name=lenet\n"
         "  --resume continue training (or evaluate) from DIR/checkpoint.safetensors\n";
}

CliArgs parse_cli(int argc, const char* const* argv) {
  CliArgs a;
  int i = 1;
  if (i < argc) {
    const std::string_view first = argv[i];
    if (first == "train" || first == "eval" || first == "info") {
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
    } else if (arg == "--model") {
      a.model = value(arg);
    } else if (arg == "--input") {
      const std::string v = value(arg);
      try {
        a.input = std::stoll(v);
      } catch (const std::exception&) {
        a.input = -1;
      }
      RT_CHECK(a.input >= 1, "--input expects a positive image size, got '", v, "'");
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
  RT_CHECK(a.command == "info" || !a.config_path.empty(), "ringtrain ", a.command, " needs --config FILE\n", usage());
  return a;
}

}  // namespace rt
