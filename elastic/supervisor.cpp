#include "elastic/supervisor.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <deque>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "app/run/stop_signals.h"
#include "base/check.h"
#include "base/join.h"
#include "base/stderr_line.h"
#include "elastic/failure_blame.h"
#include "elastic/host_pool.h"
#include "elastic/host_probe.h"
#include "elastic/job_process.h"
#include "elastic/launch_record.h"

namespace rt {

// Note [Elastic runs]: `ringtrain elastic` launches the job on the usable hosts' slots: the most
// ranks, at most --max-np, that divide train.global_batch, so that every launch trains the same
// recipe (Note [Fixed global batch] in config/batch_shape.h). When the job fails on a host, it leaves
// the host out and launches again with --auto-resume: the job goes on from its last checkpoint, and
// the steps since then are lost. It does not launch again when the job's status says its config or
// data is wrong (Note [Exit statuses] in base/check.h), when fewer than --min-np ranks remain, or
// after --max-failures failures within --window-s. Every --look-every-s it reads the host list
// again; where it now allows more ranks, it asks the job to save and stop (SIGUSR1, as a user
// would) and launches it larger. Each launch tells the job why (RINGTRAIN_ELASTIC_EVENT), which its
// rank 0 writes to metrics.jsonl and TensorBoard as a record of kind "elastic".

namespace {

// A rank still loading its libraries, before ringtrain holds the stop signals, dies of SIGUSR1: it
// is sent no sooner than RINGTRAIN_SIGNAL_HOLD_S (default 5) after the launch, as
// docs/examples/ringtrain_requeue.sbatch does.
double signal_hold_s() {
  const char* v = std::getenv("RINGTRAIN_SIGNAL_HOLD_S");
  return v && *v ? std::atof(v) : 5.0;
}

volatile std::sig_atomic_t g_signal = 0;
void on_signal(int s) { g_signal = s; }

double now_s() {
  using Clock = std::chrono::steady_clock;
  static const Clock::time_point start = Clock::now();
  return std::chrono::duration<double>(Clock::now() - start).count();
}

void say(const std::string& line) { stderr_line("ringtrain elastic: " + line); }

// What rank 0 says when the job saved on a signal and stopped (app/run/training_run.cpp).
const std::regex& saved_on_signal() {
  static const std::regex re(
      R"(^ringtrain: SIG[A-Z0-9]+ reached \d+ rank\(s\); saved .* and stopped \(exit status 75)");
  return re;
}

// What rank 0 of a launched job says once every rank has started (cli/elastic_command.h).
const std::regex& ranks_started() {
  static const std::regex re(R"(^ringtrain: all \d+ ranks started$)");
  return re;
}

// The standard output of `command` (through sh), and its exit status.
std::pair<std::string, int> run_for_output(const std::string& command) {
  std::FILE* p = popen(command.c_str(), "r");
  RT_CHECK(p, "cannot run '", command, "'");
  std::string text;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) text.append(buf, n);
  const int raw = pclose(p);
  return {text, WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw)};
}

double number_of(const std::string& flag, const std::string& v, double least) {
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  RT_CHECK(end && *end == '\0' && !v.empty() && x >= least, "", flag, " expects a number of at least ", least,
           ", got '", v, "'\n", elastic_usage());
  return x;
}

class Supervisor {
 public:
  Supervisor(const ElasticOptions& o, const JobRecipe& recipe, const std::string& self_path)
      : o_(o), pool_(o.leave_out_s, o.host_failures), recipe_(recipe) {
    launcher_ = o.launcher;
    if (launcher_.empty()) launcher_ = o.slurm ? slurm_launcher() : std::vector<std::string>{mpi_launch(self_path)};
    if (recipe_.global_batch == 0)
      say("warning: the job's train.global_batch is not set: a launch at fewer ranks trains a smaller global batch, "
          "so another recipe");
  }

