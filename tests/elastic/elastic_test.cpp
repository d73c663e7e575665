// The supervisor's parts: the host list, which hosts are left out and when they come back, the
// rank count, and which host a failed job's output blames, on what the launchers printed when a
// host was lost (captured from real runs across scripts/netns_hosts.sh's two namespace hosts).
#include <gtest/gtest.h>

#include <chrono>

#include "base/check.h"
#include "elastic/failure_blame.h"
#include "elastic/host_pool.h"
#include "elastic/host_probe.h"
#include "elastic/supervisor.h"

namespace rt::testing {
namespace {

TEST(HostList, ReadsEachSpelling) {
  const auto hosts = parse_host_list("# cluster\nnode01\nnode02 4\nnode03:2  # spare\nnode04 slots=8\n\n", "h.txt");
  ASSERT_EQ(hosts.size(), 4u);
  EXPECT_EQ(hosts[0].name, "node01");
  EXPECT_EQ(hosts[0].slots, 1);
  EXPECT_EQ(hosts[1].slots, 4);
  EXPECT_EQ(hosts[2].name, "node03");
  EXPECT_EQ(hosts[2].slots, 2);
  EXPECT_EQ(hosts[3].slots, 8);
}

TEST(HostList, NamesTheBadLine) {
  for (const char* bad : {"node01 0\n", "node01:x\n", "node01 2 3\n", ":2\n", "a\nb slots=-1\n"}) {
    try {
      parse_host_list(bad, "hosts.txt");
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("hosts.txt:"), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected NAME"), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(parse_host_list("a\nb\na.cluster 2\n", "hosts.txt"), Error);  // one host twice
}

TEST(HostPool, LeavesAFailedHostOutForItsTime) {
  HostPool pool(100, 3);
  pool.listed({{"a", 2}, {"b", 2}}, 0);
  EXPECT_EQ(hosts_arg(place_ranks(pool.usable(0), 4)), "a:2,b:2");
  EXPECT_EQ(pool.failed("b.cluster", 10), 1);  // the name a rank gives may carry the domain
  EXPECT_EQ(hosts_arg(place_ranks(pool.usable(10), 4)), "a:2");
  EXPECT_EQ(pool.left_out(10), std::vector<std::string>{"b (failed 1 time; out for 100 s more)"});
  pool.listed({{"a", 2}, {"b", 2}}, 50);  // listed all along: still out
  EXPECT_EQ(pool.usable(50).size(), 1u);
  EXPECT_EQ(pool.usable(110).size(), 2u);  // its time is up
}

TEST(HostPool, TakesBackAHostTheListDroppedAndListsAgain) {
  HostPool pool(1000, 3);
  pool.listed({{"a", 2}, {"b", 2}}, 0);
  pool.failed("b", 1);
  pool.listed({{"a", 2}}, 2);
  EXPECT_EQ(pool.usable(3).size(), 1u);
  pool.listed({{"a", 2}, {"b", 2}}, 4);
  EXPECT_EQ(hosts_arg(place_ranks(pool.usable(4), 4)), "a:2,b:2");
}

TEST(HostPool, KeepsOutForGoodAHostThatFailedItsLimit) {
  HostPool pool(0, 3);
  pool.listed({{"a", 2}, {"b", 2}}, 0);
  for (int i = 1; i <= 3; ++i) EXPECT_EQ(pool.failed("b", i), i);
  EXPECT_TRUE(pool.out_for_good("b"));
  pool.listed({{"a", 2}}, 10);
  pool.listed({{"a", 2}, {"b", 2}}, 11);  // listed again: still out
  EXPECT_EQ(hosts_arg(place_ranks(pool.usable(1e6), 4)), "a:2");
  EXPECT_EQ(pool.left_out(11), std::vector<std::string>{"b (failed 3 times: out for good)"});
}

TEST(RankCount, TheMostThatDivideTheGlobalBatch) {
  EXPECT_EQ(choose_ranks(4, 1, 4, 64), 4);
  EXPECT_EQ(choose_ranks(3, 1, 8, 64), 2);  // 3 does not divide 64
  EXPECT_EQ(choose_ranks(6, 1, 6, 96), 6);
  EXPECT_EQ(choose_ranks(7, 1, 5, 96), 4);  // at most --max-np 5, and 5 does not divide 96
  EXPECT_EQ(choose_ranks(7, 1, 7, 0), 7);   // no fixed global batch: any count
  EXPECT_EQ(choose_ranks(3, 4, 8, 64), 0);  // fewer slots than --min-np
  EXPECT_EQ(choose_ranks(3, 3, 8, 64), 0);  // only 2 divides, below --min-np 3
}

// What the job printed when host rt-b's processes were killed (Open MPI 4.1): the ranks of rt-a
// name the peer they lost, before mpirun's own words about its daemon.
TEST(Blame, APeerThatARankLost) {
  const Blame b = blame_failure({
      "ORTE was unable to reliably start one or more daemons.",
      "MPI_ABORT was invoked on rank 0 in communicator MPI_COMM_WORLD",
      "ringtrain: rank 0 of 4 on rt-a: error: TCP transport: rank 0 receiving from rank 2 (rt-b) in the ring "
      "across hosts at 10.213.0.2:52414: the connection was closed (the rank died or aborted) "
      "[tcp_transport.cpp:112] at step 39",
  });
  EXPECT_EQ(b.host, "rt-b");
  EXPECT_NE(b.first_error.find("rank 0 of 4 on rt-a"), std::string::npos);
}

// rt-a's link cut for good: mpirun ends the job before any rank speaks.
TEST(Blame, ADaemonTheLauncherLost) {
  const std::vector<std::string> lines = {
      "ORTE has lost communication with a remote daemon.",
      "",
      "  HNP daemon   : [[10720,0],0] on node rt-a",
      "  Remote daemon: [[10720,0],1] on node rt-b",
  };
  EXPECT_TRUE(tells_failure(lines[3]));
  EXPECT_EQ(blame_failure(lines).host, "rt-b");
}

TEST(Blame, TheLaunchersOwnWords) {
  EXPECT_EQ(
      blame_failure({"mpirun noticed that process rank 2 with PID 1510 on node rt-b exited on signal 9 (Killed)."})
          .host,
      "rt-b");
  EXPECT_EQ(blame_failure({"=   RANK 2 PID 1510 RUNNING AT rt-b", "=   KILLED BY SIGNAL: 9 (Killed)"}).host, "rt-b");
  EXPECT_EQ(blame_failure({"srun: error: Node failure on node02"}).host, "node02");
  EXPECT_EQ(blame_failure({"srun: error: Task launch for StepId=7.0 failed on node node03: Communication "
                           "connection failure"})
                .host,
            "node03");
  // The survivors srun ended (node rt-b's step daemon, killed, reported nothing).
  EXPECT_EQ(
      blame_failure({"srun: error: rt-a: tasks 0-1: Exited with exit code 1", "srun: error: rt-a: task 0: Killed"})
          .host,
      "");
}

TEST(Blame, ARanksOwnErrorIsItsHost) {
  const Blame b = blame_failure({"ringtrain: rank 3 of 4 on rt-b: warning: the ring waited 3 s",
                                 "ringtrain: rank 3 of 4 on rt-b: error: out of memory at step 12"});
  EXPECT_EQ(b.host, "rt-b");
}

TEST(Blame, ACollectiveThatWaitedNamesNoOne) {
  const Blame b =
      blame_failure({"ringtrain: rank 0 of 3 on vm: error: the replica check after step 20: "
                     "MPI_Iallgather over 3 ranks has waited 6 s (dist.stall_abort_s = 6)"});
  EXPECT_EQ(b.host, "");
  EXPECT_NE(b.first_error.find("has waited"), std::string::npos);
}

// A collective's wait ended by the ring's broken link (Note [A broken link ends the wait] in
// dist/stall_wait.h) names the rank beyond it, whose host failed.
TEST(Blame, ACollectiveEndedByABrokenLinkNamesThePeersHost) {
  const Blame b = blame_failure(
      {"ringtrain: rank 0 of 4 on rt-a: error: the evaluation's totals: MPI_Iallreduce over 4 ranks has waited 1 s; "
       "the "
       "ring's TCP connection from rank 2 (rt-b) failed: the connection was closed (the rank died or aborted)"});
  EXPECT_EQ(b.host, "rt-b");
}

// Real processes stand for the launcher: "true sleep 1" ends at once with 0, "false sleep 1" with 1,
// and the third never ends, so it is killed at the deadline and counted failed.
TEST(HostProbe, BlamesTheHostsWhoseProbeFailsOrOutlivesTheDeadline) {
  const auto one_rank_on = [](const std::string& host) -> std::vector<std::string> {
    if (host == "up") return {"true"};
    if (host == "down") return {"false"};
    return {"sh", "-c", "exec sleep 600"};
  };
  const auto started = std::chrono::steady_clock::now();
  EXPECT_EQ(failing_hosts({"up", "down", "hangs", "up"}, one_rank_on, 3), (std::vector<std::string>{"down", "hangs"}));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60)) << "the hung probe was not killed";
  EXPECT_TRUE(failing_hosts({"up"}, one_rank_on, 3).empty());
}

TEST(JobEnd, WhatEachStatusAsks) {
  EXPECT_EQ(job_end(0), JobEnd::kFinished);
  EXPECT_EQ(job_end(3), JobEnd::kFinished);
  EXPECT_EQ(job_end(75), JobEnd::kSaved);
  EXPECT_EQ(job_end(143), JobEnd::kStopped);
  EXPECT_EQ(job_end(kExitConfigError), JobEnd::kWrongInput);
  EXPECT_EQ(job_end(kExitDataError), JobEnd::kWrongInput);
  for (int s : {1, 9, 137, 205}) EXPECT_EQ(job_end(s), JobEnd::kFailed) << s;
}

TEST(ElasticArgs, RefusesWhatCannotRun) {
  EXPECT_THROW(parse_elastic_args({"--hosts", "h", "--discover", "d", "--", "ringtrain"}), Error);
  EXPECT_THROW(parse_elastic_args({"--hosts", "h"}), Error);  // no job
  EXPECT_THROW(parse_elastic_args({"--hosts", "h", "--min-np", "0", "--", "ringtrain"}), Error);
  EXPECT_THROW(parse_elastic_args({"--hosts", "h", "--min-np", "4", "--max-np", "2", "--", "ringtrain"}), Error);
  EXPECT_THROW(parse_elastic_args({"--hosts", "h", "--probe-timeout-s", "1", "--", "ringtrain"}), Error);
  const ElasticOptions o = parse_elastic_args({"--discover", "./d.sh", "--min-np", "2", "--launcher", "mpirun -x A",
                                               "--probe-timeout-s", "7", "--", "ringtrain", "x"});
  EXPECT_EQ(o.min_np, 2);
  EXPECT_EQ(o.probe_timeout_s, 7);
  EXPECT_EQ(o.launcher, (std::vector<std::string>{"mpirun", "-x", "A"}));
  EXPECT_EQ(o.job, (std::vector<std::string>{"ringtrain", "x"}));
}

}  // namespace
}  // namespace rt::testing
