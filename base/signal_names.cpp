#include "base/signal_names.h"

#include <signal.h>

#include <algorithm>

#include "base/check.h"

namespace rt {
namespace {

struct Named {
  const char* name;
  int signal;
};
constexpr Named kSignals[] = {{"SIGTERM", SIGTERM}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGINT", SIGINT}};

}  // namespace

std::vector<int> parse_signal_list(const std::string& text) {
  std::vector<int> out;
  size_t start = 0;
  while (start <= text.size() && !text.empty()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    std::string name = text.substr(start, end - start);
    name.erase(0, name.find_first_not_of(' '));
    name.erase(name.find_last_not_of(' ') + 1);
    if (name.rfind("SIG", 0) != 0) name = "SIG" + name;  // "USR1" as well as "SIGUSR1"
    int found = 0;
    for (const Named& s : kSignals)
      if (name == s.name) found = s.signal;
    RT_CHECK(found != 0, "unknown signal '", text.substr(start, end - start),
             "' (expected a comma-separated list of SIGTERM, SIGUSR1, SIGUSR2, SIGINT)");
    if (std::find(out.begin(), out.end(), found) == out.end()) out.push_back(found);
    start = end + 1;
  }
  return out;
}

const std::vector<int>& watchable_signals() {
  static const std::vector<int> all = [] {
    std::vector<int> v;
    for (const Named& s : kSignals) v.push_back(s.signal);
    return v;
  }();
  return all;
}

std::string signal_name(int signal) {
  for (const Named& s : kSignals)
    if (s.signal == signal) return s.name;
  return str_cat("signal ", signal);
}

}  // namespace rt