  int run() {
    refresh_hosts(true);
    LaunchEvent event{.kind = "start", .host = "", .previous_ranks = 0, .why = ""};
    for (int launch = 1;; ++launch) {
      const std::vector<HostSlots> usable = pool_.usable(now_s());
      const int ranks = ranks_on(usable);
      if (ranks == 0) {
        say(str_cat(
            "stopping: ", describe_slots(usable), "; the job needs at least ", o_.min_np,
            o_.min_np == 1 ? " rank" : " ranks",
            recipe_.global_batch ? str_cat(" in a count that divides its global batch of ", recipe_.global_batch) : "",
            " (--min-np)"));
        return last_status_ ? last_status_ : 1;
      }
      const std::vector<HostSlots> placed = place_ranks(usable, ranks);
      const std::string placement = hosts_arg(placed);
      say(str_cat(launch == 1 ? "launching " : "launching again: ", ranks, ranks == 1 ? " rank" : " ranks", " on ",
                  placement, recipe_.global_batch ? str_cat(", global batch ", recipe_.global_batch) : "",
                  event.why.empty() ? "" : " (" + event.why + ")"));
      const std::string record = launch_record(event, launch);
      JobProcess job(command(placement, ranks, usable), {"RINGTRAIN_ELASTIC_EVENT=" + record});
      const double started_s = now_s();
      bool grow_asked = false, stop_asked = false;
      std::vector<std::string> told;
      double looked = now_s();
      bool started = false, gave_up = false, saved = false;
      while (!job.poll(0.25, [&](const std::string& line) {
        if (told.size() < 400 && tells_failure(line)) told.push_back(line);
        started = started || std::regex_match(line, ranks_started());
        saved = saved || std::regex_search(line, saved_on_signal());
      })) {
        // Hydra waits for good on a host where its proxy cannot start.
        if (!started && !gave_up && now_s() - started_s > o_.start_timeout_s) {
          say(str_cat("the job's ranks have not all started within ", o_.start_timeout_s,
                      " s (--start-timeout-s): ending this launch"));
          job.kill_all();
          gave_up = true;
        }
        if (g_signal != 0) {
          say(str_cat("got ",
                      g_signal == SIGINT    ? "SIGINT"
                      : g_signal == SIGTERM ? "SIGTERM"
                                            : "SIGUSR1",
                      ": passing it on to the job; no launch after it"));
          job.signal(g_signal);
          g_signal = 0;
          stop_asked = true;
        }
        if (!grow_asked && !stop_asked && now_s() - looked >= o_.look_every_s) {
          looked = now_s();
          refresh_hosts(false);
          const int more = ranks_on(pool_.usable(now_s()));
          if (more > ranks && now_s() - started_s >= signal_hold_s()) {
            say(str_cat(describe_slots(pool_.usable(now_s())),
                        ": asking the job to save and stop (SIGUSR1) to grow from ", ranks, " to ", more, " ranks"));
            job.signal(SIGUSR1);
            grow_asked = true;
          }
        }
      }
      last_status_ = job.status();
      // MPICH's mpiexec ends with 0 once it has passed SIGUSR1 on, whatever the ranks' status.
      if (last_status_ == 0 && saved) last_status_ = kExitSavedOnSignal;
      const JobEnd end = job_end(last_status_);
      if (end == JobEnd::kFinished) {
        say(str_cat("the job finished (exit status ", last_status_, ") after ", launch,
                    launch == 1 ? " launch" : " launches"));
        return last_status_;
      }
      if (end == JobEnd::kWrongInput) {
        say(str_cat("the job's ", last_status_ == kExitConfigError ? "command line or config" : "data",
                    " is wrong (exit status ", last_status_, "): not launching it again"));
        return last_status_;
      }
      if (stop_asked || end == JobEnd::kStopped || (end == JobEnd::kSaved && !grow_asked)) {
        say(str_cat("the job stopped on a signal (exit status ", last_status_, "): not launching it again"));
        return last_status_;
      }
      refresh_hosts(false);
      if (end == JobEnd::kSaved) {
        event = {.kind = "grow", .host = "", .previous_ranks = ranks, .why = "hosts came back"};
        continue;
      }
      if (!count_failure(last_status_)) return last_status_;
      const Blame blame = blame_failure(told);
      std::vector<std::string> failed = {blame.host};
      if (blame.host.empty()) {
        say(str_cat("the job failed (exit status ", last_status_, ") and its output names no host",
                    blame.first_error.empty() ? "" : " (" + blame.first_error + ")",
                    "; asking each of its hosts to run one process (sleep 1) through the launcher"));
        failed = failing_hosts(
            names_of(placed), [&](const std::string& h) { return one_rank_on(h); }, o_.probe_timeout_s);
        if (failed.empty()) {
          say("every host ran it: launching again on the same hosts");
          event = {.kind = "relaunch",
                   .host = "",
                   .previous_ranks = ranks,
                   .why = str_cat("exit status ", last_status_, ", no host named")};
          continue;
        }
      } else {
        say(str_cat("the job failed (exit status ", last_status_, ") on host ", blame.host, ": ", blame.first_error));
      }
      for (const std::string& host : failed) {
        const int times = pool_.failed(host, now_s());
        say(pool_.out_for_good(host) ? str_cat("leaving ", host, " out for good: it failed ", times,
                                               " times (--host-failures ", o_.host_failures, ")")
                                     : str_cat("leaving ", host, " out for ", o_.leave_out_s,
                                               " s, or until the host list drops it and lists it again (its failure ",
                                               times, "; at ", o_.host_failures, " it stays out for good)"));
      }
      const std::string names = join(failed, ", ");
      event = {.kind = "shrink",
               .host = names,
               .previous_ranks = ranks,
               .why = str_cat(failed.size() == 1 ? "host " : "hosts ", names, " failed")};
    }
  }

