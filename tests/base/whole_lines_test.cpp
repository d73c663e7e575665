#include "base/whole_lines.h"

#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>

#include "tests/base/two_writers.h"

namespace {

// What two processes print through `print` into one pipe, standing in for two ranks' output.
std::string output_of_two_writers(void (*print)(int writer)) {
  return rt::testing::output_of_two_writers([print](int writer) {
    std::setvbuf(stdout, nullptr, _IONBF, 0);  // as MPICH leaves a rank's stdout
    rt::write_whole_lines();
    print(writer);  // std::exit follows: the streams' flush at exit must reach the buffers
  });
}

constexpr int kLines = 300;

// A line built from many <<, as the trainer's banner is: each piece was once a write of its own.
void print_lines_in_pieces(int writer) {
  for (int i = 0; i < kLines; ++i) {
    std::ostream& out = (i % 2 ? std::cout : std::cerr);
    out << "writer " << writer << ':';
    for (int piece = 0; piece < 40; ++piece) out << ' ' << piece;
    out << '\n';
  }
}

void print_an_unterminated_line(int writer) {
  if (writer == 0)
    std::cout << "no newline"
              << ", "
              << "yet it leaves at exit";
}

}  // namespace

// Lines of two processes sharing a pipe stay whole, whichever stream they go to.
TEST(WholeLines, LinesBuiltFromManyPiecesNeverInterleave) {
  const std::string all = output_of_two_writers(print_lines_in_pieces);
  std::string expected[2];
  for (int writer = 0; writer < 2; ++writer) {
    std::ostringstream line;
    line << "writer " << writer << ':';
    for (int piece = 0; piece < 40; ++piece) line << ' ' << piece;
    expected[writer] = line.str();
  }
  int counts[2] = {0, 0};
  std::istringstream lines(all);
  for (std::string line; std::getline(lines, line);) {
    ASSERT_TRUE(line == expected[0] || line == expected[1]) << "a spliced line: " << line;
    ++counts[line[7] - '0'];
  }
  EXPECT_EQ(counts[0], kLines);
  EXPECT_EQ(counts[1], kLines);
}

// A partial line waits for its newline, but not past the end of the process.
TEST(WholeLines, APartialLineLeavesAtExit) {
  EXPECT_EQ(output_of_two_writers(print_an_unterminated_line), "no newline, yet it leaves at exit");
}
