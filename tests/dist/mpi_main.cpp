// main() for test executables launched with mpirun: MPI is initialised before the tests and
// finalised after; every rank runs every test in the same order, so collectives line up.
#include <gtest/gtest.h>

#include <cstdio>

#include "dist/world.h"

int main(int argc, char** argv) {
  rt::World::init(&argc, &argv);
  ::testing::InitGoogleTest(&argc, argv);
  // Started without a launcher, MPI is not initialised and the tests' first MPI call would abort
  // the process with Open MPI's words, not ours; listing the tests needs no MPI.
  if (!rt::World::get().uses_mpi() && !GTEST_FLAG_GET(list_tests)) {
    std::fprintf(stderr,
                 "%s: these tests need an MPI launcher, at one rank too: mpirun -np N %s "
                 "(or scripts/mpi_launch.sh -np N %s)\n",
                 argv[0], argv[0], argv[0]);
    return 2;
  }
  // Only rank 0 prints the report; the others still run (and fail) every test.
  if (rt::World::get().rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  int failed = RUN_ALL_TESTS();
  // Every rank's verdict counts: the job fails if any rank failed.
  int any = failed != 0;
  if (rt::World::get().uses_mpi()) MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, rt::World::get().comm());
  rt::World::get().finalize();
  return any;
}
