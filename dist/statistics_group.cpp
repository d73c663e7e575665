#include "dist/statistics_group.h"

#include "base/check.h"
#include "dist/transport_primitives.h"
#include "dist/shm_transport.h"
#include "dist/two_level_collective.h"

namespace rt {
namespace {

class ShmStatisticsGroup final : public StatisticsGroup {
 public:
  // Small slots: a batch-norm layer's statistics are two floats per channel.
  ShmStatisticsGroup(MPI_Comm group, const StallPolicy& stall, std::function<int64_t()> step)
      : transport_(group, stall, size_t{16} << 10, 4), ring_(transport_ring(transport_)), step_(std::move(step)) {}
  ~ShmStatisticsGroup() override = default;
  int size() const override { return transport_.world(); }
  void average(float* values, int64_t count) override { ring_.run(values, count, WaitContext{step_(), 0, ""}); }

 private:
  ShmTransport transport_;
  RingExecutor ring_;
  std::function<int64_t()> step_;
};

}  // namespace

std::string statistics_group_refusal(int group_size, const HostLayout& layout) {
  for (const std::vector<int>& ranks : layout.ranks_of_host)
    if (ranks.size() % static_cast<size_t>(group_size) != 0)
      return str_cat("train.bn_group = ", group_size, " needs each host's ranks in groups of ", group_size,
                     " consecutive ranks; this job has ", layout.describe());
  return "";
}

StatisticsGroupComm::~StatisticsGroupComm() {
  if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
}

StatisticsGroupComm statistics_group_comm(int group_size, MPI_Comm comm, const StallPolicy& stall) {
  const HostLayout layout = host_layout(comm);
  const std::string refusal = statistics_group_refusal(group_size, layout);
  RT_CHECK(refusal.empty(), refusal);
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::vector<int>& mine =
      layout.ranks_of_host[static_cast<size_t>(layout.host_of_rank[static_cast<size_t>(rank)])];
  size_t at = 0;
  while (mine[at] != rank) ++at;
  const size_t first = at - at % static_cast<size_t>(group_size);
  StatisticsGroupComm made;
  RT_CHECK(MPI_Comm_split(comm, mine[first], rank, &made.comm) == MPI_SUCCESS,
           "MPI_Comm_split for train.bn_group failed");
  // A stalled wait names the world's rank and this ring.
  made.stall = stall;
  made.stall.world_ranks.assign(mine.begin() + static_cast<std::ptrdiff_t>(first),
                                mine.begin() + static_cast<std::ptrdiff_t>(first) + group_size);
  made.stall.ring = " in the batch-norm group (train.bn_group)";
  return made;
}

std::unique_ptr<StatisticsGroup> make_statistics_group(int group_size, MPI_Comm comm, const StallPolicy& stall,
                                                       std::function<int64_t()> step) {
  const StatisticsGroupComm group = statistics_group_comm(group_size, comm, stall);
  return std::make_unique<ShmStatisticsGroup>(group.comm, group.stall, std::move(step));
}

}  // namespace rt
