#include "dist/launcher_check.h"

#include <cstdlib>

#include "base/check.h"

namespace rt {
namespace {

std::optional<int> positive(const char* text) {
  if (!text || !*text) return std::nullopt;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (*end != '\0' || v < 1 || v > 1 << 24) return std::nullopt;
  return static_cast<int>(v);
}

}  // namespace

std::optional<LauncherClaim> launcher_claim(const std::function<const char*(const char*)>& env) {
  static const struct {
    const char* variable;
    const char* launcher;
  } kSources[] = {{"OMPI_COMM_WORLD_SIZE", "Open MPI's mpirun"},
                  {"PMI_SIZE", "a PMI launcher (MPICH's mpiexec, srun --mpi=pmi2)"},
                  {"MPI_LOCALNRANKS", "MPICH's mpiexec"},
                  {"SLURM_STEP_NUM_TASKS", "srun"}};
  for (const auto& s : kSources)
    if (const auto n = positive(env(s.variable))) return LauncherClaim{*n, str_cat(s.variable, "=", *n), s.launcher};
  return std::nullopt;
}

std::string slurm_mpi_plugin(const std::string& mpi_library) {
  // MPICH and its derivatives (MVAPICH, Intel MPI) speak PMI-2; Debian's MPICH does not speak PMIx.
  for (const char* pmi2 : {"MPICH", "MVAPICH", "Intel"})
    if (mpi_library.find(pmi2) != std::string::npos) return "pmi2";
  return "pmix";
}

std::string launcher_mismatch(const std::optional<LauncherClaim>& claim, int world_size,
                              const std::string& mpi_library) {
  if (!claim || claim->tasks <= 1 || world_size != 1) return "";
  const std::string plugin = slurm_mpi_plugin(mpi_library);
  return str_cat(claim->launcher, " started ", claim->tasks, " tasks (", claim->variable,
                 "), but MPI sees a world of 1 in this one: the tasks would train as ", claim->tasks,
                 " separate copies writing one checkpoint folder. ringtrain is built with ", mpi_library,
                 ". Launch it so that MPI can find its peers: under Slurm, srun --mpi=", plugin,
                 " (srun --mpi=list shows what this cluster offers; set MpiDefault=", plugin,
                 " to make it the default), else the mpirun or mpiexec of the MPI it was built with (docs/launch.md)");
}

}  // namespace rt
