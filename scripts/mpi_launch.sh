#!/usr/bin/env bash
# Starts an MPI job with the same options under Open MPI's mpirun and MPICH's Hydra (mpiexec.hydra),
# for the tests and benchmark scripts: each implementation spells them differently.
#
# usage: mpi_launch.sh [-np N] [--env NAME]... [--hosts H:SLOTS,H:SLOTS | --hostfile FILE]
#                      [--rsh AGENT] [--net CIDR] [--bind-to core|none] [--oversubscribe] [--testing]
#                      [--] PROGRAM [ARGS...]
#   -np N         ranks
#   --env NAME    give every rank this variable of ours, on other hosts too (Open MPI -x, Hydra
#                 -genvlist); ranks on this host inherit the whole environment either way
#   --hosts       ranks fill each host's slots in turn (Open MPI -H with --map-by slot, Hydra
#                 -hosts, whose default placement is the same)
#   --hostfile    the hosts, in the launcher's own format (Open MPI: "node01 slots=2"; Hydra:
#                 "node01:2")
#   --rsh AGENT   start the daemons on other hosts with AGENT HOST COMMAND instead of ssh
#   --net CIDR    Open MPI: keep its TCP traffic on this network (btl and oob _tcp_if_include);
#                 ignored, saying so, under Hydra, which names interfaces only (its -iface NAME)
#   --bind-to     bind each rank to a core, or not at all (by default Open MPI binds and Hydra
#                 does not)
#   --oversubscribe  more ranks than a host has slots (Open MPI refuses them otherwise)
#   --testing     the test suite's setting: --oversubscribe and, under Open MPI, its shared-memory
#                 and TCP transports only (btl self,vader,tcp)
# The launcher is $RINGTRAIN_MPIEXEC (default: mpirun); which implementation it is comes from
# $RINGTRAIN_MPI (openmpi or mpich; CMake's RINGTRAIN_MPI sets both for ctest), else from its
# --version. Under Open MPI it also allows running as root, and probes the connections to its
# daemons after 2 s without traffic, every 1 s, 4 times (oob_tcp_keepalive_*; Open MPI's defaults
# are 300 s, 20 s and 9): a host cut off is then found within about 7 s and the job ends, before
# the ranks' own keepalive gives up on it (at 2/3 of dist.stall_abort_s); once the ranks have
# aborted, mpirun would wait on that host's daemon for the kernel's TCP retransmission limit,
# about 15 minutes (docs/launch.md, "When a host or a link dies").
# OMPI_MCA_oob_tcp_keepalive_time in the environment keeps the user's settings instead.
set -euo pipefail

launcher=${RINGTRAIN_MPIEXEC:-mpirun}
kind=${RINGTRAIN_MPI:-}
if [[ -z $kind ]]; then
  version=$("$launcher" --version 2>&1 || true)
  case "$version" in
    *"Open MPI"* | *OpenRTE*) kind=openmpi ;;
    *HYDRA* | *MPICH*) kind=mpich ;;
    *) echo "mpi_launch: cannot tell which MPI '$launcher' is (its --version names neither Open MPI nor" \
            "MPICH); set RINGTRAIN_MPI=openmpi or mpich" >&2; exit 2 ;;
  esac
fi
[[ $kind == openmpi || $kind == mpich ]] || { echo "mpi_launch: RINGTRAIN_MPI=$kind: expected openmpi or mpich" >&2; exit 2; }
bind_ok() { [[ $1 == core || $1 == none ]] || { echo "mpi_launch: --bind-to $1: expected core or none" >&2; exit 2; }; }

np="" envs=() hosts="" hostfile="" rsh="" net="" bind="" oversubscribe=0 testing=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    -np | -n) np=$2; shift 2 ;;
    --env) envs+=("$2"); shift 2 ;;
    --hosts) hosts=$2; shift 2 ;;
    --hostfile) hostfile=$2; shift 2 ;;
    --rsh) rsh=$2; shift 2 ;;
    --net) net=$2; shift 2 ;;
    --bind-to) bind_ok "$2"; bind=$2; shift 2 ;;
    --oversubscribe) oversubscribe=1; shift ;;
    --testing) testing=1; oversubscribe=1; shift ;;
    --) shift; break ;;
    -*) echo "mpi_launch: unknown option '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
    *) break ;;
  esac
done
[[ $# -gt 0 ]] || { echo "mpi_launch: no program to run (see the usage at the top of $0)" >&2; exit 2; }

run=("$launcher")
if [[ $kind == openmpi ]]; then
  [[ $(id -u) -eq 0 ]] && run+=(--allow-run-as-root)
  if [[ -z ${OMPI_MCA_oob_tcp_keepalive_time:-} ]]; then
    run+=(--mca oob_tcp_keepalive_time 2 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 4)
  fi
  [[ $oversubscribe -eq 1 ]] && run+=(--oversubscribe)
  [[ $testing -eq 1 ]] && run+=(--mca btl self,vader,tcp)
  for name in "${envs[@]}"; do run+=(-x "$name"); done
  [[ -n $hosts ]] && run+=(-H "$hosts" --map-by slot)
  [[ -n $hostfile ]] && run+=(--hostfile "$hostfile" --map-by slot)
  [[ -n $rsh ]] && run+=(--mca plm_rsh_agent "$rsh")
  [[ -n $net ]] && run+=(--mca btl_tcp_if_include "$net" --mca oob_tcp_if_include "$net")
  [[ -n $bind ]] && run+=(--bind-to "$bind")
else
  if [[ ${#envs[@]} -gt 0 ]]; then run+=(-genvlist "$(IFS=,; echo "${envs[*]}")"); fi
  [[ -n $hosts ]] && run+=(-hosts "$hosts")
  [[ -n $hostfile ]] && run+=(-f "$hostfile")
  [[ -n $rsh ]] && run+=(-launcher rsh -launcher-exec "$rsh")
  [[ -n $bind ]] && run+=(-bind-to "$bind")
  if [[ -n $net ]]; then
    echo "mpi_launch: --net $net ignored: Hydra has no option for a network (its -iface names an interface)" >&2
  fi
fi
[[ -n $np ]] && run+=(-np "$np")
exec "${run[@]}" "$@"
