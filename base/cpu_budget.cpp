#include "base/cpu_budget.h"

#include <sched.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>

#include "base/check.h"

namespace rt {
namespace {

std::optional<std::string> read_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> parts;
  size_t at = 0;
  for (;;) {
    const size_t next = s.find(sep, at);
    parts.emplace_back(s.substr(at, next == std::string_view::npos ? std::string_view::npos : next - at));
    if (next == std::string_view::npos) return parts;
    at = next + 1;
  }
}

bool has_word(std::string_view list, std::string_view word) {
  for (const std::string& w : split(list, ','))
    if (w == word) return true;
  return false;
}

// A cgroup hierarchy that can hold a CPU quota: where it is mounted, the cgroup at its mount
// root, and this process's cgroup in it.
struct Hierarchy {
  bool v2 = false;
  std::string mount_point, mount_root, cgroup;
};

// The quota set in one cgroup folder, if any.
std::optional<double> quota_in(const std::string& dir, bool v2) {
  if (v2) {
    const auto text = read_file(dir + "/cpu.max");
    return text ? parse_cpu_max(*text, dir + "/cpu.max") : std::nullopt;
  }
  const auto quota = read_file(dir + "/cpu.cfs_quota_us"), period = read_file(dir + "/cpu.cfs_period_us");
  if (!quota || !period) return std::nullopt;
  try {
    return cfs_quota_cpus(std::stoll(*quota), std::stoll(*period));
  } catch (const std::logic_error&) {
    RT_CHECK(false, "cannot read the CPU quota in ", dir, ": cpu.cfs_quota_us '", *quota, "', cpu.cfs_period_us '",
             *period, "'");
  }
  return std::nullopt;
}

// The smallest quota from the process's cgroup up to the hierarchy's mount root.
std::optional<double> smallest_quota(const Hierarchy& h, const std::string& root) {
  std::string rel = h.cgroup;
  if (h.mount_root != "/" && rel.rfind(h.mount_root, 0) == 0) rel = rel.substr(h.mount_root.size());
  std::optional<double> best;
  for (;;) {
    const std::string dir = root + h.mount_point + (rel == "/" ? "" : rel);
    if (const auto q = quota_in(dir, h.v2)) best = best ? std::min(*best, *q) : *q;
    if (rel.empty() || rel == "/") return best;
    const size_t slash = rel.find_last_of('/');
    rel = slash == 0 || slash == std::string::npos ? "/" : rel.substr(0, slash);
  }
}

}  // namespace

std::optional<double> parse_cpu_max(std::string_view contents, const std::string& file) {
  std::istringstream in{std::string(contents)};
  std::string quota;
  int64_t period = 0;
  in >> quota >> period;
  RT_CHECK(!in.fail() && period > 0, "cannot read the CPU quota in ", file, ": expected '<quota|max> <period>', got '",
           contents, "'");
  if (quota == "max") return std::nullopt;
  try {
    return cfs_quota_cpus(std::stoll(quota), period);
  } catch (const std::logic_error&) {
    RT_CHECK(false, "cannot read the CPU quota in ", file, ": '", quota, "' is neither a number nor max");
  }
  return std::nullopt;
}

std::optional<double> cfs_quota_cpus(int64_t quota_us, int64_t period_us) {
  if (quota_us <= 0 || period_us <= 0) return std::nullopt;
  return static_cast<double>(quota_us) / static_cast<double>(period_us);
}

std::optional<double> cgroup_cpu_quota(const std::string& proc_cgroup, const std::string& mountinfo,
                                       const std::string& root) {
  const auto cgroups = read_file(proc_cgroup), mounts = read_file(mountinfo);
  if (!cgroups || !mounts) return std::nullopt;  // not Linux, or no /proc: no quota we can see
  // "hierarchy:controllers:path"; v2's line is "0::path".
  std::optional<std::string> v2_path, v1_path;
  std::istringstream lines(*cgroups);
  for (std::string line; std::getline(lines, line);) {
    const auto parts = split(line, ':');
    if (parts.size() < 3) continue;
    const std::string path = line.substr(parts[0].size() + parts[1].size() + 2);
    if (parts[0] == "0" && parts[1].empty()) v2_path = path;
    if (has_word(parts[1], "cpu")) v1_path = path;
  }
  // mountinfo: "id parent dev root mount_point options [optional...] - fstype source super_options".
  std::vector<Hierarchy> found;
  std::istringstream mount_lines(*mounts);
  for (std::string line; std::getline(mount_lines, line);) {
    const auto fields = split(line, ' ');
    const auto dash = std::find(fields.begin(), fields.end(), "-");
    if (fields.size() < 5 || fields.end() - dash < 2) continue;
    const std::string& fstype = *(dash + 1);
    const std::string super_options = fields.end() - dash > 3 ? *(dash + 3) : "";
    if (fstype == "cgroup2" && v2_path) found.push_back({true, fields[4], fields[3], *v2_path});
    if (fstype == "cgroup" && v1_path && has_word(super_options, "cpu"))
      found.push_back({false, fields[4], fields[3], *v1_path});
  }
  std::optional<double> best;
  for (const Hierarchy& h : found)
    if (const auto q = smallest_quota(h, root)) best = best ? std::min(*best, *q) : *q;
  return best;
}

std::vector<int> affinity_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<int> cpus;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c)
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  return cpus;
}

int CpuBudget::cpus() const {
  int n = std::max<int>(1, static_cast<int>(mask.size()));
  if (quota) n = std::min(n, static_cast<int>(std::floor(*quota)));
  return std::max(1, n);
}

CpuBudget this_process_cpu_budget() {
  const auto cgroups = read_file("/proc/self/cgroup");
  return {affinity_cpus(), cgroup_cpu_quota(), cgroups ? std::hash<std::string>{}(*cgroups) : 0};
}

CpuShare share_cpus(const std::vector<CpuBudget>& host_ranks, size_t me) {
  const CpuBudget& mine = host_ranks.at(me);
  int on_mask = 0, in_cgroup = 0;
  for (const CpuBudget& other : host_ranks) {
    const bool overlaps = std::any_of(other.mask.begin(), other.mask.end(), [&](int c) {
      return std::find(mine.mask.begin(), mine.mask.end(), c) != mine.mask.end();
    });
    on_mask += overlaps ? 1 : 0;
    in_cgroup += other.cgroup == mine.cgroup ? 1 : 0;
  }
  const int mask_cpus = std::max<int>(1, static_cast<int>(mine.mask.size()));
  const auto ranks_word = [](int n) { return str_cat(n, n == 1 ? " rank" : " ranks"); };
  CpuShare share;
  share.cpus = std::max(1, mask_cpus / std::max(1, on_mask));
  share.oversubscribed = on_mask > mask_cpus;
  share.how = str_cat(share.cpus == 1 ? "1 CPU" : str_cat(share.cpus, " CPUs"), " of an affinity mask of ", mask_cpus,
                      on_mask > 1 ? str_cat(" shared by ", ranks_word(on_mask)) : "");
  if (mine.quota) {
    const int of_quota = std::max(1, static_cast<int>(std::floor(*mine.quota / std::max(1, in_cgroup))));
    if (of_quota < share.cpus) {
      share.cpus = of_quota;
      share.how = str_cat(of_quota == 1 ? "1 CPU" : str_cat(of_quota, " CPUs"), " of a cgroup CPU quota of ",
                          *mine.quota, in_cgroup > 1 ? str_cat(" shared by ", ranks_word(in_cgroup)) : "",
                          " (affinity mask of ", mask_cpus, ")");
    }
  }
  return share;
}

}  // namespace rt
