#include "dist/world.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "base/check.h"
#include "base/stderr_line.h"
#include "dist/launcher_check.h"

namespace rt {
namespace {

World* g_world = nullptr;

// A CpuBudget as fixed-size bytes, to gather over a host's ranks.
struct PackedBudget {
  uint64_t mask[16] = {};  // CPUs 0-1023
  double quota = 0;        // 0: none
  uint64_t cgroup = 0;
};

PackedBudget pack(const CpuBudget& b) {
  PackedBudget p;
  for (int c : b.mask)
    if (c >= 0 && c < 1024) p.mask[c / 64] |= uint64_t{1} << (c % 64);
  p.quota = b.quota.value_or(0);
  p.cgroup = b.cgroup;
  return p;
}

CpuBudget unpack(const PackedBudget& p) {
  CpuBudget b;
  for (int c = 0; c < 1024; ++c)
    if (p.mask[c / 64] >> (c % 64) & 1) b.mask.push_back(c);
  if (p.quota > 0) b.quota = p.quota;
  b.cgroup = p.cgroup;
  return b;
}

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(str_cat(what, " failed: ", std::string(msg, static_cast<size_t>(len))));
}

}  // namespace

bool launched_by_mpi() {
  // PMI_FD and PMI_PORT: Hydra's PMI-1 modes (mpiexec -pmi-port sets no PMI_SIZE).
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "PMI_FD", "PMI_PORT"})
    if (std::getenv(v)) return true;
  return false;
}

std::string mpi_library_version() {
  char text[MPI_MAX_LIBRARY_VERSION_STRING] = {};
  int len = 0;
  MPI_Get_library_version(text, &len);
  std::string v(text, static_cast<size_t>(std::max(0, len)));
  v = v.substr(0, v.find_first_of("\n,"));
  while (!v.empty() && (v.back() == ' ' || v.back() == '\t')) v.pop_back();
  return v;
}

World& World::init(int* argc, char*** argv) {
  RT_CHECK(g_world == nullptr, "World::init called twice");
  g_world = new World(single());
  World& w = *g_world;
  if (!launched_by_mpi()) {
    w.refuse_lone_task();
    return w;
  }
  // SERIALIZED: the gradient ring's thread and the main thread both call MPI, never at once.
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  w.mpi_ = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    stderr_line(
        str_cat("ringtrain: this MPI provides thread level ", provided, ", ringtrain needs MPI_THREAD_SERIALIZED"));
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  check_mpi(MPI_Comm_dup(MPI_COMM_WORLD, &w.comm_), "MPI_Comm_dup");
  MPI_Comm_rank(w.comm_, &w.rank_);
  MPI_Comm_size(w.comm_, &w.size_);
  MPI_Comm local;
  check_mpi(MPI_Comm_split_type(w.comm_, MPI_COMM_TYPE_SHARED, w.rank_, MPI_INFO_NULL, &local), "MPI_Comm_split_type");
  MPI_Comm_rank(local, &w.local_rank_);
  MPI_Comm_size(local, &w.local_size_);
  std::vector<PackedBudget> packed(static_cast<size_t>(w.local_size_));
  const PackedBudget own = pack(this_process_cpu_budget());
  check_mpi(MPI_Allgather(&own, sizeof own, MPI_BYTE, packed.data(), sizeof own, MPI_BYTE, local), "MPI_Allgather");
  std::vector<CpuBudget> budgets;
  for (const PackedBudget& p : packed) budgets.push_back(unpack(p));
  w.cpu_share_ = share_cpus(budgets, static_cast<size_t>(w.local_rank_));
  MPI_Comm_free(&local);
  w.refuse_lone_task();
  return w;
}

void World::refuse_lone_task() const {
  const std::string refusal =
      launcher_mismatch(launcher_claim([](const char* v) { return std::getenv(v); }), size_, mpi_library_version());
  if (!refusal.empty()) throw Error(refusal);
}

