// Note [Replica check]'s verdict: which ranks it names when their prints differ (the job's
// behaviour under mpirun is tests/dist/replica_check_test.sh).
#include "app/replica_check.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rt {
namespace {

const std::vector<std::string> kHosts = {"a", "a", "b", "b", "c"};

TEST(ReplicaCheck, SamePrintsSayNothing) {
  const ReplicaPrint p{1, 2, 3};
  EXPECT_EQ(replica_difference({p, p, p}, kHosts), "");
}

TEST(ReplicaCheck, NamesTheRankApartFromTheMajorityAndWhatDiffers) {
  const ReplicaPrint good{1, 2, 3}, bad{9, 2, 3};
  EXPECT_EQ(replica_difference({good, good, bad, good}, kHosts),
            "rank 2 (b) differs from the majority, ranks 0, 1 and 3 (a, b), in parameters");
  EXPECT_EQ(replica_difference({good, ReplicaPrint{1, 7, 4, 0}, good, good, ReplicaPrint{1, 2, 3, 6}}, kHosts),
            "rank 1 (a) differs from the majority, ranks 0, 2 and 3 (a, b), in momentum and loss scale; rank 4 (c) "
            "differs from the majority, ranks 0, 2 and 3 (a, b), in gradient norm");
}

TEST(ReplicaCheck, WithoutAMajorityNamesEveryGroup) {
  const ReplicaPrint a{1, 2, 3}, b{4, 2, 3};
  EXPECT_EQ(replica_difference({a, b}, kHosts),
            "the ranks hold 2 different models and no majority says which is right: rank 0 (a) / rank 1 (a), which "
            "differ in parameters");
  EXPECT_EQ(replica_difference({a, b, b, a}, kHosts),
            "the ranks hold 2 different models and no majority says which is right: ranks 0 and 3 (a, b) / ranks 1 "
            "and 2 (a, b), which differ in parameters");
}

}  // namespace
}  // namespace rt
