// A Chrome-trace timeline (opens in Perfetto and chrome://tracing) of a window of steps: every
// rank is a process row with a compute thread (data, forward, backward, optimizer) and a
// communication thread (each bucket queued and allreduced, and with a sharded update, each slice
// of SGD on this rank's share). Ranks buffer their own events;
// after each traced step all ranks hand them to rank 0 (a collective every rank makes), which
// appends them to the file and re-closes the JSON array, so the file is valid JSON at every
// moment, even if the run dies. Writing stops at a size cap.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

#include "dist/world.h"

namespace rt {

class Timeline {
 public:
  // Traces steps [first_step, first_step + steps).
  Timeline(const std::string& path, const World& world, int64_t first_step, int64_t steps, int64_t max_bytes);
  ~Timeline();

  double now_us() const;
  double us_at(std::chrono::steady_clock::time_point t) const;  // on the now_us() clock
  bool tracing(int64_t step) const { return step >= first_ && step < first_ + steps_ && !full_; }
  // Records a span; tid 0 = compute, 1 = communication; bucket >= 0 adds it as an argument.
  // Thread-safe. Ignored outside the traced window.
  void span(const char* name, const char* category, double begin_us, double end_us, int tid, int64_t bucket = -1);
  void set_step(int64_t step);
  // Collective: every rank calls it after every step; moves the step's events into the file.
  void flush(int64_t step);

 private:
  const World& world_;
  int64_t first_, steps_, max_bytes_;
  int64_t step_ = -1;
  bool full_ = false;
  std::chrono::steady_clock::time_point origin_;
  std::mutex mu_;
  std::string events_;         // this rank's pending events, comma-separated JSON objects
  std::FILE* file_ = nullptr;  // rank 0 only
  int64_t written_ = 0;
  bool any_event_ = false;
};

// A span on the compute row of `timeline`, from construction to destruction; nothing where the
// timeline is null (not written).
class ComputeSpan {
 public:
  ComputeSpan(Timeline* timeline, const char* name)
      : timeline_(timeline), name_(name), start_(timeline ? timeline->now_us() : 0) {}
  ~ComputeSpan() {
    if (timeline_) timeline_->span(name_, "step", start_, timeline_->now_us(), 0);
  }
  ComputeSpan(const ComputeSpan&) = delete;
  ComputeSpan& operator=(const ComputeSpan&) = delete;

 private:
  Timeline* timeline_;
  const char* name_;
  double start_;
};

}  // namespace rt
