// Event messages through protobuf's CodedOutputStream, which writes the wire format's tags,
// varints and fixed-width fields without generated code (formats/tfevents.h).
#include "formats/tfevents.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <unistd.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <limits>

#include "base/check.h"
#include "formats/atomic_file.h"
#include "base/tfrecord.h"

namespace rt {
namespace {

using google::protobuf::io::CodedOutputStream;

// The wire types ringtrain's fields use, and a field's key: its number and wire type.
enum Wire : uint32_t { kVarint = 0, kFixed64 = 1, kLengthDelimited = 2, kFixed32 = 5 };
uint32_t key(uint32_t field, Wire wire) { return field << 3 | wire; }

// Event's, Summary's, Summary.Value's and SessionLog's field numbers (formats/tfevents.h).
constexpr uint32_t kWallTime = 1, kStep = 2, kFileVersion = 3, kSummary = 5, kSessionLog = 7;
constexpr uint32_t kSummaryValue = 1;
constexpr uint32_t kValueTag = 1, kValueSimpleValue = 2;
constexpr uint32_t kSessionStatus = 1, kStatusStart = 1;

// A message's bytes, written by `fill` into a CodedOutputStream (flushed when it goes).
template <typename Fill>
std::string message(const Fill& fill) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream stream(&bytes);
    CodedOutputStream out(&stream);
    fill(out);
  }
  return bytes;
}

// A string, bytes or embedded message field.
void put_bytes(CodedOutputStream& out, uint32_t field, std::string_view bytes) {
  RT_ASSERT(bytes.size() <= std::numeric_limits<uint32_t>::max());
  out.WriteTag(key(field, kLengthDelimited));
  out.WriteVarint32(static_cast<uint32_t>(bytes.size()));
  out.WriteRaw(bytes.data(), static_cast<int>(bytes.size()));
}

// Every Event's wall time and step.
void put_when(CodedOutputStream& out, double wall_time, int64_t step) {
  out.WriteTag(key(kWallTime, kFixed64));
  out.WriteLittleEndian64(std::bit_cast<uint64_t>(wall_time));
  out.WriteTag(key(kStep, kVarint));
  out.WriteVarint64(static_cast<uint64_t>(step));  // int64: two's complement, as protobuf encodes it
}

std::string host_name() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  std::string name = host;
  for (char& c : name)
    if (c == '/') c = '_';  // a file name, not a path
  return name.empty() ? "localhost" : name;
}

}  // namespace

std::string file_version_event(double wall_time) {
  return message([&](CodedOutputStream& out) {
    out.WriteTag(key(kWallTime, kFixed64));
    out.WriteLittleEndian64(std::bit_cast<uint64_t>(wall_time));
    put_bytes(out, kFileVersion, "brain.Event:2");
  });
}

std::string scalars_event(double wall_time, int64_t step, const std::vector<Scalar>& scalars) {
  const std::string summary = message([&](CodedOutputStream& out) {
    for (const Scalar& s : scalars)
      put_bytes(out, kSummaryValue, message([&](CodedOutputStream& value) {
                  put_bytes(value, kValueTag, s.tag);
                  value.WriteTag(key(kValueSimpleValue, kFixed32));
                  value.WriteLittleEndian32(std::bit_cast<uint32_t>(s.value));
                }));
  });
  return message([&](CodedOutputStream& out) {
    put_when(out, wall_time, step);
    put_bytes(out, kSummary, summary);
  });
}

std::string session_start_event(double wall_time, int64_t step) {
  const std::string session_log = message([](CodedOutputStream& out) {
    out.WriteTag(key(kSessionStatus, kVarint));
    out.WriteVarint32(kStatusStart);
  });
  return message([&](CodedOutputStream& out) {
    put_when(out, wall_time, step);
    put_bytes(out, kSessionLog, session_log);
  });
}

double event_wall_time() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

EventFile::EventFile(const std::string& dir) {
  const double now = event_wall_time();
  const std::string base = (std::filesystem::path(dir) / "events.out.tfevents.").string() +
                           std::to_string(static_cast<int64_t>(std::floor(now))) + "." + host_name();
  path_ = base;
  for (int n = 1; std::filesystem::exists(path_); ++n) path_ = base + "." + std::to_string(n);
  write(file_version_event(now));
}

void EventFile::write(std::string_view event) const { append_bytes(path_, tfrecord(event)); }

}  // namespace rt