 private:
  static std::string mpi_launch(const std::string& self_path) {
    const std::filesystem::path self = std::filesystem::canonical(self_path).parent_path();
    for (const auto& candidate : {self / ".." / "scripts" / "mpi_launch.sh", self / "scripts" / "mpi_launch.sh"})
      if (std::filesystem::exists(candidate)) return std::filesystem::weakly_canonical(candidate).string();
    RT_CHECK(false, "scripts/mpi_launch.sh is neither beside ", self.string(),
             " nor above it; name the launcher with --launcher");
    return "";
  }

  // As docs/examples/ringtrain.sbatch runs srun: since Slurm 22.05 it does not take
  // --cpus-per-task from sbatch. --kill-on-bad-exit: a rank that fails ends the step. --overlap: the
  // next launch need not wait for the CPUs of a step whose failed node never reports its end.
  static std::vector<std::string> slurm_launcher() {
    const char* mpi = std::getenv("SLURM_MPI_TYPE");
    const char* cpus = std::getenv("SLURM_CPUS_PER_TASK");
    return {"srun",
            str_cat("--mpi=", mpi && *mpi ? mpi : "pmix"),
            str_cat("--cpus-per-task=", cpus && *cpus ? cpus : "1"),
            "--cpu-bind=cores",
            "--kill-on-bad-exit=1",
            "--overlap"};
  }

  static std::vector<std::string> names_of(const std::vector<HostSlots>& hosts) {
    std::vector<std::string> out;
    for (const HostSlots& h : hosts) out.push_back(h.name);
    return out;
  }

  // The launcher's command for one rank on `host`.
  std::vector<std::string> one_rank_on(const std::string& host) const {
    std::vector<std::string> argv = launcher_;
    if (o_.slurm)
      argv.insert(argv.end(), {"--nodes=1", "--ntasks=1", "--nodelist=" + host});
    else
      argv.insert(argv.end(), {"--hosts", host + ":1", "-np", "1"});
    return argv;
  }

  int ranks_on(const std::vector<HostSlots>& hosts) const {
    int slots = 0;
    for (const HostSlots& h : hosts) slots += h.slots;
    return choose_ranks(slots, o_.min_np, o_.max_np > 0 ? o_.max_np : slots, recipe_.global_batch);
  }

  std::string describe_slots(const std::vector<HostSlots>& usable) const {
    int slots = 0;
    for (const HostSlots& h : usable) slots += h.slots;
    const std::vector<std::string> out = pool_.left_out(now_s());
    return str_cat(slots, slots == 1 ? " slot" : " slots", " usable", usable.empty() ? "" : " on " + hosts_arg(usable),
                   out.empty() ? "" : "; left out: " + join(out, ", "));
  }

