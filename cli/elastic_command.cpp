#include "cli/elastic_command.h"

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/stderr_line.h"
#include "cli/cli.h"
#include "config/config.h"
#include "dist/world.h"
#include "elastic/supervisor.h"

namespace rt {
namespace {

// What the job trains: its config, as `ringtrain train` would load it.
JobRecipe read_recipe(const std::vector<std::string>& job) {
  size_t at = 0;
  while (at < job.size() && std::filesystem::path(job[at]).filename() != "ringtrain") ++at;
  RT_CHECK(at < job.size(), "the job after -- must run ringtrain (as `ringtrain train --config FILE ...`)");
  std::vector<const char*> argv;
  for (size_t i = at; i < job.size(); ++i) argv.push_back(job[i].c_str());
  const CliArgs args = parse_cli(static_cast<int>(argv.size()), argv.data());
  RT_CHECK(args.command == "train", "the job is `ringtrain ", args.command,
           "`; only `ringtrain train` saves and resumes");
  RT_CHECK(args.resume_dir.empty(), "the job names --resume ", args.resume_dir,
           "; leave it out: every launch adds --auto-resume, which goes on from checkpoint.dir");
  const Config config = load_config(args.config_path, args.overrides);
  return {config.train.global_batch, config.checkpoint.dir};
}

}  // namespace

int elastic_command(int argc, char** argv) {
  try {
    const std::vector<std::string> args(argv + 2, argv + argc);
    ElasticOptions options;
    JobRecipe recipe;
    errors_as<ConfigError>([&] {
      options = parse_elastic_args(args);
      recipe = read_recipe(options.job);
    });
    return run_elastic(options, recipe, "/proc/self/exe");
  } catch (const ConfigError& e) {
    stderr_line(str_cat("ringtrain elastic: error: ", e.what()));
    return kExitConfigError;
  } catch (const std::exception& e) {
    stderr_line(str_cat("ringtrain elastic: error: ", e.what()));
    return 1;
  }
}

void say_ranks_started() {
  const char* event = std::getenv("RINGTRAIN_ELASTIC_EVENT");
  const World& world = World::get();
  if (event && *event && world.rank() == 0) stderr_line(str_cat("ringtrain: all ", world.size(), " ranks started"));
}

}  // namespace rt
