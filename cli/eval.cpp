// `ringtrain eval`: the checkpoint in --resume DIR (default: checkpoint.dir) on the test set.
#include <cstdio>
#include <iostream>

#include "app/trainer.h"
#include "cli/commands.h"

namespace rt {

int eval_command(const CliArgs& args) {
  Config config = load_config(args.config_path, args.overrides);
  // Evaluation normalises with the running statistics: a training group (train.bn_group) would
  // only be built, and refused where this job's ranks do not divide into it.
  config.train.bn_group = 1;
  const World& world = World::get();
  Trainer trainer(config, std::cout, world);
  trainer.resume(args.resume_dir.empty() ? config.checkpoint.dir : args.resume_dir);
  const EvalResult r = trainer.evaluate();
  char line[160];
  std::snprintf(line, sizeof line, "test: %lld images, loss %.4f, top-1 %.2f%%, top-5 %.2f%%\n",
                static_cast<long long>(r.samples), r.loss, 100 * r.top1, 100 * r.top5);
  if (world.rank() == 0) std::cout << line;
  return 0;
}

}  // namespace rt
