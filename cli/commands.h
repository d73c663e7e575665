// The subcommands of the ringtrain executable that are more than a call: main() dispatches to
// them, and each returns the exit status. The tools that are not the trainer (simulate,
// ring-demo) live in tools/.
#pragma once

#include "cli/cli.h"
#include "config/config.h"

namespace rt {

// The config of info and forward: --config FILE, or the defaults with --model's name and the
// model table's usual class count; --model renames either way, and --set overrides come last.
Config config_of(const CliArgs& args);

int info_command(const CliArgs& args);   // cli/info.cpp: the build, the model table, a planned model
int train_command(const CliArgs& args);  // cli/train.cpp: trains (the default command)
int eval_command(const CliArgs& args);   // cli/eval.cpp: a checkpoint on the test set
int pack_command(const CliArgs& args);   // cli/pack.cpp: an image folder as tar shards

}  // namespace rt