World& World::get() {
  if (!g_world) g_world = new World(single());
  return *g_world;
}

World World::single() {
  World w;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  w.host_ = host;
  w.cpu_share_ = share_cpus({this_process_cpu_budget()}, 0);
  return w;
}

std::string World::tag() const { return rank_ == 0 ? "" : str_cat("[rank ", rank_, "] "); }

void World::abort(const std::string& message, int status) const {
  // Under a launcher the ranks' stdout and stderr often end in one file, forwarded in chunks that
  // need not end at a line's end: rank 0's resolved config, cut mid-line, once held this message
  // inside one of its lines. So it opens a line of its own, for the eye, for grep '^ringtrain:
  // rank' and for `ringtrain elastic`'s blame (Note [Which host failed] in elastic/failure_blame.h).
  stderr_line(str_cat(mpi_ ? "\n" : "", "ringtrain: rank ", rank_, " of ", size_, " on ", host_, ": ", message));
  if (mpi_) wait_until_stderr_is_read(1.0);
  // MPI_COMM_WORLD, not comm_ (its duplicate): MPICH aborts any other communicator by messaging
  // each of its ranks and waits for them to progress, which ranks spinning on a shared-memory
  // flag never do; on MPI_COMM_WORLD it asks the process manager to end the job at once. A
  // process manager cut off from its launcher (a dead link) may never answer: MPICH's proxy then
  // leaves the rank waiting in MPI_Abort for good, so the rank ends itself after a few seconds.
  if (mpi_) {
    std::thread([status] {
      std::this_thread::sleep_for(std::chrono::seconds(kAbortGraceS));
      std::_Exit(status);
    }).detach();
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  std::_Exit(status);
}

void World::finalize() {
  if (mpi_) {
    MPI_Comm_free(&comm_);
    MPI_Finalize();
    mpi_ = false;
  }
}

void World::complete(MPI_Request request, const char* call, const CollectiveWatch& watch) const {
  if (watch.stall == nullptr) {
    check_mpi(MPI_Wait(&request, MPI_STATUS_IGNORE), call);
    return;
  }
  wait_for_collective(
      [&] {
        int done = 0;
        check_mpi(MPI_Test(&request, &done, MPI_STATUS_IGNORE), call);
        return done ? PollResult::kDone : PollResult::kIdle;
      },
      *watch.stall,
      [&](double waited_s) {
        return str_cat(watch.what, ": ", call, " over ", size_, " ranks has waited ", static_cast<int>(waited_s), " s");
      },
      [&] {
        return std::string(
                   ": a rank that has not joined it is stuck, dead or running a different schedule (MPI does not say "
                   "which; it is the rank that reports nothing)") +
               (watch.stall->broken_links ? watch.stall->broken_links() : "");
      });
}

void World::allreduce_sum(double* values, int count, const CollectiveWatch& watch) const {
  if (size_ == 1) return;
  MPI_Request r;
  check_mpi(MPI_Iallreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_, &r), "MPI_Iallreduce");
  complete(r, "MPI_Iallreduce", watch);
}

void World::allreduce_max(double* values, int count) const {
  if (size_ > 1) check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce");
}

std::vector<double> World::allgather(double value, const CollectiveWatch& watch) const {
  std::vector<double> all(static_cast<size_t>(size_), value);
  if (size_ == 1) return all;
  MPI_Request r;
  check_mpi(MPI_Iallgather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm_, &r), "MPI_Iallgather");
  complete(r, "MPI_Iallgather", watch);
  return all;
}

std::vector<uint64_t> World::allgather(const std::vector<uint64_t>& values, const CollectiveWatch& watch) const {
  if (size_ == 1) return values;
  std::vector<uint64_t> all(values.size() * static_cast<size_t>(size_));
  const int n = static_cast<int>(values.size());
  MPI_Request r;
  check_mpi(MPI_Iallgather(values.data(), n, MPI_UINT64_T, all.data(), n, MPI_UINT64_T, comm_, &r), "MPI_Iallgather");
  complete(r, "MPI_Iallgather", watch);
  return all;
}

