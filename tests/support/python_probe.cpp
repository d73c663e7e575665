#include "tests/support/python_probe.h"

#include <unistd.h>

#include <cstdlib>
#include <map>

namespace rt::testing {

const std::string& python_unavailable(const std::string& modules) {
  static std::map<std::string, std::string> answers;
  auto found = answers.find(modules);
  if (found != answers.end()) return found->second;
  std::string reason;
  if (access(kPython, X_OK) != 0) {
    reason = std::string(kPython) + " is not available";
  } else {
    const std::string cmd = std::string(kPython) + " -c 'import " + modules + "' > /dev/null 2>&1";
    if (std::system(cmd.c_str()) != 0) reason = "`import " + modules + "` fails in " + kPython;
  }
  return answers.emplace(modules, reason).first->second;
}

}  // namespace rt::testing
