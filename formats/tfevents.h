// TensorBoard event files: Event protobufs, in TFRecord framing (base/tfrecord.h), named
// events.out.tfevents.<seconds>.<host>. Only what ringtrain writes: the version record every
// file starts with, scalar summaries, and a session start. The messages and field numbers are
// TensorBoard's (tensorboard/compat/proto/event.proto and summary.proto):
//   Event       wall_time double 1, step int64 2, file_version string 3, summary Summary 5,
//               session_log SessionLog 7
//   Summary     value repeated Value 1;  Value: tag string 1, simple_value float 2
//   SessionLog  status enum 1 (START = 1)
// A SessionLog START at step S tells TensorBoard that a run restarted there: it drops the steps
// from S on that it read before, as a resumed run drops the records of the run that stopped.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rt {

struct Scalar {
  std::string tag;
  float value = 0;
};

// The serialized Event messages (not yet framed).
std::string file_version_event(double wall_time);  // file_version "brain.Event:2"
std::string scalars_event(double wall_time, int64_t step, const std::vector<Scalar>& scalars);
std::string session_start_event(double wall_time, int64_t step);

// One event file, appended to record by record.
class EventFile {
 public:
  // Creates DIR/events.out.tfevents.<seconds>.<host> (with ".1", ".2", ... after it where that
  // name is taken, which sorts after it as TensorBoard reads a folder's files) and writes its first
  // record, the file version. An error names the file and the system's reason.
  explicit EventFile(const std::string& dir);
  const std::string& path() const { return path_; }
  // Appends `event` framed as one record, with one write(): a process killed at any moment leaves
  // the file readable up to its last whole record, and a reader meanwhile sees whole records.
  void write(std::string_view event) const;

 private:
  std::string path_;
};

// Seconds since the epoch, as an Event's wall_time.
double event_wall_time();

}  // namespace rt
