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

JobProcess::JobProcess(const std::vector<std::string>& argv, const std::vector<std::string>& env, Echo echo)
    : echo_(echo) {
  RT_CHECK(!argv.empty(), "no job to launch");
  int out[2], err[2];
  RT_CHECK(pipe2(out, O_CLOEXEC) == 0 && pipe2(err, O_CLOEXEC) == 0, "pipe: ", std::strerror(errno));
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_ = fork();
  RT_CHECK(pid_ >= 0, "fork: ", std::strerror(errno));
  if (pid_ == 0) {
    setpgid(0, 0);  // the launcher and all it starts here: one group, ended together
    if (echo == Echo::kQuiet) {
      const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
      dup2(null, STDIN_FILENO);
    }
    dup2(out[1], STDOUT_FILENO);
    dup2(err[1], STDERR_FILENO);
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    execvp(args[0], args.data());
    const std::string why = str_cat("ringtrain elastic: cannot run '", argv[0], "': ", std::strerror(errno), "\n");
    write_fully(STDERR_FILENO, why.data(), why.size());
    _exit(127);
  }
  setpgid(pid_, pid_);  // also here: whichever runs first
  close(out[1]);
  close(err[1]);
  streams_[0] = {out[0], STDOUT_FILENO, ""};
  streams_[1] = {err[0], STDERR_FILENO, ""};
}

JobProcess::~JobProcess() {
  if (!exited_ && pid_ > 0) {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  for (const Stream& s : streams_) close(s.from);
}

void JobProcess::signal(int signal) const {
  if (!exited_) kill(pid_, signal);
}

void JobProcess::kill_all() const {
  if (!exited_) kill(-pid_, SIGKILL);
}

void JobProcess::drain(const std::function<void(const std::string&)>& on_line, bool to_end) {
  const auto pass_on = [&](Stream& s, const std::string& line) {
    if (echo_ == Echo::kPassOn) {
      const std::string text = line + "\n";
      write_fully(s.to, text.data(), text.size());
    }
    on_line(line);
  };
  char buf[1 << 14];
  for (Stream& s : streams_) {
    for (;;) {
      // At the end, a writer outside the launcher's group (a daemon that left it) may hold the
      // pipe open: 2 s without a word ends the wait.
      pollfd p{s.from, POLLIN, 0};
      if (::poll(&p, 1, to_end ? 2000 : 0) <= 0) break;
      const ssize_t n = read(s.from, buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      s.partial.append(buf, static_cast<size_t>(n));
      size_t end;
      while ((end = s.partial.find('\n')) != std::string::npos) {
        const std::string line = s.partial.substr(0, end);
        s.partial.erase(0, end + 1);
        pass_on(s, line);
      }
    }
    if (to_end && !s.partial.empty()) {  // the last words, without a newline
      pass_on(s, s.partial);
      s.partial.clear();
    }
  }
}

bool JobProcess::poll(double wait_s, const std::function<void(const std::string&)>& on_line) {
  if (exited_) return true;
  pollfd p[2] = {{streams_[0].from, POLLIN, 0}, {streams_[1].from, POLLIN, 0}};
  ::poll(p, 2, static_cast<int>(wait_s * 1000));
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
