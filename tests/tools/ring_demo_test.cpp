// ring-demo against a ring-allreduce of 7 numbers on 3 ranks worked out by hand, and against the
// closed forms (every rank ends with the average; 2(P-1) N numbers cross the wire in all) for
// every size the command accepts.
#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>
#include <string>

#include "tools/ring_demo.h"
#include "tools/ring_demo_hosts.h"
#include "base/check.h"

namespace rt::testing {
namespace {

// By hand, from Note [Ring schedule]: 7 = 3 + 2 + 2 elements; at reduce-scatter step s rank r
// sends chunk r - s to r + 1, which adds it (and divides by 3 at the last step); at all-gather
// step t it sends chunk r + 1 - t, which the receiver copies. Rank r starts with 10 r + i.
// Step 1: rank 1's c0 = (10 11 12) + (0 1 2); rank 2's c1 = (23 24) + (13 14); rank 0's
// c2 = (5 6) + (25 26). Step 2: rank 1's c2 = ((15 16) + (30 32)) / 3; rank 2's c0 =
// ((20 21 22) + (10 12 14)) / 3; rank 0's c1 = ((3 4) + (36 38)) / 3. Then two copies around the
// ring. Rank 0 sent c0, c2, c1, c0 = 3 + 2 + 2 + 3 elements; ranks 1 and 2 sent 9 each.
constexpr const char* kThreeRanksSevenElements =
    "ring-demo: 3 ranks, 7 elements, chunks c0 = [0, 3) c1 = [3, 5) c2 = [5, 7)\n"
    "rank r starts with 10 r + i at element i; every rank must end with the average 10 + i\n"
    "start\n"
    "  rank 0 | c0 0 1 2 | c1 3 4 | c2 5 6\n"
    "  rank 1 | c0 10 11 12 | c1 13 14 | c2 15 16\n"
    "  rank 2 | c0 20 21 22 | c1 23 24 | c2 25 26\n"
    "step 1 of 4, reduce-scatter\n"
    "  rank 0 sends c0 to rank 1, which adds it: c0 = 10 12 14\n"
    "  rank 1 sends c1 to rank 2, which adds it: c1 = 36 38\n"
    "  rank 2 sends c2 to rank 0, which adds it: c2 = 30 32\n"
    "step 2 of 4, reduce-scatter\n"
    "  rank 0 sends c2 to rank 1, which adds it and divides by 3: c2 = 15 16\n"
    "  rank 1 sends c0 to rank 2, which adds it and divides by 3: c0 = 10 11 12\n"
    "  rank 2 sends c1 to rank 0, which adds it and divides by 3: c1 = 13 14\n"
    "  reduce-scatter done: rank 0 holds the average of c1, rank 1 holds the average of c2, rank 2 holds the "
    "average of c0\n"
    "  rank 0 | c0 0 1 2 | c1 13 14 | c2 30 32\n"
    "  rank 1 | c0 10 12 14 | c1 13 14 | c2 15 16\n"
    "  rank 2 | c0 10 11 12 | c1 36 38 | c2 25 26\n"
    "step 3 of 4, all-gather\n"
    "  rank 0 sends c1 to rank 1, which copies it: c1 = 13 14\n"
    "  rank 1 sends c2 to rank 2, which copies it: c2 = 15 16\n"
    "  rank 2 sends c0 to rank 0, which copies it: c0 = 10 11 12\n"
    "step 4 of 4, all-gather\n"
    "  rank 0 sends c0 to rank 1, which copies it: c0 = 10 11 12\n"
    "  rank 1 sends c1 to rank 2, which copies it: c1 = 13 14\n"
    "  rank 2 sends c2 to rank 0, which copies it: c2 = 15 16\n"
    "end\n"
    "  rank 0 | c0 10 11 12 | c1 13 14 | c2 15 16\n"
    "  rank 1 | c0 10 11 12 | c1 13 14 | c2 15 16\n"
    "  rank 2 | c0 10 11 12 | c1 13 14 | c2 15 16\n"
    "sent: rank 0 10, rank 1 9, rank 2 9 elements; 2(P-1)/P x N = 9.33 per rank on average, whatever P is\n";

TEST(RingDemo, ThreeRanksSevenElementsAsWorkedByHand) { EXPECT_EQ(ring_demo(3, 7), kThreeRanksSevenElements); }

TEST(RingDemo, EveryRankEndsWithTheAverageAndTheWireCarries2PMinus1TimesN) {
  for (int P = 2; P <= 8; ++P)
    for (int64_t N = 1; N <= 32; ++N) {
      const std::string text = ring_demo(P, N);
      const std::string end = text.substr(text.find("\nend\n") + 5);
      std::ostringstream row;  // every rank's line after "end": the averages 5 (P - 1) + i
      for (int c = 0; c < P; ++c) {
        row << " | c" << c;
        const int64_t begin = c * (N / P) + std::min<int64_t>(c, N % P), count = N / P + (c < N % P);
        if (count == 0) row << " (empty)";
        for (int64_t i = begin; i < begin + count; ++i) row << " " << 5 * (P - 1) + i;
      }
      int64_t sent = 0;
      for (int r = 0; r < P; ++r) {
        std::ostringstream line, sender;
        line << "  rank " << r << row.str() << "\n";
        ASSERT_NE(end.find(line.str()), std::string::npos) << "P " << P << " N " << N << ", rank " << r << ":\n"
                                                           << text;
        sender << " rank " << r << " ";
        const size_t at = end.find(sender.str(), end.find("sent:"));
        ASSERT_NE(at, std::string::npos) << text;
        sent += std::stoll(end.substr(at + sender.str().size()));
      }
      EXPECT_EQ(sent, 2 * (P - 1) * N) << "P " << P << " N " << N;
    }
}

// The two-level ring, 2 hosts x 2 ranks, 6 elements, by hand from Note [Two-level ring]: inside
// each host chunks c0 = [0, 3), c1 = [3, 6); local rank 0 ends phase 1 with its host's c1, local
// rank 1 with c0. Host 0's c1 = (3 4 5) + (13 14 15) = 16 18 20, host 1's = 56 58 60; across hosts
// c1 is cut into c1.0 = [3, 5) and c1.1 = [5, 6), and the average is (16 + 56) / 4 = 18, 19, 20.
TEST(RingDemo, TwoHostsOfTwoRanksAsWorkedByHand) {
  const std::string text = ring_demo_hosts(4, 2, 6);
  for (const char* line : {
           "    rank 1 sends c1 to rank 0, which adds it: c1 = 16 18 20\n",
           "    rank 3 sends c1 to rank 2, which adds it: c1 = 56 58 60\n",
           "    rank 0 sends c1.0 to rank 2, which adds it and divides by 4: c1.0 = 18 19\n",
           "    rank 2 sends c1.1 to rank 0, which adds it and divides by 4: c1.1 = 20\n",
           "    rank 3 sends c0 to rank 2, which copies it: c0 = 15 16 17\n",
           "  host 1 rank 3 | 15 16 17 18 19 20\n",
           "sent across hosts: rank 0 3, rank 1 3, rank 2 3, rank 3 3\n",
           "across hosts in all: 12 elements in 2 steps; the flat ring over the same ranks: 18 in 6 steps (1.5x",
       })
    EXPECT_NE(text.find(line), std::string::npos) << "missing: " << line << "in\n" << text;
}

// Every layout the demo accepts: every rank ends with the average, and the P ranks send 2(H - 1)/H
// of N / L each across hosts: 2(H - 1) N in all.
TEST(RingDemo, TwoLevelEveryRankEndsWithTheAverageAndSendsItsShareAcross) {
  for (int P = 2; P <= 8; ++P)
    for (int H = 1; H <= P; ++H) {
      if (P % H != 0) {
        EXPECT_THROW(ring_demo_hosts(P, H, 8), Error) << P << " ranks on " << H << " hosts";
        continue;
      }
      for (int64_t N : {int64_t{1}, int64_t{7}, int64_t{24}, int64_t{32}}) {
        const std::string text = ring_demo_hosts(P, H, N);
        const std::string end = text.substr(text.find("\nend\n") + 5);
        std::ostringstream average;
        for (int64_t i = 0; i < N; ++i) average << (i ? " " : "") << 5 * (P - 1) + i;
        for (int r = 0; r < P; ++r) {
          const std::string line = str_cat("host ", r / (P / H), " rank ", r, " | ", average.str(), "\n");
          ASSERT_NE(end.find(line), std::string::npos) << P << " ranks, " << H << " hosts, N " << N << ":\n" << text;
        }
        const size_t at = end.find("across hosts in all: ");
        ASSERT_NE(at, std::string::npos);
        const int64_t across = std::stoll(end.substr(at + 21));
        if (N % P == 0) {
          EXPECT_EQ(across, 2 * (H - 1) * N) << P << " ranks, " << H << " hosts, N " << N;
        }
      }
    }
  EXPECT_THROW(ring_demo_hosts(4, 2, 0), Error);
  EXPECT_THROW(ring_demo_hosts(9, 3, 8), Error);
}

TEST(RingDemo, SizesOutsideWhatAnEyeCanFollowAreRefused) {
  EXPECT_THROW(ring_demo(1, 7), Error);
  EXPECT_THROW(ring_demo(9, 7), Error);
  EXPECT_THROW(ring_demo(3, 0), Error);
  EXPECT_THROW(ring_demo(3, 33), Error);
}

}  // namespace
}  // namespace rt::testing
