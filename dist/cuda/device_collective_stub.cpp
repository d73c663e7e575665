// A build without CUDA has no device collectives; asking for one is an error, not a link failure.
#include "base/check.h"
#include "dist/cuda/device_collective.h"
#include "dist/cuda/device_powersgd.h"

namespace rt {
namespace {
constexpr const char* kNotBuilt =
    "this ringtrain was built without CUDA (configure with -DRINGTRAIN_CUDA=ON on a machine with the CUDA toolkit)";
}

std::unique_ptr<Collective> make_device_collective(const CollectiveSpec&, MPI_Comm, const StallPolicy&) {
  RT_CHECK(false, kNotBuilt);
  return nullptr;
}
std::string nccl_version() { return ""; }

namespace powersgd_kernels {
double products_seconds(int64_t, int64_t, int64_t, int) {
  RT_CHECK(false, kNotBuilt);
  return 0;
}
}  // namespace powersgd_kernels

std::unique_ptr<PowerSgdBuckets> make_device_powersgd(const std::vector<ParamExtent>&,
                                                      const std::vector<std::vector<int64_t>>&,
                                                      const std::vector<Bucket>&, const PowerSgdOptions&) {
  RT_CHECK(false, kNotBuilt);
  return nullptr;
}

std::unique_ptr<StatisticsGroup> make_device_statistics_group(MPI_Comm, const StallPolicy&, std::function<int64_t()>) {
  RT_CHECK(false, kNotBuilt);
  return nullptr;
}

std::unique_ptr<DeviceExchange> make_nccl_exchange(MPI_Comm) {
  RT_CHECK(false, kNotBuilt);
  return nullptr;
}
std::unique_ptr<Collective> make_device_ring(std::unique_ptr<DeviceExchange>, Wire, const StallPolicy&) {
  RT_CHECK(false, kNotBuilt);
  return nullptr;
}
std::unique_ptr<Collective> make_device_two_level_ring(std::unique_ptr<DeviceExchange>, std::unique_ptr<DeviceExchange>,
                                                       const TwoLevelPlace&, Wire, const StallPolicy&) {
  RT_CHECK(false, kNotBuilt);
  return nullptr;
}

}  // namespace rt
