// `ringtrain train` (the default command): prints the resolved config, trains as configured (from
// --resume DIR where given), and ends with the test figures.
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "app/commands.h"
#include "app/trainer.h"

namespace rt {

int train_command(const CliArgs& args) {
  const Config config = load_config(args.config_path, args.overrides);
  const World& world = World::get();
  if (world.rank() == 0)
    std::cout << "# resolved config (also saved as "
              << (std::filesystem::path(config.checkpoint.dir) / "config.toml").string() << ")\n"
              << to_toml(config) << std::endl;
  Trainer trainer(config, std::cout, world);
  if (!args.resume_dir.empty()) trainer.resume(args.resume_dir);
  const TrainResult r = trainer.train();
  char line[160];
  std::snprintf(line, sizeof line, "done: test top-1 %.2f%%, top-5 %.2f%%, %.1f training images/s, checkpoint in ",
                100 * r.last_eval.top1, 100 * r.last_eval.top5, r.images_per_s);
  if (world.rank() == 0) std::cout << line << config.checkpoint.dir << "\n";
  return 0;
}

}  // namespace rt