  std::vector<std::string> command(const std::string& placement, int ranks,
                                   const std::vector<HostSlots>& usable) const {
    std::vector<std::string> argv = launcher_;
    if (o_.slurm) {
      // srun places the ranks on the allocation's nodes but those --exclude names.
      int nodes = 0;
      for (int left = ranks; left > 0 && nodes < static_cast<int>(usable.size()); ++nodes) left -= usable[nodes].slots;
      std::vector<std::string> excluded;
      for (const HostSlots& h : listed_)
        if (std::none_of(usable.begin(), usable.end(), [&](const HostSlots& u) { return u.name == h.name; }))
          excluded.push_back(h.name);
      argv.insert(argv.end(), {str_cat("--nodes=", nodes), str_cat("--ntasks=", ranks)});
      if (!excluded.empty()) argv.push_back("--exclude=" + join(excluded, ","));
    } else {
      argv.insert(argv.end(), {"--hosts", placement, "-np", std::to_string(ranks), "--env", "RINGTRAIN_ELASTIC_EVENT"});
    }
    argv.insert(argv.end(), o_.job.begin(), o_.job.end());
    argv.push_back("--auto-resume");
    return argv;
  }

  // Reads the host list again; at the start, a list that cannot be read ends the run.
  void refresh_hosts(bool first) {
    std::string text, source;
    if (!o_.hosts_file.empty()) {
      std::ifstream in(o_.hosts_file);
      if (!in) {
        RT_CHECK(!first, "cannot read the hosts file '", o_.hosts_file, "'");
        say("warning: cannot read the hosts file '" + o_.hosts_file + "' now; keeping its last list");
        return;
      }
      std::ostringstream s;
      s << in.rdbuf();
      text = s.str(), source = o_.hosts_file;
    } else {
      const std::string cmd = o_.slurm ? "scontrol show hostnames \"$SLURM_JOB_NODELIST\"" : o_.discover;
      auto [out, status] = run_for_output(cmd);
      if (status != 0) {
        RT_CHECK(!first, "'", cmd, "' failed (exit status ", status, ")");
        say(str_cat("warning: '", cmd, "' failed (exit status ", status, "); keeping its last list"));
        return;
      }
      text = out, source = o_.slurm ? "the allocation's nodes" : o_.discover;
    }
    std::vector<HostSlots> hosts = parse_host_list(text, source);
    if (o_.slurm)
      for (HostSlots& h : hosts) h.slots = slurm_slots_per_node();
    pool_.listed(hosts, now_s());
    listed_ = hosts;
  }

  static int slurm_slots_per_node() {
    for (const char* name : {"SLURM_NTASKS_PER_NODE", "SLURM_TASKS_PER_NODE"}) {
      const char* v = std::getenv(name);
      if (v && std::atoi(v) > 0) return std::atoi(v);  // "2(x2)" reads as 2
    }
    return 1;
  }

  // Counts a failure; false (having said why) when there have been too many.
  bool count_failure(int status) {
    failures_.push_back(now_s());
    while (!failures_.empty() && failures_.front() < now_s() - o_.window_s) failures_.pop_front();
    if (static_cast<int>(failures_.size()) < o_.max_failures) return true;
    say(str_cat("stopping: the job failed ", failures_.size(), " times within ", o_.window_s, " s (--max-failures ",
                o_.max_failures, " --window-s ", o_.window_s, "); the last exit status was ", status));
    return false;
  }

  const ElasticOptions& o_;
  HostPool pool_;
  JobRecipe recipe_;
  std::vector<std::string> launcher_;
  std::vector<HostSlots> listed_;  // as last read
  std::deque<double> failures_;
  int last_status_ = 0;
};

}  // namespace

