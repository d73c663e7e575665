// Errors and check macros shared by every ringtrain library.
// RT_CHECK(cond, parts...) throws rt::Error whose message is the streamed parts followed by the
// source location; callers catch rt::Error at the edge (the app) and print what() as it is.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace rt {

// Every error ringtrain raises on purpose; the message is meant for the user, complete on its own.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

template <typename... Parts>
std::string str_cat(const Parts&... parts) {
  std::ostringstream os;
  (os << ... << parts);
  return os.str();
}

[[noreturn]] void throw_check_failure(const char* file, int line, const std::string& message);

}  // namespace rt

// User-facing check: the message says what was wrong and what was expected.
#define RT_CHECK(cond, ...)                                                                 \
  do {                                                                                      \
    if (!(cond)) ::rt::throw_check_failure(__FILE__, __LINE__, ::rt::str_cat(__VA_ARGS__)); \
  } while (0)

// Internal invariant: a failure here is a ringtrain bug, not bad input.
#define RT_ASSERT(cond)                                                                   \
  do {                                                                                    \
    if (!(cond)) ::rt::throw_check_failure(__FILE__, __LINE__, "internal error: " #cond); \
  } while (0)
