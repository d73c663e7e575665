// A launcher that started several tasks which MPI then sees as worlds of one (srun without
// --mpi=pmix on a cluster whose MpiDefault is none, an MPI's mpiexec running another MPI's
// build) would train N separate copies into one checkpoint folder. The environment tells: each
// launcher leaves its task count there.
#pragma once

#include <functional>
#include <optional>
#include <string>

namespace rt {

// What a launcher's variables say it started: a task count and the variable that says so.
struct LauncherClaim {
  int tasks = 1;
  std::string variable;  // "SLURM_STEP_NUM_TASKS=2"
  std::string launcher;  // "srun"
};

// The launcher's claim, from the first of: Open MPI's mpirun (OMPI_COMM_WORLD_SIZE), a PMI-1 or
// PMI-2 launcher such as MPICH's Hydra (PMI_SIZE, then MPI_LOCALNRANKS, a lower bound), Slurm's
// srun (SLURM_STEP_NUM_TASKS: set in a step's tasks, not in a batch script's own shell).
// nullopt where no launcher variable is set. `env` is getenv or a test's stand-in.
std::optional<LauncherClaim> launcher_claim(const std::function<const char*(const char*)>& env);

// Slurm's --mpi plugin through which ranks of this MPI meet: "pmi2" for MPICH and its derivatives,
// "pmix" for the others (Open MPI). mpi_library is MPI_Get_library_version's first line.
std::string slurm_mpi_plugin(const std::string& mpi_library);

// Empty where the world agrees with the claim; else the message that refuses to start, naming
// what was seen and the fix (srun with slurm_mpi_plugin(mpi_library)).
std::string launcher_mismatch(const std::optional<LauncherClaim>& claim, int world_size,
                              const std::string& mpi_library);

}  // namespace rt
