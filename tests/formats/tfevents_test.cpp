// Tests for base/tfrecord.h and formats/tfevents.h: CRC-32C against its published check values,
// the record framing byte for byte against bytes computed by an independent CRC in Python, and an
// event file read back by tests/support/tfevents.py, which checks every CRC and parses the events
// with Python's protobuf from a .proto of TensorBoard's field numbers.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <limits>
#include <string>

#include "base/check.h"
#include "formats/atomic_file.h"
#include "formats/tfevents.h"
#include "base/tfrecord.h"
#include "tests/support/error_of.h"
#include "tests/support/scratch_dir.h"
#include "tests/support/python_probe.h"

namespace rt {
namespace {

using rt::testing::error_of;
using rt::testing::ScratchDir;

using rt::testing::kPython;

TEST(Crc32c, MatchesPublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC catalogue's check value of CRC-32C
  // RFC 3720 (iSCSI), appendix B.4.
  EXPECT_EQ(crc32c(std::string(32, '\0')), 0x8A9136AAu);
  EXPECT_EQ(crc32c(std::string(32, '\xff')), 0x62A8AB43u);
  std::string up, down;
  for (int i = 0; i < 32; ++i) up += static_cast<char>(i), down += static_cast<char>(31 - i);
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
  EXPECT_EQ(crc32c(""), 0u);
}

TEST(TfRecord, FramesAsComputedIndependently) {
  // Computed with a bit-at-a-time CRC-32C in Python (tests/support/tfevents.py's).
  EXPECT_EQ(masked_crc32c("123456789"), 0xC78AB0E5u);
  const std::string want(
      "\x03\x00\x00\x00\x00\x00\x00\x00\xb0\x99\x49\x0e"
      "abc\x6e\x57\xf1\x21",
      19);
  EXPECT_EQ(tfrecord("abc"), want);
  EXPECT_EQ(tfrecord("").size(), 16u);
}

// `tfevents.py dump FILE`'s output and exit status.
std::string dump(const std::string& file, int* status) {
  const std::string cmd = std::string(kPython) + " " RT_SOURCE_DIR "/tests/support/tfevents.py dump " + file + " 2>&1";
  FILE* pipe = ::popen(cmd.c_str(), "r");
  RT_ASSERT(pipe != nullptr);
  std::string out;
  char buf[512];
  while (size_t n = std::fread(buf, 1, sizeof buf, pipe)) out.append(buf, n);
  const int raw = ::pclose(pipe);
  *status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  return out;
}

TEST(EventFile, ReadsBackInPythonsProtobuf) {
  if (::access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " not found";
  ScratchDir dir;
  const EventFile file(dir.path);
  EXPECT_EQ(std::filesystem::path(file.path()).filename().string().rfind("events.out.tfevents.", 0), 0u);
  file.write(session_start_event(1700000000.5, 7));
  file.write(scalars_event(1700000001.25, 8, {{"step/loss", 0.5f}, {"step/lr", -3.25f}, {"epoch/zero", 0.0f}}));
  file.write(scalars_event(1700000002.0, int64_t{1} << 40, {}));
  int status = 0;
  const std::string out = dump(file.path(), &status);
  if (status == 77) GTEST_SKIP() << out;
  ASSERT_EQ(status, 0) << out;
  const size_t first_line = out.find('\n');
  ASSERT_NE(first_line, std::string::npos) << out;
  // The first record: this moment's wall time and the version TensorBoard reads as 2.
  EXPECT_NE(out.find("\"step\": 0, \"file_version\": \"brain.Event:2\"}"), std::string::npos) << out;
  EXPECT_EQ(out.substr(first_line + 1),
            "{\"wall_time\": 1700000000.5, \"step\": 7, \"session_start\": true}\n"
            "{\"wall_time\": 1700000001.25, \"step\": 8, \"scalars\": {\"step/loss\": 0.5, \"step/lr\": -3.25, "
            "\"epoch/zero\": 0.0}}\n"
            "{\"wall_time\": 1700000002.0, \"step\": 1099511627776, \"scalars\": {}}\n");
}

TEST(EventFile, ACutShortFileReadsUpToItsLastWholeRecord) {
  if (::access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " not found";
  ScratchDir dir;
  const EventFile file(dir.path);
  file.write(scalars_event(1.0, 1, {{"a", 1.0f}}));
  const std::string whole = read_file(file.path());
  file.write(scalars_event(2.0, 2, {{"a", 2.0f}}));
  // The second scalar record cut after its length's CRC: the reader returns what came before.
  const std::string cut = read_file(file.path()).substr(0, whole.size() + 13);
  write_file_atomically(dir / "cut", cut);
  int status = 0;
  const std::string out = dump(dir / "cut", &status);
  if (status == 77) GTEST_SKIP() << out;
  ASSERT_EQ(status, 0) << out;
  EXPECT_NE(out.find("{\"wall_time\": 1.0, \"step\": 1, \"scalars\": {\"a\": 1.0}}\n{\"tail_bytes\": 13}\n"),
            std::string::npos)
      << out;
}

TEST(EventFile, ASecondFileInTheSameSecondSortsAfterTheFirst) {
  ScratchDir dir;
  const EventFile a(dir.path), b(dir.path);
  EXPECT_NE(a.path(), b.path());
  EXPECT_LT(a.path(), b.path());  // TensorBoard reads a folder's event files in name order
}

TEST(EventFile, AnUnwritableFolderIsAnErrorNamingTheFile) {
  ScratchDir dir;
  const std::string missing = dir / "no_such_folder";
  const std::string message = error_of([&] { EventFile file(missing); });
  EXPECT_NE(message.find("cannot append to " + missing + "/events.out.tfevents."), std::string::npos) << message;
}

}  // namespace
}  // namespace rt
