// `ringtrain elastic`: runs a training job through the real launcher and keeps it going when a host
// fails, and grows it back when hosts return (Note [Elastic runs]).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

namespace rt {

struct ElasticOptions {
  int min_np = 1;
  int max_np = 0;                     // 0: every usable slot
  std::string hosts_file;             // --hosts FILE, read again at each look
  std::string discover;               // --discover SCRIPT: prints the hosts, one per line
  bool slurm = false;                 // --slurm: the allocation's nodes, launched with srun
  std::vector<std::string> launcher;  // --launcher "CMD ARGS": takes mpi_launch.sh's --hosts, -np, --env
  double leave_out_s = 600;           // --leave-out-s: a failed host stays out this long
  int host_failures = 3;              // --host-failures: a host that failed this often stays out
  int max_failures = 5;               // --max-failures F --window-s W: F failures within W s end it
  double window_s = 3600;
  double look_every_s = 30;      // --look-every-s: how often the host list is read again
  double start_timeout_s = 120;  // --start-timeout-s: a launch whose ranks have not all started
  double probe_timeout_s = 20;   // --probe-timeout-s: a host whose `sleep 1` has not ended failed
  std::vector<std::string> job;  // after --: the job, `ringtrain train ...`
};

// Parses `ringtrain elastic`'s arguments (those after "elastic"); throws rt::ConfigError with the
// usage on a bad one.
ElasticOptions parse_elastic_args(const std::vector<std::string>& args);
std::string elastic_usage();

// What the job trains, from its config: the global batch every launch keeps (0: not fixed), and
// the folder it saves in.
struct JobRecipe {
  int64_t global_batch = 0;
  std::string checkpoint_dir;
};

// Runs the job to its end; returns the exit status the supervisor ends with. self_path: this
// executable, beside which scripts/mpi_launch.sh is looked for.
int run_elastic(const ElasticOptions& options, const JobRecipe& recipe, const std::string& self_path);

}  // namespace rt
