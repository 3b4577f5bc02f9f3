#!/bin/sh
# gpupacketproc mode=cpu: host threads, one per core.
# usage: cpu.sh [CAPTURE] [OUTPUT.csv]   (defaults: build/sample-traffic.pcap from scripts/demo.sh, stdout)
set -eu
capture=${1:-build/sample-traffic.pcap}
output=${2:-/dev/stdout}
exec gst-launch-1.0 -q pcapsrc location="$capture" batch-size=256 ! \
  gpupacketproc mode=cpu cpu-threads=0 ! \
  packetresultenc format=csv ! filesink location="$output"
