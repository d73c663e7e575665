#include "dist/timeline.h"

#include <vector>

#include "base/check.h"

namespace rt {

Timeline::Timeline(const std::string& path, const World& world, int64_t first_step, int64_t steps, int64_t max_bytes)
    : world_(world),
      first_(first_step),
      steps_(steps),
      max_bytes_(max_bytes),
      origin_(std::chrono::steady_clock::now()) {
  // One clock for all ranks: start from a common instant (a barrier), good to a few microseconds
  // on one host and to the barrier's latency across hosts.
  world_.barrier();
  origin_ = std::chrono::steady_clock::now();
  if (world_.rank() != 0) return;
  file_ = std::fopen(path.c_str(), "w");
  RT_CHECK(file_ != nullptr, "cannot write timeline '", path, "'");
  std::fputs("[\n]\n", file_);
  std::fflush(file_);
  written_ = 4;
}

Timeline::~Timeline() {
  if (file_) std::fclose(file_);
}

double Timeline::now_us() const { return us_at(std::chrono::steady_clock::now()); }

double Timeline::us_at(std::chrono::steady_clock::time_point t) const {
  return std::chrono::duration<double, std::micro>(t - origin_).count();
}

void Timeline::set_step(int64_t step) {
  std::lock_guard<std::mutex> lock(mu_);
  step_ = step;
  if (step == first_ && world_.rank() >= 0) {
    // Row names: each rank a process, compute and communication its threads.
    char meta[512];
    for (int tid = 0; tid < 2; ++tid) {
      std::snprintf(meta, sizeof meta,
                    "%s{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":\"%s\"}}",
                    events_.empty() ? "" : ",\n", world_.rank(), tid, tid == 0 ? "compute" : "communication");
      events_ += meta;
    }
    std::snprintf(meta, sizeof meta,
                  ",\n{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%d,\"args\":{\"name\":\"rank %d (%s)\"}}",
                  world_.rank(), world_.rank(), world_.host().c_str());
    events_ += meta;
  }
}

void Timeline::span(const char* name, const char* category, double begin_us, double end_us, int tid, int64_t bucket) {
  std::lock_guard<std::mutex> lock(mu_);
  if (!tracing(step_)) return;
  char e[384];
  if (bucket >= 0)
    std::snprintf(e, sizeof e,
                  "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":%d,\"tid\":%d,"
                  "\"args\":{\"step\":%lld,\"bucket\":%lld}}",
                  events_.empty() ? "" : ",\n", name, category, begin_us, end_us - begin_us, world_.rank(), tid,
                  static_cast<long long>(step_), static_cast<long long>(bucket));
  else
    std::snprintf(e, sizeof e,
                  "%s{\"name\":\"%s\",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.1f,\"dur\":%.1f,\"pid\":%d,\"tid\":%d,"
                  "\"args\":{\"step\":%lld}}",
                  events_.empty() ? "" : ",\n", name, category, begin_us, end_us - begin_us, world_.rank(), tid,
                  static_cast<long long>(step_));
  events_ += e;
}

void Timeline::flush(int64_t step) {
  if (step < first_ || step >= first_ + steps_ || full_) return;  // same decision on every rank
  std::string mine;
  {
    std::lock_guard<std::mutex> lock(mu_);
    mine.swap(events_);
  }
  std::vector<std::string> all{mine};
  if (world_.size() > 1) {
    int len = static_cast<int>(mine.size());
    std::vector<int> lens(static_cast<size_t>(world_.size())), offsets(lens.size());
    MPI_Gather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, 0, world_.comm());
    int total = 0;
    for (size_t r = 0; r < lens.size(); ++r) offsets[r] = total, total += lens[r];
    std::string gathered(static_cast<size_t>(world_.rank() == 0 ? total : 0), '\0');
    MPI_Gatherv(mine.data(), len, MPI_CHAR, gathered.data(), lens.data(), offsets.data(), MPI_CHAR, 0, world_.comm());
    if (world_.rank() == 0) {
      all.clear();
      for (size_t r = 0; r < lens.size(); ++r)
        all.push_back(gathered.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(lens[r])));
    }
  }
  if (world_.rank() == 0) {
    std::string chunk;
    for (const std::string& s : all)
      if (!s.empty()) chunk += (any_event_ || !chunk.empty() ? ",\n" : "") + s, any_event_ = true;
    if (!chunk.empty()) {
      // Overwrite the closing "]\n" and close the array again after the new events.
      std::fseek(file_, -2, SEEK_END);
      std::fputs(chunk.c_str(), file_);
      std::fputs("\n]\n", file_);
      std::fflush(file_);
      written_ += static_cast<int64_t>(chunk.size()) + 2;
    }
  }
  int64_t size = written_;
  if (world_.size() > 1) MPI_Bcast(&size, 1, MPI_INT64_T, 0, world_.comm());
  full_ = size >= max_bytes_;
}

}  // namespace rt
