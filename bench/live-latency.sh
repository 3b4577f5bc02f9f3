#!/bin/sh
# Capture-to-result latency of gpupacketproc per mode on a live veth pair in a
# network namespace of its own (needs root; removed again at the end):
#   bench/live-latency.sh [gpupacket-live-latency options...]
# e.g. bench/live-latency.sh --modes cpu --rate 20000 --csv live.csv
set -eu
exe=${GPP_LIVE_LATENCY:-$(dirname "$0")/../build/bench/gpupacket-live-latency}
ns=gpp-live-latency-$$
ip netns add "$ns" 2> /dev/null || { echo "SKIP: cannot create a network namespace (root?)"; exit 77; }
trap 'ip netns del "$ns"' EXIT
# In a chroot or container `ip netns add` can succeed and the namespace still be
# unusable ("mount --make-rslave /" failed: / is not a mount point): skip then too.
if ! ip netns exec "$ns" true 2> /dev/null ||
   ! ip -n "$ns" link add gpp-inject type veth peer name gpp-capture 2> /dev/null; then
  echo "SKIP: cannot use a network namespace with a veth pair here (a chroot or container?)"
  exit 77
fi
for ifc in gpp-inject gpp-capture; do
  ip netns exec "$ns" sh -c "echo 1 > /proc/sys/net/ipv6/conf/$ifc/disable_ipv6"
  ip -n "$ns" link set $ifc up
done
ip netns exec "$ns" "$exe" --capture gpp-capture --inject gpp-inject "$@"
