#!/usr/bin/env bash
# A one-node Slurm cluster on this machine, everything (configuration, munge key and socket, state,
# spool, logs) inside one directory, so nothing system-wide is read or changed:
#   local_slurm.sh up DIR     start munged, slurmctld and slurmd; DIR is a new, empty directory
#                             (mktemp -d); then: export SLURM_CONF=DIR/slurm.conf
#   local_slurm.sh down DIR   cancel the cluster's jobs and stop its daemons (DIR is left to the caller)
# Needs root and Debian's slurm-wlm, munge and libpmix-dev (scripts/setup.sh). `up` exits 77, the
# tests' skip code, with the reason (and the daemons' logs) when this machine cannot run the cluster.
set -euo pipefail
cmd=${1:-} dir=${2:-}
[[ ($cmd == up || $cmd == down) && -n $dir ]] || { echo "usage: $0 up|down DIR" >&2; exit 2; }
dir=$(realpath -m "$dir")
export SLURM_CONF=$dir/slurm.conf

skip() {
  echo "SKIP: $1"
  "$0" down "$dir" > /dev/null 2>&1 || true
  exit 77
}

# Every process that this cluster's slurmd started (slurmstepd) or that is one of its daemons: they
# carry this SLURM_CONF in their environment.
cluster_pids() {
  local p
  for p in $(pgrep -x munged; pgrep -x slurmctld; pgrep -x slurmd; pgrep -x slurmstepd); do
    tr '\0' '\n' 2> /dev/null < "/proc/$p/environ" | grep -qxF "SLURM_CONF=$SLURM_CONF" && echo "$p"
  done
  return 0
}

if [[ $cmd == down ]]; then
  if pgrep -F "$dir/slurmctld.pid" > /dev/null 2>&1; then
    timeout 10 scancel --partition=local || true
    deadline=$((SECONDS + 15))  # KillWait (5 s) and then some
    while ((SECONDS < deadline)) && [[ -n $(timeout 2 squeue -h -o %i) ]]; do sleep 0.25; done
  fi
  mapfile -t pids < <(cluster_pids)
  ((${#pids[@]})) || exit 0
  kill "${pids[@]}" 2> /dev/null || true
  for _ in $(seq 20); do [[ -z $(cluster_pids) ]] && exit 0; sleep 0.25; done
  mapfile -t pids < <(cluster_pids)
  kill -KILL "${pids[@]}" 2> /dev/null || true
  exit 0
fi

[[ $(id -u) -eq 0 ]] || skip "not root: the local Slurm runs its daemons as root"
for c in munged slurmctld slurmd srun sbatch squeue sinfo scancel; do
  command -v "$c" > /dev/null || skip "no $c on PATH (scripts/setup.sh installs slurm-wlm and munge)"
done
mkdir -p "$dir"
[[ -z $(ls -A "$dir") ]] || { echo "$0: $dir is not empty" >&2; exit 2; }
# munged insists that everyone can reach its socket's directory (mktemp -d makes 0700).
chmod 755 "$dir"
mkdir -m 755 "$dir/munge" "$dir/state" "$dir/spool" "$dir/log"

dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --socket="$dir/munge/socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" \
  || { cat "$dir/log/munged.log"; skip "munged did not start (its log is above)"; }

# This machine as slurmd sees it (CPUs, sockets, cores, threads, memory), as the one node.
node=$(slurmd -C 2>&1 | head -1) || true
name=$(sed -n 's/^NodeName=\([^ ]*\).*/\1/p' <<< "$node")
[[ -n $name ]] || skip "slurmd -C did not describe this machine: $node"
# Two free ports, so that a system Slurm or a second test cluster does not clash.
read -r ctld_port slurmd_port < <(python3 -c '
import socket
s = [socket.socket() for _ in range(2)]
for x in s: x.bind(("127.0.0.1", 0))
print(*(x.getsockname()[1] for x in s))')
touch "$dir/plugstack.conf"
cat > "$SLURM_CONF" << EOF
ClusterName=ringtrain-local
SlurmctldHost=$name(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
# No site SPANK plugins from /etc/slurm/plugstack.conf.d.
PlugStackConfig=$dir/plugstack.conf
MailProg=/bin/true
MpiDefault=none
# Processes tracked through /proc and tasks bound with sched_setaffinity: the cgroup plugins would
# make cgroups in this machine's own hierarchy and, under cgroup v2, want a subtree that systemd
# delegates to slurmd.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
# Cores are what jobs get, so -c and --cpu-bind=cores mean what they mean on a real cluster.
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
# A cancelled or failed job's tasks get SIGKILL 5 s after SIGTERM (default 30).
KillWait=5
$node NodeAddr=127.0.0.1 State=UNKNOWN
PartitionName=local Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF

logs() { tail -n 30 "$dir"/log/*.log; }
slurmctld || { logs; skip "slurmctld did not start (its log is above)"; }
slurmd || { logs; skip "slurmd did not start (its log is above)"; }
for _ in $(seq 60); do
  [[ $(sinfo -h -N -o %T 2> /dev/null) == idle ]] && break
  sleep 0.5
done
[[ $(sinfo -h -N -o %T 2> /dev/null) == idle ]] \
  || { logs; skip "the node did not come up idle within 30 s (logs above)"; }
# Slurm's pmix plugin dlopens pmix2/lib/libpmix.so, which Debian ships only in libpmix-dev.
probe=$(timeout 30 srun --mpi=pmix -n 1 true 2>&1) \
  || { echo "$probe"; skip "srun --mpi=pmix does not work here (is libpmix-dev installed?)"; }
echo "local_slurm: node $name up ($(sed 's/^NodeName=[^ ]* //' <<< "$node")); export SLURM_CONF=$SLURM_CONF"
