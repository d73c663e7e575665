#include "dist/collective.h"

#include "base/check.h"

namespace rt {
namespace {

class RingCollective final : public Collective {
 public:
  RingCollective(MPI_Comm comm, const StallPolicy& stall) : transport_(comm, stall), ring_(transport_) {}
  void average(float* data, int64_t count, const WaitContext& context) override { ring_.run(data, count, context); }

 private:
  MpiTransport transport_;
  RingAllreduce ring_;
};

class MpiCollective final : public Collective {
 public:
  explicit MpiCollective(MPI_Comm comm) {
    MPI_Comm_dup(comm, &comm_);
    MPI_Comm_size(comm_, &world_);
  }
  ~MpiCollective() override { MPI_Comm_free(&comm_); }
  void average(float* data, int64_t count, const WaitContext& context) override {
    constexpr int64_t kMaxCount = int64_t{1} << 30;
    for (int64_t at = 0; at < count; at += kMaxCount)
      RT_CHECK(MPI_Allreduce(MPI_IN_PLACE, data + at, static_cast<int>(std::min(kMaxCount, count - at)), MPI_FLOAT,
                             MPI_SUM, comm_) == MPI_SUCCESS,
               "MPI_Allreduce failed in step ", context.step, ", bucket ", context.bucket);
    const float scale = 1.0f / static_cast<float>(world_);
    for (int64_t i = 0; i < count; ++i) data[i] *= scale;
  }

 private:
  MPI_Comm comm_;
  int world_ = 1;
};

}  // namespace

std::unique_ptr<Collective> make_collective(const std::string& algorithm, MPI_Comm comm, const StallPolicy& stall) {
  if (algorithm == "ring") return std::make_unique<RingCollective>(comm, stall);
  if (algorithm == "mpi") return std::make_unique<MpiCollective>(comm);
  RT_CHECK(false, "unknown allreduce algorithm '", algorithm, "': expected ring or mpi");
  return nullptr;
}

}  // namespace rt
