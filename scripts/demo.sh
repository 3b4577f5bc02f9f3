#!/bin/sh
# Installs what gpupacket needs (Debian 12), builds it, generates sample
# traffic and runs the main job on it:
#   pcapsrc ! gpupacketproc ! packetresultenc   (first lines of the CSV)
#   gpupacket-summary                            (protocols, malformed, speed)
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh --demo
[ -d build ] || meson setup build
ninja -C build
export GST_PLUGIN_PATH_1_0="$PWD/build/gst-plugin"
sample=build/sample-traffic.pcap
python3 examples/make-sample-pcap.py "$sample" --packets 200000
echo
echo "== gst-launch-1.0 pcapsrc location=$sample ! gpupacketproc ! packetresultenc format=csv (first 6 lines)"
gst-launch-1.0 -q pcapsrc location="$sample" ! gpupacketproc mode=cpu verify-l4-checksum=true ! \
  packetresultenc format=csv ! filesink location=build/sample-traffic.csv
head -n 6 build/sample-traffic.csv
echo "   ... $(($(wc -l < build/sample-traffic.csv) - 1)) rows in build/sample-traffic.csv"
echo
echo "== gpupacket-summary --verify-l4-checksum --cpu-threads 0 $sample"
./build/examples/gpupacket-summary --verify-l4-checksum --cpu-threads 0 "$sample"
