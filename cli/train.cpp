// `ringtrain train` (the default command): prints the resolved config, trains as configured (from
// --resume DIR or --auto-resume where given), and ends with the test figures, or with status 75
// after saving on a signal (Note [Stopping on a signal]), or 3 where eval.target_top1 was not
// reached by train.epochs (Note [Stopping at a target]).
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <vector>

#include "app/checkpoint_files.h"
#include "app/consistency.h"
#include "app/init_weights.h"
#include "app/run/stop_signals.h"
#include "app/trainer.h"
#include "app/run/training_run.h"
#include "base/check.h"
#include "cli/commands.h"
#include "config/batch_shape.h"

namespace rt {

int train_command(const CliArgs& args) {
  const World& world = World::get();
  const Config config = fit_global_batch(load_config(args.config_path, args.overrides), world.size());
  if (world.rank() == 0)
    std::cout << "# resolved config (also saved as "
              << (std::filesystem::path(config.checkpoint.dir) / "config.toml").string() << ")\n"
              << to_toml(config) << std::endl;
  // Note [Stopping on a signal] in app/run/stop_signals.h: from here, before the data loads, a signal
  // waits for the first step's end. Giving up ends every rank with the status a requeue script
  // tests.
  StopSignals signals(parse_signal_list(config.checkpoint.signals), config.checkpoint.signal_grace_s,
                      [&world](const std::string& m) { world.abort(m, kExitAbandoned); });
  TrainingRun run(config, world.rank());  // before the Trainer: MLPerf's init phase is its building
  Trainer trainer(config, std::cout, world);
  if (!args.resume_dir.empty()) trainer.resume(args.resume_dir);
  if (args.auto_resume) {
    // Every rank must take the same branch: resume() is collective.
    const std::vector<double> found = world.allgather(newest_checkpoint(config.checkpoint.dir).empty() ? 0.0 : 1.0);
    for (int r = 1; r < world.size(); ++r)
      RT_CHECK(found[static_cast<size_t>(r)] == found[0], "--auto-resume: rank 0 ", found[0] > 0 ? "found" : "found no",
               " checkpoint in ", config.checkpoint.dir, ", rank ", r, " ",
               found[static_cast<size_t>(r)] > 0 ? "found one" : "found none",
               "; every rank must see the same folder (shared storage, not a copy per host)");
    if (found[0] > 0) trainer.resume(config.checkpoint.dir);
  }
  // A resumed fine-tune has all it needs in its checkpoint (Note [Fine-tuning] in app/init_weights.h).
  if (!trainer.resumed_from() && !config.finetune.weights.empty()) {
    const InitWeights init =
        errors_as<DataError>([&] { return load_init_weights(trainer.graph(), config.finetune, config.model.name); });
    broadcast_model_state(trainer.graph(), world);  // every rank read the file: the same weights
    if (world.rank() == 0) std::cout << describe(init) << std::flush;
  }
  const TrainResult r = run.train(trainer);
  signals.ignore_after_training();
  if (r.stopped_by_signal) return kExitSavedOnSignal;  // the trainer has said where it saved
  char line[160];
  std::snprintf(line, sizeof line, "done: test top-1 %.2f%%, top-5 %.2f%%, %.1f training images/s, checkpoint in ",
                100 * r.last_eval.top1, 100 * r.last_eval.top5, r.images_per_s);
  if (world.rank() == 0) std::cout << line << config.checkpoint.dir << "\n";
  return r.target.set() && !r.target.reached ? kExitTargetMissed : 0;
}

}  // namespace rt
