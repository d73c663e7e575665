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

// Note [Exit statuses]: an error in what the user asked for ends the job with a status of its own,
// so that whoever relaunches failed jobs (`ringtrain elastic`) tells a job that would fail the same
// way again from one that lost a host or a link (status 1):
//   ConfigError  the command line or the config (78, EX_CONFIG);
//   DataError    a data or weights file it names: missing, unreadable, malformed (65, EX_DATAERR).
// Open MPI's mpirun and MPICH's mpiexec pass the failing rank's MPI_Abort status on.
class ConfigError : public Error {
 public:
  using Error::Error;
};
class DataError : public Error {
 public:
  using Error::Error;
};
inline constexpr int kExitDataError = 65;
inline constexpr int kExitConfigError = 78;

// Runs f; an rt::Error it throws leaves as a Kind (ConfigError or DataError) with the same message.
template <typename Kind, typename F>
decltype(auto) errors_as(F&& f) {
  try {
    return f();
  } catch (const ConfigError&) {
    throw;
  } catch (const DataError&) {
    throw;
  } catch (const Error& e) {
    throw Kind(e.what());
  }
}

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
