#include "base/stderr_line.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <sstream>
#include <string>
#include <thread>

#include "tests/base/two_writers.h"

// Ranks under one launcher share one stderr: two processes writing long lines at once into one
// pipe must leave whole lines, as MPI_Abort's racing ranks do (their lines once came out spliced).
TEST(StderrLine, LinesOfProcessesSharingAPipeNeverInterleave) {
  constexpr int kLines = 200;
  const std::string a(1500, 'a'), b(1500, 'b');
  const std::string all = rt::testing::output_of_two_writers([&](int writer) {
    for (int i = 0; i < kLines; ++i) rt::stderr_line(writer == 0 ? a : b);
  });

  std::istringstream lines(all);
  int as = 0, bs = 0;
  for (std::string line; std::getline(lines, line);) {
    ASSERT_TRUE(line == a || line == b) << "a spliced line of " << line.size() << " characters";
    (line == a ? as : bs)++;
  }
  EXPECT_EQ(as, kLines);
  EXPECT_EQ(bs, kLines);
}

// Before MPI_Abort the failing rank waits until the launcher has read its message from the pipe:
// not past the read, and no longer than the timeout when nobody reads.
TEST(StderrLine, WaitsUntilThePipeIsReadOrTheTimeout) {
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  const int saved = dup(STDERR_FILENO);
  dup2(fds[1], STDERR_FILENO);
  rt::stderr_line("the failing rank's last words");
  using Clock = std::chrono::steady_clock;
  auto start = Clock::now();
  std::thread reader([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    char buffer[256];
    (void)!read(fds[0], buffer, sizeof buffer);
  });
  rt::wait_until_stderr_is_read(5.0);
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  reader.join();
  rt::stderr_line("unread");
  start = Clock::now();
  rt::wait_until_stderr_is_read(0.2);
  const double timed_out = std::chrono::duration<double>(Clock::now() - start).count();
  dup2(saved, STDERR_FILENO);
  close(saved);
  close(fds[0]);
  close(fds[1]);
  EXPECT_GE(waited, 0.25);
  EXPECT_LT(waited, 4.0);
  EXPECT_GE(timed_out, 0.19);
  EXPECT_LT(timed_out, 4.0);
}
