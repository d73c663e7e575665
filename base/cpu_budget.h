// How many CPUs this process may really use: its affinity mask (taskset, mpirun's and srun's
// binding), capped by its cgroup's CPU quota (docker --cpus, a Kubernetes CPU limit), never the
// machine's core count, which says nothing about either. Ranks that share a mask or a cgroup share
// its CPUs (share_cpus divides them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rt {

// A cgroup v2 cpu.max ("150000 100000": 1.5 CPUs; "max 100000": no quota) in CPUs, nullopt for
// none. Throws rt::Error naming `file` when the contents are not of that form.
std::optional<double> parse_cpu_max(std::string_view contents, const std::string& file);
// A cgroup v1 quota: cpu.cfs_quota_us (-1: none) over cpu.cfs_period_us.
std::optional<double> cfs_quota_cpus(int64_t quota_us, int64_t period_us);

// The smallest CPU quota on the path from this process's cgroup up to its root, or nullopt.
// proc_cgroup and mountinfo are /proc/self/cgroup and /proc/self/mountinfo; `root` is prefixed to
// every mount point read from mountinfo (tests point it at a fake /sys/fs/cgroup tree).
std::optional<double> cgroup_cpu_quota(const std::string& proc_cgroup = "/proc/self/cgroup",
                                       const std::string& mountinfo = "/proc/self/mountinfo",
                                       const std::string& root = "");

// The CPUs of this process's affinity mask, by number.
std::vector<int> affinity_cpus();

// What one process may use: the CPUs of its mask and its cgroup's quota.
struct CpuBudget {
  std::vector<int> mask;        // affinity_cpus()
  std::optional<double> quota;  // cgroup_cpu_quota()
  uint64_t cgroup = 0;          // which cgroup (a hash of /proc/self/cgroup): processes in one share its quota
  // floor(quota) where a quota is below the mask's size, else the mask's size; at least 1.
  int cpus() const;
};
CpuBudget this_process_cpu_budget();

// One rank's share of its host's CPUs, given every rank's budget on that host: its budget divided
// among the ranks whose masks overlap its own (taskset around mpirun gives all ranks one mask;
// mpirun's and srun's binding give each its own) and among the ranks in its cgroup (its quota is
// theirs too). At least 1; oversubscribed when the ranks on its CPUs outnumber them.
struct CpuShare {
  int cpus = 1;
  bool oversubscribed = false;
  std::string how;  // "1 CPU of an affinity mask of 2 shared by 2 ranks", "1 CPU of a cgroup CPU quota of 1.5 ..."
};
CpuShare share_cpus(const std::vector<CpuBudget>& host_ranks, size_t me);

}  // namespace rt
