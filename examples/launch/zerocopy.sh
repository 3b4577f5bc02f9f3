#!/bin/sh
# gpupacketproc mode=zerocopy: the kernel reads and writes pinned host memory, no copies.
# usage: zerocopy.sh [CAPTURE] [OUTPUT.csv]   (defaults: build/sample-traffic.pcap from scripts/demo.sh, stdout)
set -eu
capture=${1:-build/sample-traffic.pcap}
output=${2:-/dev/stdout}
exec gst-launch-1.0 -q pcapsrc location="$capture" batch-size=1024 ! \
  gpupacketproc mode=zerocopy num-streams=4 ! \
  packetresultenc format=csv ! filesink location="$output"
