// Which host a failed job lost, read from what the job printed (`ringtrain elastic`), and what its
// exit status asks of the supervisor.
#pragma once

#include <string>
#include <vector>

namespace rt {

// Note [Which host failed]: the job's first error line, "ringtrain: rank R of P on HOST: ...",
// comes from the rank that met the failure. Where it names a peer, as "rank Q (HOST2)" (a TCP
// link closed or silent), the peer's host failed; where it is a collective that waited in vain
// (MPI does not say for whom), it names no one; otherwise the failure is its own host's (a rank's
// own error). Without a line that decides, the launcher's own words name a host: Open MPI's
// "on node HOST" (a process that exited on a signal, a daemon it lost), Hydra's "RUNNING AT HOST",
// srun's "Node failure on HOST" or "Task launch ... failed on node HOST". Not srun's "srun: error:
// HOST: task N: Exited with exit code 1" or "...: Killed": those are the ranks that srun ended
// after the failure, or that ended on their own error (its line came first), while the tasks of a
// node whose step daemon died get no line at all.
struct Blame {
  std::string host;         // empty: none could be told
  std::string first_error;  // the first "ringtrain: rank ..." error line, or the launcher's line
};
Blame blame_failure(const std::vector<std::string>& lines);

// Whether a line is one blame_failure reads (the rest need not be kept).
bool tells_failure(const std::string& line);

// What an exit status of the job means to the supervisor.
enum class JobEnd {
  kFinished,    // 0, or 3 (ran to its epochs without reaching eval.target_top1): done
  kSaved,       // 75: saved on a signal, resume to go on
  kStopped,     // 143: stopped on a signal without saving
  kWrongInput,  // 65 or 78: its data or config is wrong; running it again fails the same way
  kFailed,      // anything else: a rank, host or link failed; relaunch
};
JobEnd job_end(int status);

}  // namespace rt
