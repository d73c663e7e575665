// `ringtrain elastic [options] -- ringtrain train ...`: reads the job's config for its recipe, then
// supervises it (elastic/supervisor.h). Not a rank: it runs before MPI, and without it.
#pragma once

namespace rt {

// argv as main() has it, argv[1] == "elastic"; returns the exit status. Errors end it as they end
// a job alone (Note [Exit statuses] in base/check.h): 78 for its arguments or the job's config.
int elastic_command(int argc, char** argv);

// In a job the supervisor launched (RINGTRAIN_ELASTIC_EVENT set), rank 0 says on stderr, once
// MPI_Init has returned (every launcher's MPI_Init waits for all ranks), "ringtrain: all N ranks
// started": the supervisor's sign that the launch reached every host.
void say_ranks_started();

}  // namespace rt
