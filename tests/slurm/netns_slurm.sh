#!/usr/bin/env bash
# A two-node Slurm cluster on the network-namespace hosts of scripts/netns_hosts.sh (rt-a and rt-b,
# which must be up), everything inside one directory as in local_slurm.sh: slurmctld and the
# slurmd of node rt-a in namespace rt-a, the slurmd of rt-b in rt-b, munged outside (its socket is
# a file, which both reach). Commands talk to it from rt-a: netns_hosts.sh on rt-a srun ...
#   netns_slurm.sh up DIR     DIR is a new, empty directory; then: export SLURM_CONF=DIR/slurm.conf
#   netns_slurm.sh down DIR   stop its daemons and the steps they started
# `ip netns exec` mounts a fresh /sys, without the cgroup file systems slurmd needs: each slurmd
# mounts this machine's again in its own mount namespace. Each node has its own copy of the
# configuration only so that each gets its own PMIx directory (both share /tmp). `up` exits 77,
# the tests' skip code, with the reason, where the cluster cannot start here.
set -euo pipefail
cmd=${1:-} dir=${2:-}
[[ ($cmd == up || $cmd == down) && -n $dir ]] || { echo "usage: $0 up|down DIR" >&2; exit 2; }
dir=$(realpath -m "$dir")
hosts=$(dirname "$0")/../../scripts/netns_hosts.sh
nodes=(rt-a rt-b)

if [[ $cmd == down ]]; then
  for _ in 1 2; do
    for p in $(pgrep -x munged; pgrep -x slurmctld; pgrep -x slurmd; pgrep -x slurmstepd); do
      tr '\0' '\n' 2> /dev/null < "/proc/$p/environ" | grep -q "^SLURM_CONF=$dir/" && kill -9 "$p" 2> /dev/null
    done
    sleep 0.5
  done
  exit 0
fi

skip() {
  echo "SKIP: $1"
  "$0" down "$dir" > /dev/null 2>&1 || true
  exit 77
}
[[ $(id -u) -eq 0 ]] || skip "not root: the Slurm daemons run as root"
for c in munged slurmctld slurmd srun sinfo; do
  command -v "$c" > /dev/null || skip "no $c on PATH (scripts/setup.sh installs slurm-wlm and munge)"
done
mkdir -p "$dir"
[[ -z $(ls -A "$dir") ]] || { echo "$0: $dir is not empty" >&2; exit 2; }
chmod 755 "$dir"
mkdir -m 755 "$dir/munge" "$dir/state" "$dir/log"
export SLURM_CONF=$dir/slurm.conf
dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 status=none
chmod 400 "$dir/munge/munge.key"
munged --socket="$dir/munge/socket" --key-file="$dir/munge/munge.key" --pid-file="$dir/munge/munged.pid" \
  --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed" || skip "munged did not start"
touch "$dir/plugstack.conf"
cat > "$SLURM_CONF" << EOC
ClusterName=ringtrain-netns
SlurmctldHost=rt-a(10.213.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$dir/munge/socket
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool-%n
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
PlugStackConfig=$dir/plugstack.conf
MailProg=/bin/true
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/affinity
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=5
NodeName=rt-a NodeAddr=10.213.0.1 CPUs=$(nproc) State=UNKNOWN
NodeName=rt-b NodeAddr=10.213.0.2 CPUs=$(nproc) State=UNKNOWN
PartitionName=netns Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=FORCE:4
EOC
# This machine's cgroup file systems, mounted again inside a namespace: "TYPE PATH OPTIONS" each.
cgroups=$(awk '$2 ~ "^/sys/fs/cgroup(/|$)" { print $3, $2, $4 }' /proc/mounts)
[[ -n $cgroups ]] || skip "no cgroup file system under /sys/fs/cgroup"
cat > "$dir/with_cgroups.sh" << EOC
#!/bin/sh
while read -r type path options; do mkdir -p "\$path" && mount -t "\$type" -o "\$options" "\$type" "\$path" || exit 1; done << 'LIST'
$cgroups
LIST
exec "\$@"
EOC
chmod +x "$dir/with_cgroups.sh"
"$hosts" on rt-a env SLURM_CONF="$SLURM_CONF" slurmctld || skip "slurmctld did not start: $(tail -5 "$dir/log/slurmctld.log")"
for h in "${nodes[@]}"; do
  mkdir -m 755 "$dir/$h" "$dir/pmix-$h" "$dir/spool-$h"
  cp "$SLURM_CONF" "$dir/plugstack.conf" "$dir/$h/"
  echo "PMIxCliTmpDirBase=$dir/pmix-$h" > "$dir/$h/mpi.conf"
  "$hosts" on "$h" env SLURM_CONF="$dir/$h/slurm.conf" "$dir/with_cgroups.sh" slurmd -N "$h" ||
    skip "slurmd of $h did not start: $(tail -5 "$dir/log/slurmd-$h.log" 2> /dev/null)"
done
for _ in $(seq 60); do
  [[ $("$hosts" on rt-a env SLURM_CONF="$SLURM_CONF" sinfo -h -N -o %T 2> /dev/null | sort -u) == idle ]] && break
  sleep 0.5
done
[[ $("$hosts" on rt-a env SLURM_CONF="$SLURM_CONF" sinfo -h -N -o %T 2> /dev/null | sort -u) == idle ]] ||
  skip "the nodes did not come up idle within 30 s: $(tail -3 "$dir"/log/*.log)"
echo "netns_slurm: nodes rt-a and rt-b up; export SLURM_CONF=$SLURM_CONF"
