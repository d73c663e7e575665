// Launch checks that need no launcher: which variables count as a launcher's task count, when a
// world of 1 is refused, and which GPU a rank takes.
#include <gtest/gtest.h>

#include <map>

#include "base/check.h"
#include "dist/gpu_choice.h"
#include "dist/launcher_check.h"

namespace rt {
namespace {

std::optional<LauncherClaim> claim_of(const std::map<std::string, std::string>& vars) {
  return launcher_claim([&](const char* name) -> const char* {
    const auto it = vars.find(name);
    return it == vars.end() ? nullptr : it->second.c_str();
  });
}

TEST(LauncherClaim, SrunWithoutPmiIsRefusedNamingTheFix) {
  // What srun -n 2 sets in each task when no --mpi plugin runs (MpiDefault=none).
  const auto claim = claim_of({{"SLURM_STEP_NUM_TASKS", "2"}, {"SLURM_NTASKS", "2"}, {"SLURM_PROCID", "1"}});
  ASSERT_TRUE(claim.has_value());
  EXPECT_EQ(claim->tasks, 2);
  const std::string m = launcher_mismatch(claim, 1, "Open MPI v4.1.4");
  EXPECT_NE(m.find("SLURM_STEP_NUM_TASKS=2"), std::string::npos) << m;
  EXPECT_NE(m.find("srun --mpi=pmix"), std::string::npos) << m;
  EXPECT_NE(m.find("Open MPI v4.1.4"), std::string::npos) << m;
  // An MPICH build meets through Slurm's PMI-2 plugin: Debian's MPICH under --mpi=pmix is a world of 1.
  const std::string mpich = launcher_mismatch(claim, 1, "MPICH Version:\t4.0.2");
  EXPECT_NE(mpich.find("srun --mpi=pmi2"), std::string::npos) << mpich;
  EXPECT_EQ(mpich.find("pmix"), std::string::npos) << mpich;
}

TEST(LauncherClaim, ABatchScriptsOwnShellIsOneTask) {
  // sbatch -n 2 sets the allocation's counts, but no step variables, in the script's shell.
  EXPECT_FALSE(claim_of({{"SLURM_NTASKS", "2"}, {"SLURM_NPROCS", "2"}, {"SLURM_PROCID", "0"}}).has_value());
}

TEST(LauncherClaim, HydraAndOpenMpiVariablesCount) {
  EXPECT_EQ(claim_of({{"PMI_SIZE", "4"}})->tasks, 4);
  EXPECT_EQ(claim_of({{"MPI_LOCALNRANKS", "2"}, {"PMI_PORT", "host:1234"}})->variable, "MPI_LOCALNRANKS=2");
  // mpirun inside an allocation: Open MPI's own count wins over the step's.
  EXPECT_EQ(claim_of({{"OMPI_COMM_WORLD_SIZE", "1"}, {"SLURM_STEP_NUM_TASKS", "2"}})->tasks, 1);
  EXPECT_FALSE(claim_of({{"PMI_SIZE", "two"}}).has_value());
}

TEST(LauncherClaim, AgreeingWorldsAndSingleTasksPass) {
  EXPECT_EQ(launcher_mismatch(claim_of({{"SLURM_STEP_NUM_TASKS", "2"}}), 2, "x"), "");
  EXPECT_EQ(launcher_mismatch(claim_of({{"SLURM_STEP_NUM_TASKS", "1"}}), 1, "x"), "");
  EXPECT_EQ(launcher_mismatch(std::nullopt, 1, "x"), "");
}

TEST(GpuChoice, ARankThatSeesEveryGpuTakesItsLocalRank) {  // mpirun on an 8-GPU host
  const GpuChoice c = choose_gpu(3, 8, 8, nullptr);
  EXPECT_EQ(c.index, 3);
  EXPECT_EQ(c.how, "GPU 3 of 8, by local rank");
}

TEST(GpuChoice, ARankThatSeesOneGpuTakesThatOne) {  // srun --gpus-per-task=1: local rank 1 sees GPU "5"
  const GpuChoice c = choose_gpu(1, 4, 1, "5");
  EXPECT_EQ(c.index, 0);
  EXPECT_EQ(c.how, "the one GPU this process sees (CUDA_VISIBLE_DEVICES=5)");
}

TEST(GpuChoice, MoreRanksThanVisibleGpusIsRefused) {
  EXPECT_THROW(choose_gpu(0, 4, 2, "0,1"), Error);
  EXPECT_THROW(choose_gpu(0, 1, 0, ""), Error);
}

TEST(GpuChoice, TwoRanksOnOnePhysicalGpuAreRefused) {
  EXPECT_EQ(shared_gpu({"a", "a", "b", "b"}, {"GPU-1", "GPU-2", "GPU-1", "GPU-2"}), "");
  const std::string m = shared_gpu({"a", "a"}, {"GPU-1", "GPU-1"});
  EXPECT_NE(m.find("ranks 0 and 1 on host a would share GPU GPU-1"), std::string::npos) << m;
}

}  // namespace
}  // namespace rt
