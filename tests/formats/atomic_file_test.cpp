// Tests for formats/atomic_file.h: replacement, failures that must leave the old file alone and name
// the path and reason, a temp file left by a crash, and whole-line appends.
#include "formats/atomic_file.h"

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "base/check.h"
#include "tests/support/error_of.h"
#include "tests/support/scratch_dir.h"

namespace rt {
namespace {

using rt::testing::error_of;
using rt::testing::ScratchDir;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

TEST(AtomicFile, WritesANewFileAndReadsItBack) {
  ScratchDir dir;
  const std::string bytes = std::string("binary\0data\xff", 12);
  write_file_atomically(dir / "a.bin", bytes);
  EXPECT_EQ(slurp(dir / "a.bin"), bytes);
  EXPECT_EQ(read_file(dir / "a.bin"), bytes);
  EXPECT_FALSE(std::filesystem::exists(dir / "a.bin.tmp"));
}

TEST(AtomicFile, WritingOverAnExistingFileReplacesIt) {
  ScratchDir dir;
  write_file_atomically(dir / "c.txt", std::string(10000, 'x'));
  write_file_atomically(dir / "c.txt", "short");
  EXPECT_EQ(read_file(dir / "c.txt"), "short");
  write_file_atomically(dir / "c.txt", "");
  EXPECT_EQ(read_file(dir / "c.txt"), "");
}

TEST(AtomicFile, WorksWithAPathWithoutAFolder) {
  ScratchDir dir;
  const std::string old_cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir.path);
  write_file_atomically("plain.txt", "here");
  std::filesystem::current_path(old_cwd);
  EXPECT_EQ(read_file(dir / "plain.txt"), "here");
}

TEST(AtomicFile, MissingFolderNamesThePathAndTheReason) {
  ScratchDir dir;
  const std::string path = dir / "no/such/folder/c.bin";
  const std::string msg = error_of([&] { write_file_atomically(path, "x"); });
  EXPECT_NE(msg.find(path), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
}

// As root, folder permissions do not apply, so the write is attempted in a child process that
// has dropped to user "nobody" (65534); the child sends back the error message through a pipe.
std::string error_of_unprivileged_write(const std::string& path) {
  if (::geteuid() != 0) return error_of([&] { write_file_atomically(path, "new"); });
  int fds[2];
  RT_ASSERT(::pipe(fds) == 0);
  const pid_t pid = ::fork();
  RT_ASSERT(pid >= 0);
  if (pid == 0) {
    ::close(fds[0]);
    if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(2);
    const std::string msg = error_of([&] { write_file_atomically(path, "new"); });
    const ssize_t n = ::write(fds[1], msg.data(), msg.size());
    ::_exit(n == static_cast<ssize_t>(msg.size()) ? 0 : 3);
  }
  ::close(fds[1]);
  std::string msg;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof(buf))) > 0;) msg.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 2) return "SKIP";
  return msg;
}

TEST(AtomicFile, UnwritableFolderNamesThePathAndLeavesTheOldFile) {
  ScratchDir dir;
  write_file_atomically(dir / "c.bin", "old");
  ASSERT_EQ(::chmod(dir.path.c_str(), 0555), 0);
  const std::string msg = error_of_unprivileged_write(dir / "c.bin");
  if (msg == "SKIP") GTEST_SKIP() << "running as root and cannot drop to user nobody to test permissions";
  EXPECT_NE(msg.find(dir / "c.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Permission denied"), std::string::npos) << msg;
  EXPECT_EQ(read_file(dir / "c.bin"), "old");
  EXPECT_FALSE(std::filesystem::exists(dir / "c.bin.tmp"));
}

// Works as root too: open() of a directory for writing fails for everyone.
TEST(AtomicFile, TempFileThatCannotBeCreatedNamesThePathAndLeavesTheOldFile) {
  ScratchDir dir;
  write_file_atomically(dir / "c.bin", "old");
  std::filesystem::create_directory(dir / "c.bin.tmp");
  const std::string msg = error_of([&] { write_file_atomically(dir / "c.bin", "new"); });
  EXPECT_NE(msg.find(dir / "c.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("Is a directory"), std::string::npos) << msg;
  EXPECT_EQ(read_file(dir / "c.bin"), "old");
}

// RLIMIT_FSIZE makes write() stop partway, like a full disk: the error names the path and the
// reason, the temp file is removed and the old file survives.
TEST(AtomicFile, ShortWriteLikeDiskFullRemovesTheTempFileAndLeavesTheOldFile) {
  ScratchDir dir;
  write_file_atomically(dir / "c.bin", "old");
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_FSIZE, &saved), 0);
  auto* old_handler = std::signal(SIGXFSZ, SIG_IGN);  // get EFBIG instead of being killed
  rlimit small = saved;
  small.rlim_cur = 4096;
  ASSERT_EQ(::setrlimit(RLIMIT_FSIZE, &small), 0);
  const std::string msg = error_of([&] { write_file_atomically(dir / "c.bin", std::string(100000, 'n')); });
  ::setrlimit(RLIMIT_FSIZE, &saved);
  std::signal(SIGXFSZ, old_handler);
  EXPECT_NE(msg.find(dir / "c.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("File too large"), std::string::npos) << msg;
  EXPECT_FALSE(std::filesystem::exists(dir / "c.bin.tmp"));
  EXPECT_EQ(read_file(dir / "c.bin"), "old");
}

TEST(AtomicFile, LeftoverTempFileFromACrashDoesNotDisturbReadsOrWrites) {
  ScratchDir dir;
  write_file_atomically(dir / "c.bin", "good");
  {
    std::ofstream crash(dir / "c.bin.tmp", std::ios::binary);
    crash << std::string(50000, 'h');  // a half-written, longer file from an earlier run
  }
  EXPECT_EQ(read_file(dir / "c.bin"), "good");
  write_file_atomically(dir / "c.bin", "newer");
  EXPECT_EQ(read_file(dir / "c.bin"), "newer");
  EXPECT_FALSE(std::filesystem::exists(dir / "c.bin.tmp"));
}

TEST(ReadFile, MissingFileNamesThePathAndTheReason) {
  ScratchDir dir;
  const std::string msg = error_of([&] { read_file(dir / "absent.bin"); });
  EXPECT_NE(msg.find(dir / "absent.bin"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
  const std::string dir_msg = error_of([&] { read_file(dir.path); });
  EXPECT_NE(dir_msg.find("is a directory"), std::string::npos) << dir_msg;
}

TEST(ReadFile, ReadsFilesLargerThanOneChunk) {
  ScratchDir dir;
  std::string big(300001, '\0');
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 7);
  write_file_atomically(dir / "big.bin", big);
  EXPECT_EQ(read_file(dir / "big.bin"), big);
}

TEST(AppendLine, AppendsWholeLinesCreatingTheFile) {
  ScratchDir dir;
  append_line(dir / "m.jsonl", R"({"step":1})");
  append_line(dir / "m.jsonl", R"({"step":2})");
  EXPECT_EQ(read_file(dir / "m.jsonl"), "{\"step\":1}\n{\"step\":2}\n");
}

TEST(AppendLine, UnopenableFileNamesThePath) {
  ScratchDir dir;
  const std::string msg = error_of([&] { append_line(dir / "missing/m.jsonl", "x"); });
  EXPECT_NE(msg.find(dir / "missing/m.jsonl"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file or directory"), std::string::npos) << msg;
}

}  // namespace
}  // namespace rt
