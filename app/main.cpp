// ringtrain: the executable. Parses the command line, loads the config, and runs the command;
// every error reaches the user as one message and a non-zero exit status.
#include <oneapi/dnnl/dnnl.hpp>

#include <filesystem>
#include <iostream>

#include "app/cli.h"
#include "app/config.h"
#include "app/trainer.h"
#include "base/check.h"
#include "models/registry.h"
#include "nn/device.h"

namespace rt {
namespace {

int run_info(const CliArgs& args) {
  const dnnl_version_t* v = dnnl_version();
  std::cout << "ringtrain 0.1.0\n"
            << "  CPU backend: oneDNN " << v->major << "." << v->minor << "." << v->patch
            << (v->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP)" : "") << "\n"
            << "  CUDA: " << cuda_report() << (cuda_built() ? "\n  CUDA ops: none yet (CPU only)" : "")
            << "\n  models:\n";
  for (const ModelEntry& e : model_table()) std::cout << "    " << e.name << "  " << e.description << "\n";
  if (!args.config_path.empty()) {
    const Config c = load_config(args.config_path, args.overrides);
    ModelOptions mo{{1, 28, 28}, c.model.num_classes, c.model.dropout};
    auto g = build_model(c.model.name, mo);
    g->plan(c.train.batch_per_rank, parse_device(c.train.device));
    std::cout << "  " << c.model.name << " at batch " << c.train.batch_per_rank << ", input " << shape_str(mo.input_shape)
              << ", " << g->parameter_count() << " parameters:\n"
              << g->summary();
  }
  return 0;
}

int run(const CliArgs& args) {
  if (args.command == "help") {
    std::cout << usage();
    return 0;
  }
  if (args.command == "version") {
    std::cout << "ringtrain 0.1.0\n";
    return 0;
  }
  if (args.command == "info") return run_info(args);

  const Config config = load_config(args.config_path, args.overrides);
  if (args.command == "eval") {
    Trainer trainer(config, std::cout);
    trainer.resume(args.resume_dir.empty() ? config.checkpoint.dir : args.resume_dir);
    const EvalResult r = trainer.evaluate();
    std::printf("test: %lld images, loss %.4f, top-1 %.2f%%, top-5 %.2f%%\n", static_cast<long long>(r.samples), r.loss,
                100 * r.top1, 100 * r.top5);
    return 0;
  }
  std::cout << "# resolved config (also saved as " << (std::filesystem::path(config.checkpoint.dir) / "config.toml").string()
            << ")\n"
            << to_toml(config) << std::endl;
  Trainer trainer(config, std::cout);
  if (!args.resume_dir.empty()) trainer.resume(args.resume_dir);
  const TrainResult r = trainer.train();
  std::printf("done: test top-1 %.2f%%, top-5 %.2f%%, %.1f training images/s, checkpoint in %s\n",
              100 * r.last_eval.top1, 100 * r.last_eval.top5, r.images_per_s, config.checkpoint.dir.c_str());
  return 0;
}

}  // namespace
}  // namespace rt

int main(int argc, char** argv) {
  try {
    return rt::run(rt::parse_cli(argc, argv));
  } catch (const rt::Error& e) {
    std::cerr << "ringtrain: error: " << e.what() << "\n";
  } catch (const dnnl::error& e) {
    std::cerr << "ringtrain: oneDNN error: " << e.what() << " (status " << e.status << ")\n";
  } catch (const std::exception& e) {
    std::cerr << "ringtrain: unexpected error: " << e.what() << "\n";
  }
  return 1;
}