std::vector<std::string> World::allgather(const std::string& value, const CollectiveWatch& watch) const {
  if (size_ == 1) return {value};
  const std::vector<double> lengths = allgather(static_cast<double>(value.size()), watch);
  std::vector<int> counts, offsets;
  int total = 0;
  for (double n : lengths) {
    offsets.push_back(total);
    counts.push_back(static_cast<int>(n));
    total += static_cast<int>(n);
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Request r;
  check_mpi(MPI_Iallgatherv(value.data(), static_cast<int>(value.size()), MPI_CHAR, all.data(), counts.data(),
                            offsets.data(), MPI_CHAR, comm_, &r),
            "MPI_Iallgatherv");
  complete(r, "MPI_Iallgatherv", watch);
  std::vector<std::string> values;
  for (size_t r = 0; r < counts.size(); ++r)
    values.push_back(all.substr(static_cast<size_t>(offsets[r]), static_cast<size_t>(counts[r])));
  return values;
}

void World::allreduce_sum(float* values, int64_t count, const CollectiveWatch& watch) const {
  constexpr int64_t kMaxCount = int64_t{1} << 30;  // MPI counts are int
  for (int64_t at = 0; size_ > 1 && at < count; at += kMaxCount) {
    MPI_Request r;
    check_mpi(MPI_Iallreduce(MPI_IN_PLACE, values + at, static_cast<int>(std::min(kMaxCount, count - at)), MPI_FLOAT,
                             MPI_SUM, comm_, &r),
              "MPI_Iallreduce");
    complete(r, "MPI_Iallreduce", watch);
  }
}

void World::broadcast(float* values, int64_t count, int root) const {
  constexpr int64_t kMaxCount = int64_t{1} << 30;
  for (int64_t at = 0; size_ > 1 && at < count; at += kMaxCount)
    check_mpi(MPI_Bcast(values + at, static_cast<int>(std::min(kMaxCount, count - at)), MPI_FLOAT, root, comm_),
              "MPI_Bcast");
}

void World::broadcast(std::string& value, int root, const CollectiveWatch& watch) const {
  if (size_ == 1) return;
  int64_t length = static_cast<int64_t>(value.size());
  MPI_Request r;
  check_mpi(MPI_Ibcast(&length, 1, MPI_INT64_T, root, comm_, &r), "MPI_Ibcast");
  complete(r, "MPI_Ibcast", watch);
  value.resize(static_cast<size_t>(length));
  constexpr int64_t kMaxCount = int64_t{1} << 30;
  for (int64_t at = 0; at < length; at += kMaxCount) {
    check_mpi(
        MPI_Ibcast(value.data() + at, static_cast<int>(std::min(kMaxCount, length - at)), MPI_CHAR, root, comm_, &r),
        "MPI_Ibcast");
    complete(r, "MPI_Ibcast", watch);
  }
}

void World::broadcast(std::vector<double>& values, int root, const CollectiveWatch& watch) const {
  if (size_ == 1) return;
  int64_t count = static_cast<int64_t>(values.size());
  MPI_Request r;
  check_mpi(MPI_Ibcast(&count, 1, MPI_INT64_T, root, comm_, &r), "MPI_Ibcast");
  complete(r, "MPI_Ibcast", watch);
  values.resize(static_cast<size_t>(count));
  if (count == 0) return;
  RT_CHECK(count <= INT32_MAX, "broadcast of ", count, " doubles: more than one MPI call carries");
  check_mpi(MPI_Ibcast(values.data(), static_cast<int>(count), MPI_DOUBLE, root, comm_, &r), "MPI_Ibcast");
  complete(r, "MPI_Ibcast", watch);
}

void World::barrier() const {
  if (size_ > 1) check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

}  // namespace rt
