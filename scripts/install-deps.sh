#!/bin/sh
# Installs the Debian 12 packages gpupacket needs; safe to run again.
#   scripts/install-deps.sh          everything to build, test and benchmark
#   scripts/install-deps.sh --demo   only what building and running the demo needs
# Runs apt-get as root or through sudo, quietly: its output goes to a log that
# is shown only if it fails.
set -eu
# Build and run: the plugin, its examples and the sample generator; libfixbuf
# for ipfixsink (IPFIX export); zlib and libzstd for compressed captures;
# libxdp and libbpf for afxdpsrc (AF_XDP live capture).
demo_packages="build-essential pkg-config meson ninja-build python3
  libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base libpcap-dev libfixbuf-dev
  zlib1g-dev libzstd-dev libxdp-dev libbpf-dev"
# Tests and benchmarks: GoogleTest, tshark (the parsing oracle), tcpdump and
# tcpreplay, iproute2 and procps (sysctl) for the live tests' namespaces,
# PyGObject for the Python example, DPDK and Hyperscan (the CPU peers),
# matplotlib (the plots), clang and its libFuzzer runtime (the fuzz harnesses),
# nfdump (nfcapd, the IPFIX collector ipfixsink is tested against; nfpcapd),
# softflowd (the flow probe gpupacketproc's flows are compared with), and the
# other flow meters bench/pipeline-bench.py runs on the same captures: argus
# (argus-server; argus-client's racount counts its packets) and pmacct (pmacctd).
test_packages="libgtest-dev tshark tcpdump libdpdk-dev tcpreplay iproute2 procps nfdump softflowd
  argus-server argus-client pmacct
  python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
  python3-matplotlib clang libclang-rt-14-dev"
packages=$demo_packages
if [ "${1:-}" != "--demo" ]; then
  packages="$packages $test_packages"
  # Hyperscan, the reference the DPI stage is tested against, is built for amd64 only.
  if [ "$(dpkg --print-architecture)" = amd64 ]; then packages="$packages libhyperscan-dev"; fi
fi
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install-deps: installing:$missing"
  log=$(mktemp "${TMPDIR:-/tmp}/install-deps-XXXXXX.log")
  # tshark asks whether non-root users may capture; answer non-interactively.
  if ! { echo "wireshark-common wireshark-common/install-setuid boolean false" |
           $sudo debconf-set-selections &&
         $sudo apt-get update -q &&
         DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends \
           $missing; } > "$log" 2>&1; then
    cat "$log"
    echo "install-deps: apt-get failed (log above, kept in $log)" >&2
    exit 1
  fi
  echo "install-deps: done ($(grep -c '^Setting up' "$log") packages set up; log in $log)"
fi
