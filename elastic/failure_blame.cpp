#include "elastic/failure_blame.h"

#include <regex>

#include "app/run/run_target.h"
#include "app/run/stop_signals.h"
#include "base/check.h"

namespace rt {
namespace {

const std::regex& rank_line() {
  static const std::regex re(R"(^ringtrain: rank \d+ of \d+ on ([^\s:]+): (.*)$)");
  return re;
}

const std::regex& peer() {
  static const std::regex re(R"(rank \d+ \(([^\s()]+)\))");
  return re;
}

// The launchers' lines that name a host where something died (not Open MPI's "HNP daemon ... on
// node", its own host).
const std::regex& launcher_line() {
  static const std::regex re(
      R"(on node (\S+) exited on signal|Remote daemon: .* on node (\S+)|RUNNING AT (\S+)|^srun: error: Node failure on (\S+)|^srun: error: Task launch for .* failed on node ([^\s:]+))");
  return re;
}

}  // namespace

bool tells_failure(const std::string& line) {
  return std::regex_search(line, rank_line()) || std::regex_search(line, launcher_line());
}

Blame blame_failure(const std::vector<std::string>& lines) {
  Blame launcher;
  for (const std::string& line : lines) {
    std::smatch m;
    if (std::regex_search(line, m, rank_line())) {
      const std::string reporter = m[1], message = m[2];
      if (message.find("error") == std::string::npos) continue;  // a warning
      std::smatch p;
      if (std::regex_search(message, p, peer()) && p[1] != reporter) return {p[1], line};
      if (message.find("has waited") != std::string::npos) {  // a collective that waited: no one named
        if (launcher.first_error.empty()) launcher.first_error = line;
        continue;
      }
      return {reporter, line};
    }
    if (launcher.host.empty() && std::regex_search(line, m, launcher_line())) {
      for (size_t i = 1; i < m.size(); ++i)
        if (m[i].matched) launcher.host = m[i];
      if (launcher.first_error.empty()) launcher.first_error = line;
    }
  }
  return launcher;
}

JobEnd job_end(int status) {
  if (status == 0 || status == kExitTargetMissed) return JobEnd::kFinished;
  if (status == kExitSavedOnSignal) return JobEnd::kSaved;
  if (status == kExitAbandoned) return JobEnd::kStopped;
  if (status == kExitConfigError || status == kExitDataError) return JobEnd::kWrongInput;
  return JobEnd::kFailed;
}

}  // namespace rt
