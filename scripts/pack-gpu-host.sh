#!/bin/bash
# Packs what scripts/gpu-host-check.sh needs from build/ (binaries and the
# plugin, no object files) into build/gpu-host.tgz, small enough to carry to
# the lent GPU host with .gstrt/ and .shared/; unpack there with
#   tar xzf build/gpu-host.tgz
#   scripts/pack-gpu-host.sh [--peers | --pipeline]
# --peers: also the peer tools bench/pipeline-bench.py runs (the `pipeline`
# part), as installed here by scripts/install-deps.sh: tcpdump, softflowd,
# nfpcapd, argus, racount (argus's packet count) and pmacctd with the
# libraries they load, in build/peers/bin and build/peers/lib (about 13 MB
# packed; glibc's own libraries are the host's).  Not tshark: libwireshark
# alone is 111 MB, more than a call to the host carries; pipeline-bench.py
# skips it there with that reason.  A tool not installed here is left out
# with a line, and skipped there likewise.
# --pipeline: only what the `pipeline` part needs (the plugin,
# gpupacket-pcap-engines, gpupacket-cpu-peers with its DPDK and Hyperscan
# libraries, the peer tools), the programs without debug information: about
# 21 MB instead of 35 MB + 13 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:-}
case $mode in ''|--peers|--pipeline) ;; *) echo "usage: $0 [--peers | --pipeline]" >&2; exit 2;; esac
# copy_with_libraries FILE: FILE into build/peers/bin, what it loads into build/peers/lib.
copy_with_libraries() {
  cp "$1" build/peers/bin/
  ldd "$1" | awk '$3 ~ /^\// { print $3 }' |
    grep -v -E '/(libc|libm|libpthread|libdl|librt|libresolv)\.so' |
    xargs -r cp -L -t build/peers/lib/
}
extra=()
if [ -n "$mode" ]; then
  rm -rf build/peers
  mkdir -p build/peers/bin build/peers/lib
  for tool in tcpdump softflowd nfpcapd argus racount pmacctd; do
    if path=$(PATH="$PATH:/usr/sbin:/sbin" command -v "$tool"); then
      copy_with_libraries "$path"
    else
      echo "pack: $tool is not installed here: left out"
    fi
  done
  extra=(build/peers)
fi
if [ "$mode" = --pipeline ]; then
  # gpupacket-cpu-peers' libraries (DPDK, Hyperscan) beside the tools'.
  [ -x build/bench/gpupacket-cpu-peers ] && copy_with_libraries build/bench/gpupacket-cpu-peers &&
    rm build/peers/bin/gpupacket-cpu-peers
  # The programs without their debug information (30 MB packed with it).
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  mkdir -p "$stage/build/gst-plugin" "$stage/build/bench"
  cp build/gst-plugin/*.so "$stage/build/gst-plugin/"
  for program in gpupacket-pcap-engines gpupacket-cpu-peers; do
    [ -x "build/bench/$program" ] && cp "build/bench/$program" "$stage/build/bench/"
  done
  strip --strip-debug "$stage"/build/gst-plugin/*.so "$stage"/build/bench/*
  cp -r build/peers "$stage/build/"
  tar czf build/gpu-host.tgz -C "$stage" build
else
  # Without the host code's debug information (the kernels' line tables, in
  # the fatbins, stay): with it the pack outgrows what a call carries.
  stage=$(mktemp -d)
  trap 'rm -rf "$stage"' EXIT
  find build/gst-plugin build/examples build/tests/gpu build/tests/capture build/bench -maxdepth 1 -type f \
    \( -perm -u+x -o -name '*.so' \) -print0 | tar cf - --null -T - | tar xf - -C "$stage"
  find "$stage/build" -type f \( -perm -u+x -o -name '*.so' \) ! -name '*.sh' ! -name '*.py' \
    -exec strip --strip-debug {} + 2> /dev/null
  for e in "${extra[@]}"; do cp -r "$e" "$stage/build/"; done
  tar czf build/gpu-host.tgz -C "$stage" build
fi
ls -l build/gpu-host.tgz
