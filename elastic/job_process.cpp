#include "elastic/job_process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/check.h"
#include "base/stderr_line.h"

namespace rt {

JobProcess::JobProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  RT_CHECK(!argv.empty(), "no job to launch");
  int fds[2];
  RT_CHECK(pipe2(fds, O_CLOEXEC) == 0, "pipe: ", std::strerror(errno));
  std::vector<char*> args, envs;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  RT_CHECK(pid_ >= 0, "fork: ", std::strerror(errno));
  if (pid_ == 0) {
    setpgid(0, 0);  // the launcher and all it starts here: one group, ended together
    dup2(fds[1], STDERR_FILENO);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    execvp(args[0], args.data());
    const std::string why = str_cat("ringtrain elastic: cannot run '", argv[0], "': ", std::strerror(errno), "\n");
    write_fully(STDERR_FILENO, why.data(), why.size());
    _exit(127);
  }
  setpgid(pid_, pid_);  // also here: whichever runs first
  close(fds[1]);
  err_fd_ = fds[0];
}

JobProcess::~JobProcess() {
  if (!exited_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (err_fd_ >= 0) close(err_fd_);
}

void JobProcess::signal(int signal) const {
  if (!exited_) kill(pid_, signal);
}

void JobProcess::kill_all() const {
  if (!exited_) kill(-pid_, SIGKILL);
}

void JobProcess::drain(const std::function<void(const std::string&)>& on_line, bool to_end) {
  char buf[1 << 14];
  for (;;) {
    // At the end, a writer outside the launcher's group (a daemon that left it) may hold the pipe
    // open: 2 s without a word ends the wait.
    pollfd p{err_fd_, POLLIN, 0};
    if (::poll(&p, 1, to_end ? 2000 : 0) <= 0) break;
    const ssize_t n = read(err_fd_, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    partial_.append(buf, static_cast<size_t>(n));
    size_t end;
    while ((end = partial_.find('\n')) != std::string::npos) {
      const std::string line = partial_.substr(0, end);
      partial_.erase(0, end + 1);
      stderr_line(line);
      on_line(line);
    }
  }
  if (to_end && !partial_.empty()) {  // the last words, without a newline
    stderr_line(partial_);
    on_line(partial_);
    partial_.clear();
  }
}

bool JobProcess::poll(double wait_s, const std::function<void(const std::string&)>& on_line) {
  if (exited_) return true;
  pollfd p{err_fd_, POLLIN, 0};
  ::poll(&p, 1, static_cast<int>(wait_s * 1000));
  drain(on_line, false);
  int raw = 0;
  if (waitpid(pid_, &raw, WNOHANG) != pid_) return false;
  // Whatever is left in the pipe; a daemon of the launcher that still holds it open could keep it
  // from ending, so the group goes first (the launcher itself has exited).
  kill(-pid_, SIGKILL);
  drain(on_line, true);
  exited_ = true;
  status_ = WIFEXITED(raw) ? WEXITSTATUS(raw) : 128 + WTERMSIG(raw);
  return true;
}

}  // namespace rt
