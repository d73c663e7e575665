# Sourced (not run) by the Slurm tests:
#   source "$src/tests/slurm/slurm_jobs.sh"
#   slurm_job_end JOB_ID LIMIT_S [COMMAND_PREFIX...]
# waits until the batch job has left the queue, looking every 0.2 s (sbatch --wait looks 2, 4, 8
# and then 16 s apart, which cost the tests up to 15 s a job), at most LIMIT_S; then prints its
# "JobState=... ExitCode=N:M" (empty where Slurm no longer knows it). COMMAND_PREFIX runs squeue and
# scontrol where the cluster is reached from (netns_hosts.sh on rt-a env SLURM_CONF=...).
# shellcheck shell=bash
slurm_job_end() {
  local job=$1 limit=$2 deadline
  shift 2
  deadline=$((SECONDS + limit))
  while ((SECONDS < deadline)) && [[ -n $("$@" squeue -h -j "$job" 2> /dev/null) ]]; do sleep 0.2; done
  "$@" scontrol -o show job "$job" 2> /dev/null | grep -oE "\b(JobState|ExitCode)=[^ ]+" | paste -sd " "
}
