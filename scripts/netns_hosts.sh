#!/usr/bin/env bash
# Two "hosts" on one machine for multi-host tests and benchmarks: network namespaces rt-a and
# rt-b joined by a veth pair (real TCP between them, 10.213.0.1 and 10.213.0.2), resolvable by
# name through /etc/hosts, and an rsh agent with which mpirun starts its daemons inside them.
#   netns_hosts.sh up [RATE]    create (RATE, e.g. 1gbit, shapes the link with tc)
#   netns_hosts.sh down         remove everything it created
#   netns_hosts.sh agent        print the rsh agent's path
#   netns_hosts.sh on HOST CMD  run CMD on HOST: in its namespace, under its host name
# Needs root (CAP_NET_ADMIN). Launch from host rt-a, so that the daemons can reach the launcher back
# by its name (Hydra's proxies connect to the host name the launcher reports):
#   netns_hosts.sh on rt-a scripts/mpi_launch.sh --hosts rt-a:2,rt-b:2 -np 4 \
#     --rsh "$(netns_hosts.sh agent)" --net 10.213.0.0/24 ringtrain ...
set -euo pipefail
agent=/tmp/ringtrain_netns_rsh
hosts_tag="# ringtrain netns hosts"

case "${1:-}" in
  up)
    down_quietly() { "$0" down > /dev/null 2>&1 || true; }
    down_quietly
    ip netns add rt-a
    ip netns add rt-b
    ip link add rt-veth-a type veth peer name rt-veth-b
    ip link set rt-veth-a netns rt-a
    ip link set rt-veth-b netns rt-b
    ip -n rt-a addr add 10.213.0.1/24 dev rt-veth-a
    ip -n rt-b addr add 10.213.0.2/24 dev rt-veth-b
    for h in a b; do
      ip -n rt-$h link set lo up
      ip -n rt-$h link set rt-veth-$h up
    done
    if [[ -n "${2:-}" ]]; then
      for h in a b; do ip netns exec rt-$h tc qdisc add dev rt-veth-$h root tbf rate "$2" burst 256kb latency 50ms; done
    fi
    printf '10.213.0.1 rt-a %s\n10.213.0.2 rt-b %s\n' "$hosts_tag" "$hosts_tag" >> /etc/hosts
    # The agent runs the command inside the namespace named like the host, with a UTS namespace
    # of its own whose host name is that name: Open MPI names its shared-memory segments after
    # the host name, so two "hosts" both called like this machine would overwrite each other's.
    printf '#!/bin/sh\n# rsh agent for mpirun (scripts/netns_hosts.sh)\nhost=$1\nshift\nexec ip netns exec "$host" unshare --uts sh -c "hostname $host && $*"\n' > "$agent"
    chmod +x "$agent"
    ip -n rt-a route get 10.213.0.2 > /dev/null
    echo "netns_hosts: rt-a (10.213.0.1) and rt-b (10.213.0.2) are up${2:+, link shaped to $2}"
    ;;
  down)
    ip netns del rt-a 2> /dev/null || true
    ip netns del rt-b 2> /dev/null || true
    sed -i "/$hosts_tag/d" /etc/hosts
    rm -f "$agent"
    ;;
  agent)
    echo "$agent"
    ;;
  on)
    host=$2
    shift 2
    exec ip netns exec "$host" unshare --uts sh -c 'hostname "$0" && exec "$@"' "$host" "$@"
    ;;
  *)
    echo "usage: $0 up [RATE] | down | agent | on HOST COMMAND..." >&2
    exit 2
    ;;
esac
