// Two processes writing into one pipe at once, as the ranks under one launcher share its output:
// what they wrote, in the order the pipe took it.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

namespace rt::testing {

// Forks two children with stdout and stderr on one pipe; child c runs write(c) and exits through
// std::exit (so the streams' flush at exit runs too). Returns all they wrote.
inline std::string output_of_two_writers(const std::function<void(int writer)>& write) {
  int fds[2];
  if (pipe(fds) != 0) return "(pipe failed)";
  // A child inherits the parent's unwritten stdio buffers and would flush them into the pipe.
  std::fflush(nullptr);
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = fork();
    if (children[c] == 0) {
      close(fds[0]);
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
      write(c);
      std::exit(0);
    }
  }
  close(fds[1]);
  std::string all;
  char buffer[65536];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) all.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  for (pid_t child : children) waitpid(child, nullptr, 0);
  return all;
}

}  // namespace rt::testing
