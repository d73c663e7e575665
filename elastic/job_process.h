// One launch of the job under `ringtrain elastic`: the launcher runs as a child in a process group
// of its own, and its stdout and stderr pass through the supervisor line by line (each line is
// copied on at once, to the same stream), so that the supervisor reads the job's first error and
// how it stopped.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>
#include <vector>

namespace rt {

class JobProcess {
 public:
  // Starts argv[0] (found on PATH) with argv and, added to the environment, `env` ("NAME=VALUE").
  // Quiet: its lines go to poll's on_line only, and it reads no stdin (a probe of a host).
  enum class Echo { kPassOn, kQuiet };
  JobProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env, Echo echo = Echo::kPassOn);
  ~JobProcess();  // a job still running is killed, its whole process group
  JobProcess(const JobProcess&) = delete;
  JobProcess& operator=(const JobProcess&) = delete;

  // Copies what the job wrote since the last call on, line by line, handing each whole line to
  // on_line, for at most wait_s; returns true once the job has exited (then status() holds).
  bool poll(double wait_s, const std::function<void(const std::string&)>& on_line);
  // The exit status, as a shell gives it: 128 + N for a job killed by signal N.
  int status() const { return status_; }
  // Sends `signal` to the launcher alone (it passes SIGUSR1 and SIGTERM on to the ranks).
  void signal(int signal) const;
  // Kills the launcher and everything it started here (its process group).
  void kill_all() const;

 private:
  struct Stream {
    int from = -1, to = -1;  // the pipe's end we read; where its lines go (stdout, stderr)
    std::string partial;     // the start of a line not yet ended
  };
  void drain(const std::function<void(const std::string&)>& on_line, bool to_end);
  pid_t pid_ = -1;
  Echo echo_;
  bool exited_ = false;
  int status_ = -1;
  Stream streams_[2];
};

}  // namespace rt
