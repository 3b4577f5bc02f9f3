#!/bin/sh
# gpupacketproc mode=persistent: a resident kernel polls a work queue: lowest latency.
# usage: persistent.sh [CAPTURE] [OUTPUT.csv]   (defaults: build/sample-traffic.pcap from scripts/demo.sh, stdout)
set -eu
capture=${1:-build/sample-traffic.pcap}
output=${2:-/dev/stdout}
exec gst-launch-1.0 -q pcapsrc location="$capture" batch-size=64 ! \
  gpupacketproc mode=persistent num-streams=8 wait-strategy=spin ! \
  packetresultenc format=csv ! filesink location="$output"
