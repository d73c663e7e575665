// A collective's wait ended by a broken link of the ring (Note [A broken link ends the wait] in
// dist/stall_wait.h), with stand-ins for the MPI call and the ring's links.
#include "dist/stall_wait.h"

#include <gtest/gtest.h>

#include <chrono>
#include <string>

#include "base/check.h"

namespace rt {
namespace {

using Clock = std::chrono::steady_clock;

const std::string kBroken =
    "; the ring's TCP connection from rank 2 (rt-b) failed: the connection was closed (the rank died or aborted)";

// Warns never, aborts (by throwing) after 60 s: far beyond what any of these waits should take.
StallPolicy throwing_policy() {
  StallPolicy p;
  p.warn_s = 1e9;
  p.abort_s = 60;
  p.warn = [](const std::string&) {};
  p.abort = [](const std::string& m) { throw Error(m); };
  return p;
}

// throwing_policy, whose ring links are always found broken; counts the looks.
StallPolicy policy_with_broken_links(int& looks) {
  StallPolicy p = throwing_policy();
  p.broken_links = [&looks] {
    ++looks;
    return kBroken;
  };
  return p;
}

std::string describe(double waited_s) {
  return str_cat("the test's call has waited ", static_cast<int>(waited_s), " s");
}
std::string blame() { return ": nobody"; }

TEST(BrokenLink, EndsACollectivesWaitAtOnceWithAnErrorNamingThePeer) {
  int looks = 0;
  const StallPolicy policy = policy_with_broken_links(looks);
  const auto start = Clock::now();
  std::string message;
  try {
    wait_for_collective([] { return PollResult::kIdle; }, policy, describe, blame);
  } catch (const Error& e) {
    message = e.what();
  }
  const double waited = std::chrono::duration<double>(Clock::now() - start).count();
  EXPECT_EQ(message.rfind("error: the test's call has waited ", 0), 0u) << message;
  EXPECT_TRUE(message.ends_with(" s" + kBroken)) << message;
  EXPECT_EQ(looks, 2);  // believed at the second look
  EXPECT_GE(waited, 3 * kBrokenLinkLookS);
  EXPECT_LT(waited, policy.abort_s);  // not the stall's abort
}

// The links of a neighbour that passed this very call on its way out: found broken once, and the
// call is done before the next look.
TEST(BrokenLink, ALinkFoundBrokenAsTheCallEndsEndsNothing) {
  int looks = 0;
  const StallPolicy policy = policy_with_broken_links(looks);
  EXPECT_NO_THROW(
      wait_for_collective([&] { return looks == 1 ? PollResult::kDone : PollResult::kIdle; }, policy, describe, blame));
  EXPECT_EQ(looks, 1);
}

TEST(BrokenLink, LinksThatHealBeforeTheSecondLookEndNothing) {
  StallPolicy policy = throwing_policy();
  int looks = 0;
  policy.broken_links = [&] { return ++looks == 1 ? kBroken : std::string(); };
  EXPECT_NO_THROW(
      wait_for_collective([&] { return looks == 3 ? PollResult::kDone : PollResult::kIdle; }, policy, describe, blame));
}

// Without the ring's links to ask it is wait_until: the stall's abort, at dist.stall_abort_s.
TEST(BrokenLink, WithoutLinksTheWaitEndsAtTheStallAbort) {
  StallPolicy policy = throwing_policy();
  policy.abort_s = 0.2;
  std::string message;
  try {
    wait_for_collective([] { return PollResult::kIdle; }, policy, describe, blame);
  } catch (const Error& e) {
    message = e.what();
  }
  EXPECT_EQ(message.rfind("the test's call has waited ", 0), 0u) << message;
  EXPECT_TRUE(message.ends_with(" s (dist.stall_abort_s = 0.2): nobody")) << message;
}

}  // namespace
}  // namespace rt
