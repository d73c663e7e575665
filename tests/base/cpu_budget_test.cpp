// The CPU budget against hand-built cgroup trees (v1 and v2, a container's mount root) and the
// affinity masks that mpirun, srun and taskset hand out.
#include "base/cpu_budget.h"

#include <gtest/gtest.h>
#include <sched.h>

#include <filesystem>
#include <fstream>

#include "base/check.h"

namespace rt {
namespace {

namespace fs = std::filesystem;

class FakeCgroups : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("rt_cgroups_" + std::to_string(::getpid()) + "_" +
                                         ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void write(const std::string& rel, const std::string& text) {
    const fs::path p = root_ / rel;
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  }
  std::optional<double> quota() {
    return cgroup_cpu_quota((root_ / "proc_cgroup").string(), (root_ / "mountinfo").string(), (root_ / "fs").string());
  }
  fs::path root_;
};

TEST(CpuMax, ParsesQuotaOverPeriodAndMax) {
  EXPECT_DOUBLE_EQ(*parse_cpu_max("150000 100000\n", "f"), 1.5);
  EXPECT_DOUBLE_EQ(*parse_cpu_max("50000 100000", "f"), 0.5);
  EXPECT_FALSE(parse_cpu_max("max 100000\n", "f").has_value());
  EXPECT_FALSE(cfs_quota_cpus(-1, 100000).has_value());
  EXPECT_DOUBLE_EQ(*cfs_quota_cpus(300000, 100000), 3.0);
}

TEST(CpuMax, NamesTheFileOnGarbage) {
  try {
    parse_cpu_max("lots", "/sys/fs/cgroup/x/cpu.max");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("/sys/fs/cgroup/x/cpu.max"), std::string::npos) << e.what();
  }
}

TEST_F(FakeCgroups, V2TakesTheSmallestQuotaOnThePathToTheRoot) {
  write("proc_cgroup", "0::/kubepods/pod1/ctr\n");
  write("mountinfo", "30 20 0:26 / /sys/fs/cgroup rw,nosuid - cgroup2 cgroup2 rw\n");
  write("fs/sys/fs/cgroup/kubepods/cpu.max", "max 100000\n");
  write("fs/sys/fs/cgroup/kubepods/pod1/cpu.max", "250000 100000\n");
  write("fs/sys/fs/cgroup/kubepods/pod1/ctr/cpu.max", "400000 100000\n");
  EXPECT_DOUBLE_EQ(*quota(), 2.5);
}

TEST_F(FakeCgroups, V2InsideAContainerWhoseMountRootIsItsOwnCgroup) {
  // A container sees its cgroup mounted at /sys/fs/cgroup with root /docker/abc.
  write("proc_cgroup", "0::/docker/abc\n");
  write("mountinfo", "30 20 0:26 /docker/abc /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  write("fs/sys/fs/cgroup/cpu.max", "200000 100000\n");
  EXPECT_DOUBLE_EQ(*quota(), 2.0);
}

TEST_F(FakeCgroups, V1ReadsCfsQuotaFromTheCpuHierarchy) {
  write("proc_cgroup", "4:memory:/x\n3:cpu,cpuacct:/job/task\n0::/\n");
  write("mountinfo",
        "25 20 0:22 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n"
        "26 20 0:23 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n");
  write("fs/sys/fs/cgroup/cpu,cpuacct/job/task/cpu.cfs_quota_us", "-1\n");
  write("fs/sys/fs/cgroup/cpu,cpuacct/job/task/cpu.cfs_period_us", "100000\n");
  write("fs/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "150000\n");
  write("fs/sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
  EXPECT_DOUBLE_EQ(*quota(), 1.5);
}

TEST_F(FakeCgroups, NoQuotaAnywhereIsNone) {
  write("proc_cgroup", "0::/user.slice\n");
  write("mountinfo", "30 20 0:26 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  write("fs/sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
  EXPECT_FALSE(quota().has_value());
}

TEST(CpuBudget, TheQuotaCapsTheMaskRoundedDownButNeverBelowOne) {
  EXPECT_EQ((CpuBudget{{0, 1, 2, 3}, std::nullopt, 1}.cpus()), 4);
  EXPECT_EQ((CpuBudget{{0, 1, 2, 3}, 2.5, 1}.cpus()), 2);
  EXPECT_EQ((CpuBudget{{0, 1, 2, 3}, 0.5, 1}.cpus()), 1);
  EXPECT_EQ((CpuBudget{{0}, 8.0, 1}.cpus()), 1);
}

TEST(CpuShare, RanksBoundToTheirOwnCoresEachKeepTheirs) {  // mpirun --bind-to core, srun --cpu-bind
  const std::vector<CpuBudget> host{{{0, 1}, std::nullopt, 7}, {{2, 3}, std::nullopt, 7}};
  const CpuShare s = share_cpus(host, 1);
  EXPECT_EQ(s.cpus, 2);
  EXPECT_FALSE(s.oversubscribed);
  EXPECT_EQ(s.how, "2 CPUs of an affinity mask of 2");
}

TEST(CpuShare, RanksSharingOneMaskDivideIt) {  // taskset -c 0-3 mpirun -np 2
  const std::vector<CpuBudget> host{{{0, 1, 2, 3}, std::nullopt, 7}, {{0, 1, 2, 3}, std::nullopt, 7}};
  EXPECT_EQ(share_cpus(host, 0).cpus, 2);
  EXPECT_EQ(share_cpus(host, 0).how, "2 CPUs of an affinity mask of 4 shared by 2 ranks");
}

TEST(CpuShare, MoreRanksThanCpusOnAMaskIsOversubscribedWithOneThreadEach) {  // taskset -c 0 mpirun -np 2
  const std::vector<CpuBudget> host{{{0}, std::nullopt, 7}, {{0}, std::nullopt, 7}};
  const CpuShare s = share_cpus(host, 0);
  EXPECT_EQ(s.cpus, 1);
  EXPECT_TRUE(s.oversubscribed);
}

TEST(CpuShare, RanksInOneCgroupShareItsQuota) {  // mpirun -np 2 in a pod limited to 3 CPUs
  const std::vector<CpuBudget> host{{{0, 1, 2, 3, 4, 5, 6, 7}, 3.0, 7}, {{0, 1, 2, 3, 4, 5, 6, 7}, 3.0, 7}};
  const CpuShare s = share_cpus(host, 1);
  EXPECT_EQ(s.cpus, 1);
  EXPECT_EQ(s.how, "1 CPU of a cgroup CPU quota of 3 shared by 2 ranks (affinity mask of 8)");
}

TEST(CpuShare, RanksInTheirOwnPodsEachKeepTheirQuota) {  // one rank per pod, each limited to 2 CPUs
  const std::vector<CpuBudget> host{{{0, 1, 2, 3, 4, 5, 6, 7}, 2.0, 1}, {{0, 1, 2, 3, 4, 5, 6, 7}, 2.0, 2}};
  // The masks overlap (both the whole machine), so the mask alone would give 4 each; the quota 2.
  EXPECT_EQ(share_cpus(host, 0).cpus, 2);
}

TEST(CpuBudget, ThisProcessSeesItsOwnAffinityMask) {
  cpu_set_t set;
  CPU_ZERO(&set);
  ASSERT_EQ(sched_getaffinity(0, sizeof set, &set), 0);
  EXPECT_EQ(static_cast<int>(affinity_cpus().size()), CPU_COUNT(&set));
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(affinity_cpus().front(), &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof one, &one), 0);
  EXPECT_EQ(affinity_cpus().size(), 1u);
  EXPECT_EQ(this_process_cpu_budget().cpus(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof set, &set), 0);
}

}  // namespace
}  // namespace rt
