#include "dist/world.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <thread>

#include "base/check.h"

namespace rt {
namespace {

World* g_world = nullptr;

void check_mpi(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char msg[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, msg, &len);
  throw Error(str_cat(what, " failed: ", std::string(msg, static_cast<size_t>(len))));
}

}  // namespace

bool launched_by_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

World& World::init(int* argc, char*** argv) {
  RT_CHECK(g_world == nullptr, "World::init called twice");
  g_world = new World();
  World& w = *g_world;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  w.host_ = host;
  if (!launched_by_mpi()) return w;
  // SERIALIZED: the gradient ring's thread and the main thread both call MPI, never at once.
  int provided = 0;
  check_mpi(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
  w.mpi_ = true;
  if (provided < MPI_THREAD_SERIALIZED) {
    std::cerr << "ringtrain: this MPI provides thread level " << provided << ", ringtrain needs MPI_THREAD_SERIALIZED\n";
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
  MPI_Comm_free(&local);
  return w;
}

World& World::get() {
  if (!g_world) g_world = new World();
  return *g_world;
}

World World::single() {
  World w;
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  w.host_ = host;
  return w;
}

bool World::oversubscribed() const {
  return local_size_ > static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

std::string World::tag() const { return rank_ == 0 ? "" : str_cat("[rank ", rank_, "] "); }

void World::abort(const std::string& message) const {
  std::cerr << "ringtrain: rank " << rank_ << " of " << size_ << " on " << host_ << ": " << message << std::endl;
  if (mpi_) MPI_Abort(comm_, 1);
  std::_Exit(1);
}

void World::finalize() {
  if (mpi_) {
    MPI_Comm_free(&comm_);
    MPI_Finalize();
    mpi_ = false;
  }
}

void World::allreduce_sum(double* values, int count) const {
  if (size_ > 1) check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_), "MPI_Allreduce");
}

void World::allreduce_max(double* values, int count) const {
  if (size_ > 1) check_mpi(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_MAX, comm_), "MPI_Allreduce");
}

std::vector<double> World::allgather(double value) const {
  std::vector<double> all(static_cast<size_t>(size_), value);
  if (size_ > 1) check_mpi(MPI_Allgather(&value, 1, MPI_DOUBLE, all.data(), 1, MPI_DOUBLE, comm_), "MPI_Allgather");
  return all;
}

void World::allreduce_sum(float* values, int64_t count) const {
  constexpr int64_t kMaxCount = int64_t{1} << 30;  // MPI counts are int
  for (int64_t at = 0; size_ > 1 && at < count; at += kMaxCount)
    check_mpi(MPI_Allreduce(MPI_IN_PLACE, values + at, static_cast<int>(std::min(kMaxCount, count - at)), MPI_FLOAT,
                            MPI_SUM, comm_),
              "MPI_Allreduce");
}

void World::broadcast(float* values, int64_t count, int root) const {
  constexpr int64_t kMaxCount = int64_t{1} << 30;
  for (int64_t at = 0; size_ > 1 && at < count; at += kMaxCount)
    check_mpi(MPI_Bcast(values + at, static_cast<int>(std::min(kMaxCount, count - at)), MPI_FLOAT, root, comm_),
              "MPI_Bcast");
}

void World::barrier() const {
  if (size_ > 1) check_mpi(MPI_Barrier(comm_), "MPI_Barrier");
}

}  // namespace rt
