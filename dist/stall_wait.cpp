#include "dist/stall_wait.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include "base/check.h"

namespace rt {

std::string StallPolicy::who(int r) const {
  const auto i = static_cast<size_t>(r);
  return i < hosts.size() ? str_cat("rank ", r, " (", hosts[i], ")") : str_cat("rank ", r);
}

std::string blame_rank(const StallPolicy& policy, int world_rank) {
  return str_cat(": ", policy.who(world_rank), " is stuck, dead or running a different schedule");
}

void wait_until(const std::function<PollResult()>& poll, const StallPolicy& policy,
                const std::function<std::string(double waited_s)>& describe,
                const std::function<std::string()>& blame) {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  bool warned = false;
  int idle = 0;    // polls since bytes last moved
  int sleeps = 0;  // idle sleeps in a row
  for (int polls = 0;; ++polls) {
    const PollResult r = poll();
    if (r == PollResult::kDone) return;
    idle = r == PollResult::kMoved ? 0 : idle + 1;
    if (idle == 0) sleeps = 0;
    // Spin for a while (sleeping adds tens of microseconds to every slice); after that poll every
    // 20 us. No PAUSE in the spin: under a hypervisor with pause-loop exiting it deschedules the
    // vCPU (measured on the development VM: 4x slower transfers).
    const bool sleepy = policy.idle == StallPolicy::Idle::kSleep;
    bool gave_up_the_core = true;
    if (idle > (sleepy ? 16 : 2000)) {
      // Where compute threads own the core, every wake-up preempts one of them; a wait for a
      // neighbour still in its backward pass can last milliseconds, so the sleeps grow to 0.32
      // ms.
      const int shift = sleepy ? std::min(sleeps++, 4) : 0;
      std::this_thread::sleep_for(std::chrono::microseconds(20 << shift));
    } else if (idle > 0 && policy.idle == StallPolicy::Idle::kYield) {
      std::this_thread::yield();
    } else {
      gave_up_the_core = false;
    }
    // A spinning poll takes nanoseconds: it reads the clock every 1024th time. A poll that slept
    // or yielded reads it every time, as on a loaded machine it may come back only milliseconds
    // later (1024 of those would push the warning and the abort seconds late).
    if (!gave_up_the_core && (polls & 1023) != 0) continue;
    const double waited = std::chrono::duration<double>(Clock::now() - start).count();
    if (waited > policy.abort_s) {
      policy.abort(describe(waited) + str_cat(" (dist.stall_abort_s = ", policy.abort_s, ")") + blame());
    } else if (!warned && waited > policy.warn_s) {
      warned = true;
      policy.warn(describe(waited) + str_cat(" (dist.stall_warn_s = ", policy.warn_s, ")"));
    }
  }
}

void wait_for_collective(const std::function<PollResult()>& poll, const StallPolicy& policy,
                         const std::function<std::string(double waited_s)>& describe,
                         const std::function<std::string()>& blame) {
  if (!policy.broken_links) return wait_until(poll, policy, describe, blame);
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const auto look = std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(kBrokenLinkLookS));
  auto next_look = start + 2 * look;
  bool seen = false;  // the last look found a broken link
  int idle = 0;
  wait_until(
      [&] {
        const PollResult r = poll();
        if (r != PollResult::kIdle || (++idle & 63) != 0) return r;  // the clock every 64th idle poll
        const auto now = Clock::now();
        if (now < next_look) return r;
        next_look = now + look;
        const std::string broken = policy.broken_links();
        const bool believed = seen && !broken.empty();
        seen = !broken.empty();
        if (!believed) return r;
        policy.abort(str_cat("error: ", describe(std::chrono::duration<double>(now - start).count()), broken));
        return PollResult::kDone;  // only a test's stand-in for abort returns
      },
      policy, describe, blame);
}

}  // namespace rt
