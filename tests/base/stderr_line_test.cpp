#include "base/stderr_line.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sstream>
#include <string>

// Ranks under one launcher share one stderr: two processes writing long lines at once into one
// pipe must leave whole lines, as MPI_Abort's racing ranks do (their lines once came out spliced).
TEST(StderrLine, LinesOfProcessesSharingAPipeNeverInterleave) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  constexpr int kLines = 200;
  const std::string a(1500, 'a'), b(1500, 'b');
  pid_t children[2];
  for (int c = 0; c < 2; ++c) {
    children[c] = fork();
    ASSERT_GE(children[c], 0);
    if (children[c] == 0) {
      close(fds[0]);
      dup2(fds[1], STDERR_FILENO);
      for (int i = 0; i < kLines; ++i) rt::stderr_line(c == 0 ? a : b);
      _exit(0);
    }
  }
  close(fds[1]);
  std::string all;
  char buffer[65536];
  for (ssize_t n; (n = read(fds[0], buffer, sizeof buffer)) > 0;) all.append(buffer, static_cast<size_t>(n));
  close(fds[0]);
  for (pid_t child : children) waitpid(child, nullptr, 0);

  std::istringstream lines(all);
  int as = 0, bs = 0;
  for (std::string line; std::getline(lines, line);) {
    ASSERT_TRUE(line == a || line == b) << "a spliced line of " << line.size() << " characters";
    (line == a ? as : bs)++;
  }
  EXPECT_EQ(as, kLines);
  EXPECT_EQ(bs, kLines);
}
