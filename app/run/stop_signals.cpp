#include "app/run/stop_signals.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstring>

#include "base/check.h"

namespace rt {
namespace {

// Written by the handler, which may only touch lock-free atomics.
std::atomic<int> g_first_signal{0};
std::atomic<int> g_sigterms{0};
std::atomic<bool> g_saved{false};    // set outside the handler
std::atomic<bool> g_report{false};   // SIGUSR2 asked for the straggler report
std::atomic<bool> g_reports{false};  // SIGUSR2 is the report's
static_assert(std::atomic<int>::is_always_lock_free);

void on_signal(int signal) {
  int none = 0;
  g_first_signal.compare_exchange_strong(none, signal);
  if (signal == SIGTERM) g_sigterms.fetch_add(1);
}

void on_report(int) { g_report = true; }

sigset_t watchable() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : watchable_signals()) sigaddset(&set, s);
  return set;
}

}  // namespace

void hold_stop_signals() {
  const sigset_t set = watchable();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

StopSignals::StopSignals(std::vector<int> signals, double grace_s, std::function<void(const std::string&)> give_up)
    : signals_(std::move(signals)), grace_s_(grace_s), give_up_(std::move(give_up)) {
  g_first_signal = 0;
  g_sigterms = 0;
  g_saved = false;
  for (int s : signals_) {
    struct sigaction action {};
    action.sa_handler = on_signal;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;  // a read or wait that the signal interrupts goes on
    struct sigaction old {};
    RT_CHECK(sigaction(s, &action, &old) == 0, "cannot install a handler for ", signal_name(s), ": ",
             std::strerror(errno));
    previous_.push_back(old);
  }
  // SIGUSR2, where it stops nothing, asks for the straggler report instead (Note [Naming the
  // straggler] in app/run/straggler_report.h) rather than ending the job.
  g_report = false;
  g_reports = std::find(signals_.begin(), signals_.end(), SIGUSR2) == signals_.end();
  if (g_reports) {
    struct sigaction action {};
    action.sa_handler = on_report;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    RT_CHECK(sigaction(SIGUSR2, &action, &report_previous_) == 0,
             "cannot install a handler for SIGUSR2: ", std::strerror(errno));
  }
  if (!signals_.empty()) watcher_ = std::thread([this] { watch(); });
  const sigset_t set = watchable();
  pthread_sigmask(SIG_UNBLOCK, &set, nullptr);
}

StopSignals::~StopSignals() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    done_ = true;
  }
  done_cv_.notify_all();
  if (watcher_.joinable()) watcher_.join();
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (size_t i = 0; i < previous_.size(); ++i)
    sigaction(signals_[i], ignore_at_end_ ? &ignore : &previous_[i], nullptr);
  if (g_reports.exchange(false)) sigaction(SIGUSR2, ignore_at_end_ ? &ignore : &report_previous_, nullptr);
}

bool StopSignals::take_report_request() { return g_report.exchange(false); }
bool StopSignals::reports() { return g_reports.load(); }

int StopSignals::received() { return g_first_signal.load(); }

void StopSignals::saved() { g_saved = true; }

void StopSignals::ignore_after_training() {
  saved();
  ignore_at_end_ = true;
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  for (int s : signals_) sigaction(s, &ignore, nullptr);
}

void StopSignals::watch() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point first{};
  std::unique_lock<std::mutex> lock(mutex_);
  while (!done_cv_.wait_for(lock, std::chrono::milliseconds(50), [this] { return done_; })) {
    const int signal = g_first_signal.load();
    if (signal == 0) continue;
    if (g_saved.load()) return;
    if (first == Clock::time_point{}) first = Clock::now();
    std::string why;
    if (g_sigterms.load() >= 2) why = "a second SIGTERM arrived before the checkpoint was saved";
    if (grace_s_ > 0 && std::chrono::duration<double>(Clock::now() - first).count() >= grace_s_)
      why = str_cat("checkpoint.signal_grace_s = ", grace_s_, " s passed since ", signal_name(signal),
                    " before the checkpoint was saved");
    if (why.empty()) continue;
    lock.unlock();
    give_up_(why + "; stopping without saving (exit status " + std::to_string(kExitAbandoned) + ")");
    return;  // where give_up returns (tests), once is enough
  }
}

}  // namespace rt
