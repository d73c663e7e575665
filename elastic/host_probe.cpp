#include "elastic/host_probe.h"

#include <chrono>
#include <memory>

#include "elastic/job_process.h"

namespace rt {

std::vector<std::string> failing_hosts(const std::vector<std::string>& hosts,
                                       const std::function<std::vector<std::string>(const std::string&)>& one_rank_on,
                                       double timeout_s) {
  std::vector<std::unique_ptr<JobProcess>> probes;
  for (const std::string& host : hosts) {
    std::vector<std::string> argv = one_rank_on(host);
    argv.insert(argv.end(), {"sleep", "1"});
    probes.push_back(std::make_unique<JobProcess>(argv, std::vector<std::string>{}, JobProcess::Echo::kQuiet));
  }
  // They run side by side: each is waited for until the one deadline, then killed (its group).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  std::vector<std::string> failed;
  const auto ignore = [](const std::string&) {};
  for (size_t i = 0; i < hosts.size(); ++i) {
    bool ended = probes[i]->poll(0.1, ignore);
    while (!ended && std::chrono::steady_clock::now() < deadline) ended = probes[i]->poll(0.1, ignore);
    if (!ended) probes[i]->kill_all();
    if (!ended || probes[i]->status() != 0) failed.push_back(hosts[i]);
  }
  return failed;
}

}  // namespace rt
