#include "elastic/host_probe.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <thread>

namespace rt {

std::vector<std::string> failing_hosts(const std::vector<std::string>& hosts,
                                       const std::function<std::vector<std::string>(const std::string&)>& one_rank_on,
                                       double timeout_s) {
  std::vector<pid_t> pids;
  for (const std::string& host : hosts) {
    std::vector<std::string> argv = one_rank_on(host);
    argv.insert(argv.end(), {"sleep", "1"});
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      const int null = open("/dev/null", O_RDWR);
      dup2(null, STDIN_FILENO), dup2(null, STDOUT_FILENO), dup2(null, STDERR_FILENO);
      execvp(args[0], args.data());
      _exit(127);
    }
    if (pid > 0) setpgid(pid, pid);
    pids.push_back(pid);
  }
  std::vector<bool> failed(hosts.size(), false), done(hosts.size(), false);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (size_t left = hosts.size(); left > 0;) {
    for (size_t i = 0; i < pids.size(); ++i) {
      if (done[i]) continue;
      int raw = 0;
      if (pids[i] < 0 || waitpid(pids[i], &raw, WNOHANG) == pids[i]) {
        done[i] = true, --left;
        failed[i] = pids[i] < 0 || !WIFEXITED(raw) || WEXITSTATUS(raw) != 0;
      } else if (std::chrono::steady_clock::now() > deadline) {
        kill(-pids[i], SIGKILL);
        waitpid(pids[i], nullptr, 0);
        done[i] = true, failed[i] = true, --left;
      }
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  std::vector<std::string> out;
  for (size_t i = 0; i < hosts.size(); ++i)
    if (failed[i]) out.push_back(hosts[i]);
  return out;
}

}  // namespace rt
