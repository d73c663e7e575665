// A job for abort_line_test.sh: rank 0 leaves a line of stdout unfinished, as a launcher's
// forwarding may cut rank 0's resolved config mid-line, and then rank 1 ends the job the way
// ringtrain's ranks do (World::abort), with exit status 65.
//
// usage: abort_line_job (2 ranks)
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <thread>

#include "base/check.h"
#include "dist/world.h"

int main(int argc, char** argv) {
  const rt::World& w = rt::World::init(&argc, &argv);
  if (w.size() != 2) w.abort("abort_line_job: needs 2 ranks", 2);
  if (w.rank() == 0) {
    std::fputs("an unfinished line of rank 0", stdout);
    std::fflush(stdout);
  }
  MPI_Barrier(w.comm());
  if (w.rank() == 1) {
    // Time for the launcher to pass rank 0's bytes on first, as it had when the line was spliced.
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    w.abort("error: planted data error", rt::kExitDataError);
  }
  std::this_thread::sleep_for(std::chrono::seconds(30));  // ended by the abort
  w.abort("error: rank 1's abort did not end the job", 1);
}
