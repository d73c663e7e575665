#!/usr/bin/env bash
# Several hosts: 2 "hosts" x 2 ranks in network namespaces joined by veth (real TCP between the
# hosts, shared memory within each), training LeNet for one epoch on a Fashion-MNIST subset; the
# checkpoint must equal the one from 4 ranks on one host, tensor by tensor, both with the ring over
# its own TCP connections (what dist.transport = "auto" picks across hosts: shared memory cannot
# span them) and over MPI point-to-point. Creates and removes its own namespaces.
# usage: cluster_test.sh RINGTRAIN SOURCE_DIR      (exit 77 = skipped)
set -u
ringtrain=$1 src=$2
data=/usr/share/datasets/fashion-mnist
[[ -f $data/train-images-idx3-ubyte.gz ]] || { echo "SKIP: Fashion-MNIST not installed in $data"; exit 77; }
command -v ip > /dev/null || { echo "SKIP: no ip command (iproute2)"; exit 77; }
if ! ip netns add rt-probe 2> /dev/null; then echo "SKIP: cannot create network namespaces (needs root / CAP_NET_ADMIN)"; exit 77; fi
ip netns del rt-probe
work=$(mktemp -d /tmp/ringtrain_cluster_XXXXXX)
trap '"$src/scripts/netns_hosts.sh" down; rm -rf "$work"' EXIT
launch=$src/scripts/mpi_launch.sh  # Open MPI or MPICH, as configured
"$src/scripts/netns_hosts.sh" up || exit 1

# A subset: 2,048 training and 512 test images, as IDX files.
python3 "$src/tests/support/idx_subset.py" "$data" "$work/data" 2048 512 || exit 1

common=(--config "$src/configs/fashion_mnist.toml" --set model.name=lenet --set train.epochs=1 --set train.threads=1
        --set train.batch_per_rank=32 --set log.progress=none --set data.dir="$work/data"
        --set data.train_images=train-images-idx3-ubyte --set data.train_labels=train-labels-idx1-ubyte
        --set data.test_images=t10k-images-idx3-ubyte --set data.test_labels=t10k-labels-idx1-ubyte)
"$launch" --testing -np 4 "$ringtrain" "${common[@]}" \
  --set checkpoint.dir="$work/one_host" > "$work/one.out" 2>&1 || { echo "FAIL: single-host run"; cat "$work/one.out"; exit 1; }
for transport in auto mpi; do
  timeout 240 "$src/scripts/netns_hosts.sh" on rt-a "$launch" --testing --hosts rt-a:2,rt-b:2 -np 4 \
    --rsh "$("$src/scripts/netns_hosts.sh" agent)" --net 10.213.0.0/24 "$ringtrain" "${common[@]}" --set dist.transport=$transport --set checkpoint.dir="$work/two_hosts_$transport" \
    > "$work/two_$transport.out" 2>&1 || { echo "FAIL: two-host run, transport $transport"; cat "$work/two_$transport.out"; exit 1; }
done
grep -q "world 4 rank(s)" "$work/two_auto.out" && grep -q "ring over shared memory" "$work/one.out" \
  && grep -q "ring over TCP" "$work/two_auto.out" && grep -q "ring over MPI point-to-point" "$work/two_mpi.out" \
  || { echo "FAIL: expected 4 ranks, shared memory on one host, TCP (auto) and MPI point-to-point across hosts"
       cat "$work/one.out" "$work/two_auto.out" "$work/two_mpi.out"; exit 1; }

python3 - "$work/one_host/checkpoint.safetensors" "$work/two_hosts_auto/checkpoint.safetensors" \
  "$work/two_hosts_mpi/checkpoint.safetensors" <<'PY'
import json, struct, sys
def read(path):
    b = open(path, "rb").read()
    n = struct.unpack("<Q", b[:8])[0]
    head = json.loads(b[8:8 + n]); base = 8 + n
    out = {}
    for k, v in head.items():
        if k == "__metadata__" or v["dtype"] != "F32": continue
        s, e = v["data_offsets"]
        out[k] = struct.unpack("<%df" % ((e - s) // 4), b[base + s: base + e])
    return out
a = read(sys.argv[1])
worst = 0.0
for path in sys.argv[2:]:
    b = read(path)
    assert a.keys() == b.keys() and a, (sorted(a), sorted(b))
    for k in a:
        scale = 1e-6 + max(abs(t) for t in a[k])
        worst = max(worst, max(abs(x - y) for x, y in zip(a[k], b[k])) / scale)
assert worst <= 1e-6, worst
print("PASS: %d tensors equal across 1 host x 4 ranks and 2 hosts x 2 ranks over TCP and over MPI "
      "(worst relative difference %.2g)" % (len(a), worst))
PY
