// Waiting on a neighbour without hanging the job: spin briefly (most waits end within
// microseconds), then poll with short sleeps so a long wait leaves the core to compute threads;
// past StallPolicy::warn_s report what is awaited, past abort_s take the job down with that report.
#pragma once

#include <functional>
#include <string>
#include <vector>

namespace rt {

struct StallPolicy {
  double warn_s = 60;
  double abort_s = 300;
  std::function<void(const std::string&)> warn;   // prints a warning
  std::function<void(const std::string&)> abort;  // must not return
  // What an idle poll does before the next (after ~2000 idle polls every mode sleeps 20 us):
  //   kSpin:  polls again at once; answers fastest where the rank has its core to itself;
  //   kYield: yields the core, where there are more ranks than cores (World::oversubscribed):
  //           the awaited rank may need that very core;
  //   kSleep: sleeps after 16 idle polls, where compute threads fill the rank's cores (CPU
  //           training): a yielding poller still takes its fair share of the core from backward.
  enum class Idle { kSpin, kYield, kSleep };
  Idle idle = Idle::kSpin;
  // A transport on a sub-communicator (the two-level ring's) names ranks in its messages by their
  // world rank, world_ranks[r] for its rank r, and says which ring it is (" in the ring across
  // hosts"). Empty: ranks are the world's.
  std::vector<int> world_ranks = {};
  std::string ring = "";
  // Each world rank's host, so that a message about a rank says where it is. Empty: unknown.
  std::vector<std::string> hosts = {};
  // For waits that cannot name a rank (MPI collectives): what the ring's own connections know of
  // a broken link (Links::broken of the collective's links()). Empty: nothing to ask.
  std::function<std::string()> broken_links = {};
  int world_rank(int r) const { return world_ranks.empty() ? r : world_ranks[static_cast<size_t>(r)]; }
  // "rank 3 (node04)": a world rank, with its host where known.
  std::string who(int world_rank) const;
};

enum class PollResult { kDone, kMoved, kIdle };  // kMoved: not done, but bytes moved meanwhile

// Calls poll() until it returns kDone; a poll that moved bytes restarts the spinning phase, so a
// transfer in full flow never sleeps. describe(waited_seconds) names what is awaited, for the
// warning and the abort message; blame() ends the abort message by naming the rank at fault
// (the awaited one, or the rank a chain of waiting ranks ends at, where the transport can see it).
void wait_until(const std::function<PollResult()>& poll, const StallPolicy& policy,
                const std::function<std::string(double waited_s)>& describe, const std::function<std::string()>& blame);

// Note [A broken link ends the wait]: a rank waiting in an MPI collective cannot learn from MPI which
// rank is missing, but the ring's own connections can tell that a neighbour is gone
// (policy.broken_links: its process closed them, or keepalive gave up on the link). That rank will
// never join, so the wait ends then, not at dist.stall_abort_s (as NCCL's asynchronous error ends
// a GPU rank's, dist/stall_watch.h), with an error naming the rank and its host: the line
// `ringtrain elastic` reads the failed host from. The links are looked at from the first second of
// the wait, every kBrokenLinkLookS, and a broken one believed when the call is still not done at
// the next look: a neighbour that passed this very collective and closed its links on its way out
// (the job's end) leaves this rank done within milliseconds.
inline constexpr double kBrokenLinkLookS = 0.5;

// wait_until, ended through policy.abort when policy.broken_links reports a broken link twice in a
// row (Note [A broken link ends the wait]); exactly wait_until where the policy has no links.
void wait_for_collective(const std::function<PollResult()>& poll, const StallPolicy& policy,
                         const std::function<std::string(double waited_s)>& describe,
                         const std::function<std::string()>& blame);

// ": rank 3 (node04) is stuck, dead or running a different schedule", of a world rank.
std::string blame_rank(const StallPolicy& policy, int world_rank);

// The abort time of a two-level ring's waits across hosts, whose policy says abort_s inside a
// host. A rank waiting across hosts sees only its peer there, which may itself wait on a stuck
// rank of its own host; the longer time lets that host's ranks, which can name the stuck one,
// report first.
inline double across_hosts_abort_s(double abort_s) { return abort_s + (abort_s * 0.1 > 2.0 ? abort_s * 0.1 : 2.0); }

}  // namespace rt
