// ringtrain: the executable. Parses the command line, loads the config, and runs the command;
// every error reaches the user as one message and a non-zero exit status.
#include <oneapi/dnnl/dnnl.hpp>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <iostream>

#include "app/bench.h"
#include "app/cli.h"
#include "app/config.h"
#include "app/forward.h"
#include "app/predict.h"
#include "app/ring_demo.h"
#include "app/simulate.h"
#include "app/trainer.h"
#include "dist/world.h"
#include "base/check.h"
#include "base/stderr_line.h"
#include "base/whole_lines.h"
#include "models/registry.h"
#include "nn/device.h"

namespace rt {
namespace {

// The config of info and forward: --config FILE, or the defaults with --model's name and the
// model table's usual class count; --model renames either way, and --set overrides come last.
Config config_of(const CliArgs& args) {
  std::vector<std::string> overrides;
  if (!args.model.empty()) overrides.push_back("model.name=" + args.model);
  overrides.insert(overrides.end(), args.overrides.begin(), args.overrides.end());
  if (!args.config_path.empty()) return load_config(args.config_path, overrides);
  const ModelEntry& entry = find_model(args.model);
  return parse_config(str_cat("[model]\nname = \"", entry.name, "\"\nnum_classes = ", entry.default_classes, "\n"),
                      "(defaults for --model " + args.model + ")", overrides);
}

int run_info(const CliArgs& args) {
  const dnnl_version_t* v = dnnl_version();
  std::cout << "ringtrain 0.1.0\n"
            << "  CPU backend: oneDNN " << v->major << "." << v->minor << "." << v->patch
            << (v->cpu_runtime == DNNL_RUNTIME_OMP ? " (OpenMP)" : "") << "\n"
            << "  CUDA: " << cuda_report()
            << "\n  models:\n";
  for (const ModelEntry& e : model_table()) std::cout << "    " << e.name << "  " << e.description << "\n";
  if (args.model.empty() && args.config_path.empty()) return 0;
  // With --config: its batch and, for synthetic data, its image size; with --model: one image at
  // the table's usual input.
  const Config c = config_of(args);
  const ModelEntry& entry = find_model(c.model.name);
  Shape input = entry.default_input;
  if (c.data.image_size > 0) input[1] = input[2] = c.data.image_size;
  if (args.input > 0) input[1] = input[2] = args.input;
  const int64_t batch = args.config_path.empty() ? 1 : c.train.batch_per_rank;
  const ModelOptions mo{input, c.model.num_classes, c.model.dropout, c.model.aux_logits};
  auto g = build_model(c.model.name, mo);
  g->plan(batch, Device::kCpu, /*training=*/true, {parse_conv_algorithm(c.train.conv_algorithm)});
  std::cout << "  " << c.model.name << " at batch " << batch << ", input " << shape_str(input) << ", "
            << mo.num_classes << " classes, " << g->parameter_count() << " parameters:\n"
            << g->summary();
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
  if (args.command == "ring-demo") {
    std::cout << ring_demo(args.ranks, args.elements);
    return 0;
  }
  if (args.command == "forward") {
    const ForwardRequest request{config_of(args), args.weights, args.batch, args.out, !args.eval_mode, args.backward};
    std::cout << run_forward(request) << std::endl;
    return 0;
  }

  if (args.command == "simulate") {
    std::cout << simulate_report(load_config(args.config_path, args.overrides), parse_rank_list(args.rank_list),
                                 args.network, args.cycle_ms / 1e3, args.profile) << std::flush;
    return 0;
  }
  if (args.command == "predict") {
    std::cout << run_predict(load_config(args.config_path, args.overrides), args.weights, args.images) << std::flush;
    return 0;
  }

  const World& world = World::get();
  const Config config = load_config(args.config_path, args.overrides);
  if (args.command == "eval") {
    Trainer trainer(config, std::cout, world);
    trainer.resume(args.resume_dir.empty() ? config.checkpoint.dir : args.resume_dir);
    const EvalResult r = trainer.evaluate();
    char line[160];
    std::snprintf(line, sizeof line, "test: %lld images, loss %.4f, top-1 %.2f%%, top-5 %.2f%%\n",
                  static_cast<long long>(r.samples), r.loss, 100 * r.top1, 100 * r.top5);
    if (world.rank() == 0) std::cout << line;
    return 0;
  }
  if (args.command == "bench") {
    Trainer trainer(config, std::cout, world);
    run_bench(trainer, std::cout, args.profile);
    return 0;
  }
  if (world.rank() == 0)
    std::cout << "# resolved config (also saved as " << (std::filesystem::path(config.checkpoint.dir) / "config.toml").string()
              << ")\n"
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

}  // namespace
}  // namespace rt

namespace {

// A fatal error: alone, a message and exit 1; under MPI, the message with rank, host and step,
// then MPI_Abort, so the other ranks do not hang in a collective waiting for this one.
[[noreturn]] void fail(const std::string& message) {
  const rt::World& world = rt::World::get();
  const int64_t step = rt::current_training_step();
  const std::string where = step >= 0 ? rt::str_cat(" at step ", step) : std::string();
  if (world.size() == 1 && !world.uses_mpi()) {
    rt::stderr_line("ringtrain: " + message);
    std::exit(1);
  }
  world.abort(rt::str_cat(message, where));
}

// The exception being handled, as fail()'s message.
[[noreturn]] void fail_with_current_exception() {
  try {
    throw;
  } catch (const rt::Error& e) {
    fail(rt::str_cat("error: ", e.what()));
  } catch (const dnnl::error& e) {
    fail(rt::str_cat("oneDNN error: ", e.what(), " (status ", static_cast<int>(e.status), ")"));
  } catch (const std::exception& e) {
    fail(rt::str_cat("unexpected error: ", e.what()));
  } catch (...) {
    fail("unexpected error of unknown type");
  }
}

// Note [Fatal errors under MPI]: an exception that unwound to main would first run the
// destructors of everything it leaves, and some of those are collectives (MPI_Win_free of the
// shared-memory windows, the gradient reducer's join of a thread waiting on a peer) that the
// other ranks, still running, never join: the job hung. So under an MPI launcher main catches
// nothing; an exception that no handler catches reaches std::terminate before any frame is
// unwound (the C++ ABI's two-phase unwinding finds no handler first), and this handler aborts
// the job from there with the failing rank's message. Exceptions of other threads (the
// reducer's, the image decoders') end here too.
void on_terminate() {
  if (std::current_exception()) fail_with_current_exception();
  fail("terminated without an exception (std::terminate)");
}

}  // namespace

int main(int argc, char** argv) {
  rt::write_whole_lines();
  std::set_terminate(on_terminate);
  int status = 0;
  if (rt::launched_by_mpi()) {  // Note [Fatal errors under MPI]
    rt::World::init(&argc, &argv);
    status = rt::run(rt::parse_cli(argc, argv));
  } else {
    try {
      rt::World::init(&argc, &argv);
      status = rt::run(rt::parse_cli(argc, argv));
    } catch (...) {
      fail_with_current_exception();
    }
  }
  rt::World::get().finalize();
  return status;
}
