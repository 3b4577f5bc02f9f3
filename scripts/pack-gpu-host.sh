#!/bin/bash
# Packs what scripts/gpu-host-check.sh needs from build/ (binaries and the
# plugin, no object files) into build/gpu-host.tgz, small enough to carry to
# the lent GPU host with .gstrt/ and .shared/; unpack there with
#   tar xzf build/gpu-host.tgz
set -euo pipefail
cd "$(dirname "$0")/.."
find build/gst-plugin build/examples build/tests/gpu build/bench -maxdepth 1 -type f \
  \( -perm -u+x -o -name '*.so' \) -print0 | tar czf build/gpu-host.tgz --null -T -
ls -l build/gpu-host.tgz