std::string elastic_usage() {
  return "usage: ringtrain elastic [--min-np N] [--max-np M] (--hosts FILE | --discover SCRIPT | --slurm)\n"
         "                         [--launcher \"CMD ARGS\"] [--leave-out-s S] [--host-failures K]\n"
         "                         [--max-failures F] [--window-s W] [--look-every-s L] [--start-timeout-s T]\n"
         "                         [--probe-timeout-s P] -- ringtrain train ...\n"
         "  --hosts FILE       the hosts, one per line: NAME, NAME SLOTS, NAME:SLOTS or NAME slots=SLOTS;\n"
         "                     read again every L s (edit it to add or drop a host)\n"
         "  --discover SCRIPT  a command that prints the hosts as the file holds them, run every L s\n"
         "  --slurm            the nodes of this allocation (SLURM_JOB_NODELIST), launched with srun\n"
         "  --min-np N         never fewer ranks (default 1); --max-np M: never more (default: every slot)\n"
         "  --launcher CMD     the launcher and its options, split at spaces; it gets --hosts H:S,...,\n"
         "                     -np N and --env NAME as scripts/mpi_launch.sh takes them (default: that\n"
         "                     script; with --slurm, srun --mpi=$SLURM_MPI_TYPE, default pmix)\n"
         "  --leave-out-s S    a host the job failed on stays out S s (default 600), or until the\n"
         "                     discovery script drops it and lists it again\n"
         "  --host-failures K  a host that failed K times stays out for good (default 3)\n"
         "  --max-failures F, --window-s W   stop after F failures within W s (default 5, 3600)\n"
         "  --look-every-s L   how often the host list is read again (default 30)\n"
         "  --start-timeout-s T  a launch whose ranks have not all started (MPI_Init) after T s is a\n"
         "                     failed one (default 120)\n"
         "  --probe-timeout-s P  where the failed job's output names no host, each host runs `sleep 1`\n"
         "                     through the launcher; one where that fails or has not ended after P s\n"
         "                     failed (default 20)\n"
         "The job is launched with --auto-resume added, on the most ranks that divide its\n"
         "train.global_batch; it is not launched again after exit status 65 (data) or 78 (config).\n";
}

ElasticOptions parse_elastic_args(const std::vector<std::string>& args) {
  ElasticOptions o;
  size_t i = 0;
  const auto value = [&](const std::string& flag) -> const std::string& {
    RT_CHECK(i + 1 < args.size(), "", flag, " needs a value\n", elastic_usage());
    return args[++i];
  };
  for (; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") {
      o.job.assign(args.begin() + static_cast<std::ptrdiff_t>(i) + 1, args.end());
      break;
    } else if (a == "--min-np") {
      o.min_np = static_cast<int>(number_of(a, value(a), 1));
    } else if (a == "--max-np") {
      o.max_np = static_cast<int>(number_of(a, value(a), 1));
    } else if (a == "--hosts") {
      o.hosts_file = value(a);
    } else if (a == "--discover") {
      o.discover = value(a);
    } else if (a == "--slurm") {
      o.slurm = true;
    } else if (a == "--launcher") {
      std::istringstream words(value(a));
      o.launcher.clear();
      for (std::string w; words >> w;) o.launcher.push_back(w);
    } else if (a == "--leave-out-s") {
      o.leave_out_s = number_of(a, value(a), 0);
    } else if (a == "--host-failures") {
      o.host_failures = static_cast<int>(number_of(a, value(a), 1));
    } else if (a == "--max-failures") {
      o.max_failures = static_cast<int>(number_of(a, value(a), 1));
    } else if (a == "--window-s") {
      o.window_s = number_of(a, value(a), 1);
    } else if (a == "--start-timeout-s") {
      o.start_timeout_s = number_of(a, value(a), 1);
    } else if (a == "--probe-timeout-s") {
      o.probe_timeout_s = number_of(a, value(a), 2);
    } else if (a == "--look-every-s") {
      o.look_every_s = number_of(a, value(a), 0.1);
    } else {
      RT_CHECK(false, "unknown argument '", a, "'\n", elastic_usage());
    }
  }
  RT_CHECK(!o.job.empty(), "no job: give it after --\n", elastic_usage());
  RT_CHECK((o.hosts_file.empty() ? 0 : 1) + (o.discover.empty() ? 0 : 1) + (o.slurm ? 1 : 0) == 1,
           "name the hosts with one of --hosts FILE, --discover SCRIPT or --slurm\n", elastic_usage());
  RT_CHECK(o.max_np == 0 || o.max_np >= o.min_np, "--max-np ", o.max_np, " is below --min-np ", o.min_np);
  return o;
}

int run_elastic(const ElasticOptions& options, const JobRecipe& recipe, const std::string& self_path) {
  for (int s : {SIGINT, SIGTERM, SIGUSR1}) std::signal(s, on_signal);
  Supervisor supervisor(options, recipe, self_path);
  return supervisor.run();
}

}  // namespace rt
