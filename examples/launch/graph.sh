#!/bin/sh
# gpupacketproc mode=graph: one CUDA graph per stream, updated and replayed per batch.
# usage: graph.sh [CAPTURE] [OUTPUT.csv]   (defaults: build/sample-traffic.pcap from scripts/demo.sh, stdout)
set -eu
capture=${1:-build/sample-traffic.pcap}
output=${2:-/dev/stdout}
exec gst-launch-1.0 -q pcapsrc location="$capture" batch-size=4096 ! \
  gpupacketproc mode=graph num-streams=4 ! \
  packetresultenc format=csv ! filesink location="$output"
