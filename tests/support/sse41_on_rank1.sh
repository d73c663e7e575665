#!/usr/bin/env bash
# Runs its arguments with oneDNN held to SSE4.1 on rank 1 (Open MPI's or MPICH's rank variable)
# and left to the machine's best instruction set on the others: ranks whose CPUs differ, on one
# machine, whether it has AVX-512 or AVX2 only.
rank=${OMPI_COMM_WORLD_RANK:-${PMI_RANK:-0}}
[[ $rank == 1 ]] && export ONEDNN_MAX_CPU_ISA=SSE41
exec "$@"
