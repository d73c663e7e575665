// Note [Stopping on a signal]: a scheduler that wants a job's nodes back says so with a signal
// (Slurm's `--signal=B:USR1@120` forwarded by the batch script, Kubernetes' SIGTERM before its
// grace period), often to one process only. The handler only counts; at each step boundary the
// ranks sum what they counted (StepAgreement::after_step), so all of them save the same step and
// stop with kExitSavedOnSignal. A second SIGTERM, or checkpoint.signal_grace_s passing before the
// save is done, ends the job at once with kExitAbandoned, the last complete checkpoint standing.
#pragma once

#include <signal.h>

#include <atomic>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/signal_names.h"

namespace rt {

// Exit statuses a requeue script can test (documented in README.md).
inline constexpr int kExitSavedOnSignal = 75;  // EX_TEMPFAIL: saved on a signal; resume to go on
inline constexpr int kExitAbandoned = 143;     // 128 + SIGTERM: stopped without saving

// Blocks every signal StopSignals can watch, in this thread and the threads it starts, so that one
// arriving while the process starts (before the config says which to watch) waits instead of
// ending it; `ringtrain train` calls it first thing, StopSignals unblocks them.
void hold_stop_signals();

class StopSignals {
 public:
  // Installs handlers for `signals` (the previous ones come back in the destructor), then lets
  // every signal that hold_stop_signals held through: a watched one that was held counts as
  // received, any other takes its usual action. While the object lives, `give_up` is called from
  // a watcher thread on a second SIGTERM or when `grace_s` (> 0) has passed since the first
  // signal; it should not return (where it does, the watcher stops).
  StopSignals(std::vector<int> signals, double grace_s, std::function<void(const std::string&)> give_up);
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  bool watching() const { return !signals_.empty(); }
  // The first watched signal this process received, 0 if none.
  static int received();
  // The save the signal asked for is complete: from now on the watcher gives up on nothing.
  static void saved();
  // Whether SIGUSR2 asks for the straggler report (it is not among the stopping signals), and
  // whether it came since the last call.
  static bool reports();
  static bool take_report_request();
  // Training is over (finished, or saved on a signal). A watched signal that comes while the
  // process ends (the trainer's teardown, MPI_Finalize) has nothing left to stop, and with its
  // default action back it would turn a finished job's status 0, or a saved one's 75, into a
  // signal's; a second SIGTERM or the grace period must not abandon it either. So from now on the
  // watched signals are ignored, the watcher gives up nothing, and the destructor leaves them
  // ignored instead of giving back the handlers from before.
  void ignore_after_training();

 private:
  void watch();

  std::vector<int> signals_;
  struct sigaction report_previous_ {};
  std::vector<struct sigaction> previous_;  // the handlers before ours, in signals_' order
  bool ignore_at_end_ = false;
  double grace_s_;
  std::function<void(const std::string&)> give_up_;
  std::mutex mutex_;
  std::condition_variable done_cv_;
  bool done_ = false;
  std::thread watcher_;
};

}  // namespace rt
