// Which hosts can still run a process, asked through the launcher itself (`ringtrain elastic`, Note
// [Which host failed] in elastic/failure_blame.h): where a failed job's output names no host (Open
// MPI's mpirun reports a daemon killed on a host without naming the host), each host of the
// launch runs `sleep 1` as a job of one rank; a host where that fails, or has not ended within
// timeout_s, is one that failed.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace rt {

// one_rank_on(host) is the command that runs one rank on that host, to which "sleep 1" is
// appended. The probes run side by side, their output discarded. Returns the hosts whose probe
// failed, in the given order.
std::vector<std::string> failing_hosts(const std::vector<std::string>& hosts,
                                       const std::function<std::vector<std::string>(const std::string&)>& one_rank_on,
                                       double timeout_s);

}  // namespace rt
