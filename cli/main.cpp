// ringtrain: the executable. Parses the command line, loads the config, and runs the command;
// every error reaches the user as one message and a non-zero exit status.
#include <oneapi/dnnl/dnnl.hpp>

#include <chrono>
#include <exception>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "app/run/stop_signals.h"
#include "app/trainer.h"
#include "base/check.h"
#include "base/stderr_line.h"
#include "base/whole_lines.h"
#include "cli/bench.h"
#include "cli/cli.h"
#include "cli/commands.h"
#include "cli/elastic_command.h"
#include "cli/forward.h"
#include "cli/predict.h"
#include "dist/world.h"
#include "tools/ring_demo.h"
#include "tools/ring_demo_hosts.h"
#include "tools/simulate.h"

namespace rt {
namespace {

int run(const CliArgs& args) {
  if (args.command == "help") {
    std::cout << usage();
    return 0;
  }
  if (args.command == "version") {
    std::cout << "ringtrain 0.1.0\n";
    return 0;
  }
  if (args.command == "info") return info_command(args);
  if (args.command == "ring-demo") {
    std::cout << (args.hosts > 0 ? ring_demo_hosts(args.ranks, args.hosts, args.elements)
                                 : ring_demo(args.ranks, args.elements));
    return 0;
  }
  if (args.command == "forward") {
    const ForwardRequest request{config_of(args), args.weights, args.batch, args.out, !args.eval_mode, args.backward};
    std::cout << run_forward(request) << std::endl;
    return 0;
  }

  if (args.command == "simulate") {
    const Config config = load_config(args.config_path, args.overrides);
    const std::vector<int> ranks = parse_rank_list(args.rank_list);
    RT_CHECK(!args.suggest || args.straggler_pct == 0,
             "simulate: --straggler goes with the plain report, not --suggest");
    RT_CHECK(!(args.autotune && (args.suggest || args.straggler_pct > 0)),
             "simulate: --autotune goes alone, without --suggest or --straggler");
    if (args.autotune) {
      std::cout << autotune_report(config, ranks, args.network, args.cycle_ms / 1e3, args.profile) << std::flush;
      return 0;
    }
    std::cout << (args.suggest ? suggest_report(config, ranks, args.network, args.cycle_ms / 1e3, args.profile)
                               : simulate_report(config, ranks, args.network, args.cycle_ms / 1e3, args.profile,
                                                 args.straggler_pct / 100))
              << std::flush;
    return 0;
  }
  if (args.command == "predict") {
    std::cout << run_predict(load_config(args.config_path, args.overrides), args.weights, args.images) << std::flush;
    return 0;
  }

  if (args.command == "eval") return eval_command(args);
  if (args.command == "pack") return pack_command(args);
  if (args.command == "bench") {
    const auto start = std::chrono::steady_clock::now();
    Trainer trainer(load_config(args.config_path, args.overrides), std::cout, World::get());
    const double plan_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    run_bench(trainer, std::cout, args.profile, plan_s);
    return 0;
  }
  return train_command(args);
}

}  // namespace
}  // namespace rt

namespace {

// A fatal error: alone, a message and exit 1; under MPI, the message with rank, host and step,
// then MPI_Abort, so the other ranks do not hang in a collective waiting for this one.
[[noreturn]] void fail(const std::string& message, int status = 1) {
  const rt::World& world = rt::World::get();
  const int64_t step = rt::current_training_step();
  const std::string where = step >= 0 ? rt::str_cat(" at step ", step) : std::string();
  if (world.size() == 1 && !world.uses_mpi()) {
    rt::stderr_line("ringtrain: " + message);
    std::exit(status);
  }
  world.abort(rt::str_cat(message, where), status);
}

// The exception being handled, as fail()'s message.
[[noreturn]] void fail_with_current_exception() {
  try {
    throw;
  } catch (const rt::ConfigError& e) {  // Note [Exit statuses] in base/check.h
    fail(rt::str_cat("error: ", e.what()), rt::kExitConfigError);
  } catch (const rt::DataError& e) {
    fail(rt::str_cat("error: ", e.what()), rt::kExitDataError);
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
  // The supervisor is no rank: it starts the launcher, and MPI is not for it.
  if (argc >= 2 && std::string_view(argv[1]) == "elastic") return rt::elastic_command(argc, argv);
  // `train` (also when the command is left out): a stop signal waits until the config is read.
  if (argc < 2 || argv[1][0] == '-' || std::string_view(argv[1]) == "train") rt::hold_stop_signals();
  std::set_terminate(on_terminate);
  int status = 0;
  if (rt::launched_by_mpi()) {  // Note [Fatal errors under MPI]
    rt::World::init(&argc, &argv);
    rt::say_ranks_started();
    status = rt::run(rt::errors_as<rt::ConfigError>([&] { return rt::parse_cli(argc, argv); }));
  } else {
    try {
      rt::World::init(&argc, &argv);
      rt::say_ranks_started();
      status = rt::run(rt::errors_as<rt::ConfigError>([&] { return rt::parse_cli(argc, argv); }));
    } catch (...) {
      fail_with_current_exception();
    }
  }
  rt::World::get().finalize();
  return status;
}
