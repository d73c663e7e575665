#!/usr/bin/env bash
# Tar shards against an image folder read over a network file system: the same JPEGs as in
# bench/shards_vs_folders.sh, served by sshd in one network namespace host (scripts/netns_hosts.sh)
# and mounted with sshfs (FUSE over SFTP) in the other, where the image pipeline reads them with 1
# worker and crop-region decoding; warm, and with the page cache emptied before every pass (cold:
# every open, stat and read then crosses the link). Runs alternate within each repetition;
# prints the medians and the ratios. Root only (namespaces, the page cache).
#   bench/shards_over_sshfs.sh [REPS] [IMAGES] [SHARD_MB]      (defaults: 5 640 8)
set -euo pipefail
cd "$(dirname "$0")/.."
reps=${1:-5} images=${2:-640} shard_mb=${3:-8}
bin=$PWD/build/bench/image_pipeline_bench ringtrain=$PWD/build/ringtrain
[[ -x $bin && -x $ringtrain ]] || { echo "shards_over_sshfs: build first ($bin, $ringtrain)" >&2; exit 1; }
command -v sshfs > /dev/null && [[ -x /usr/sbin/sshd ]] ||
  { echo "shards_over_sshfs: needs sshfs and openssh-server (apt-get install sshfs openssh-server)" >&2; exit 1; }
source bench/photo_tree.sh
source bench/median.sh
tree=$(photo_tree "$images")
work=$(mktemp -d /tmp/ringtrain_sshfs_bench_XXXXXX)
cleanup() {
  [[ -f $work/sshd.pid ]] && kill "$(cat "$work/sshd.pid")" 2> /dev/null
  bash scripts/netns_hosts.sh down > /dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT
mkdir -p "$work/served/data" "$work/mnt" "$work/keys"
cp -r "$tree" "$work/served/data/train"
"$ringtrain" pack --from "$work/served/data" --to "$work/served/shards" --shard-mb "$shard_mb" >&2
ssh-keygen -q -t ed25519 -N '' -f "$work/keys/host"
ssh-keygen -q -t ed25519 -N '' -f "$work/keys/user"
cat > "$work/sshd_config" << EOT
Port 2222
ListenAddress 10.213.0.2
HostKey $work/keys/host
AuthorizedKeysFile $work/keys/user.pub
PermitRootLogin prohibit-password
PasswordAuthentication no
UsePAM no
StrictModes no
PidFile $work/sshd.pid
Subsystem sftp internal-sftp
EOT
bash scripts/netns_hosts.sh up > /dev/null
mkdir -p /run/sshd
ip netns exec rt-b /usr/sbin/sshd -f "$work/sshd_config" -E "$work/sshd.log"
sleep 1
# One shell in host rt-a holds the mount (its mount namespace is its own) and runs every pass.
ip netns exec rt-a bash -s "$work" "$bin" "$reps" << 'EOS' > "$work/rates.txt"
set -euo pipefail
work=$1 bin=$2 reps=$3
sshfs -p 2222 -o "IdentityFile=$work/keys/user,StrictHostKeyChecking=no,UserKnownHostsFile=/dev/null,dir_cache=no" \
  "root@10.213.0.2:$work/served" "$work/mnt"
for ((r = 1; r <= reps; r++)); do
  for cache in warm cold; do
    for source in folder shards; do
      root=$([[ $source == shards ]] && echo "$work/mnt/shards/train" || echo "$work/mnt/data/train")
      rate=$("$bin" "$root" --workers 1 --passes 3 --source "$source" --cold "$([[ $cache == cold ]] && echo 1 || echo 0)" |
             sed -n 's/^ringtrain: median \([0-9.]*\).*/\1/p')
      echo "$cache $source $rate"
      echo "repetition $r: $cache $source $rate images/s" >&2
    done
  done
done
fusermount -u "$work/mnt"
EOS
echo "$images JPEGs of 500x375 over sshfs between two network namespaces, $(ls "$work/served/shards/train" | grep -c '\.tar$') shards of at most $shard_mb MiB;"
echo "decode (crop region) + random resized crop 224 + flip + normalise, 1 worker, images/s, median of $reps runs of 3 passes:"
for cache in warm cold; do
  f=$(median_of $(awk -v c=$cache '$1 == c && $2 == "folder" {print $3}' "$work/rates.txt"))
  s=$(median_of $(awk -v c=$cache '$1 == c && $2 == "shards" {print $3}' "$work/rates.txt"))
  awk -v c="$cache" -v f="$f" -v s="$s" 'BEGIN { printf "%s: folder %.1f, shards %.1f: shards / folder %.2fx\n", c, f, s, s / f }'
done
