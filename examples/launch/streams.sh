#!/bin/sh
# gpupacketproc mode=streams: 4 CUDA streams, copies and kernels of neighbouring batches overlap.
# usage: streams.sh [CAPTURE] [OUTPUT.csv]   (defaults: build/sample-traffic.pcap from scripts/demo.sh, stdout)
set -eu
capture=${1:-build/sample-traffic.pcap}
output=${2:-/dev/stdout}
exec gst-launch-1.0 -q pcapsrc location="$capture" batch-size=4096 ! \
  gpupacketproc mode=streams num-streams=4 ! \
  packetresultenc format=csv ! filesink location="$output"
