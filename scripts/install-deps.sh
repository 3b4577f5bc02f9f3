#!/bin/sh
# Installs every Debian 12 package gpupacket needs to build, test and run its demo.
# Runs apt-get as root or through sudo; safe to run again.
set -eu
packages="build-essential pkg-config meson ninja-build python3
  libglib2.0-dev libgstreamer1.0-dev libgstreamer-plugins-base1.0-dev
  gstreamer1.0-tools gstreamer1.0-plugins-base
  libpcap-dev libgtest-dev tshark tcpdump libdpdk-dev tcpreplay iproute2 procps
  python3-gi gir1.2-gstreamer-1.0 gir1.2-gst-plugins-base-1.0
  python3-matplotlib"
# Hyperscan, the reference the DPI stage is tested against, is built for amd64 only.
if [ "$(dpkg --print-architecture)" = amd64 ]; then packages="$packages libhyperscan-dev"; fi
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "install-deps: installing:$missing"
  # tshark asks whether non-root users may capture; answer non-interactively.
  echo "wireshark-common wireshark-common/install-setuid boolean false" | $sudo debconf-set-selections
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends $missing
fi
