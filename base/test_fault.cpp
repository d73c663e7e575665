#include "base/test_fault.h"

#include <signal.h>

#include <cstdlib>
#include <optional>
#include <string>

#include "base/check.h"

namespace rt {
namespace {

struct Fault {
  int rank = -1;
  std::string point;
  int64_t step = -1;
};

std::optional<Fault> parse_fault(const char* text) {
  if (!text || !*text) return std::nullopt;
  const std::string s(text);
  const size_t a = s.find(':'), b = s.find(':', a == std::string::npos ? a : a + 1);
  RT_CHECK(a != std::string::npos, "RINGTRAIN_TEST_FAULT='", s, "': expected RANK:POINT or RANK:POINT:STEP");
  Fault f;
  f.rank = std::atoi(s.substr(0, a).c_str());
  f.point = s.substr(a + 1, b == std::string::npos ? std::string::npos : b - a - 1);
  if (b != std::string::npos) f.step = std::atoll(s.substr(b + 1).c_str());
  return f;
}

}  // namespace

bool fault_requested(std::string_view point, int rank, int64_t step) {
  static const std::optional<Fault> fault = parse_fault(std::getenv("RINGTRAIN_TEST_FAULT"));
  return fault && fault->rank == rank && fault->point == point && (fault->step < 0 || fault->step == step);
}

void inject_fault(std::string_view point, int rank, int64_t step) {
  if (fault_requested(point, rank, step)) throw Error(str_cat("injected fault at ", point, " on rank ", rank));
}

void freeze_this_process() { ::raise(SIGSTOP); }

}  // namespace rt
