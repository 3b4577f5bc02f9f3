#!/bin/sh
# Installs what gpupacket needs (Debian 12), then builds and runs the whole
# test suite twice: a normal build (GPU suite included: it reports SKIP where
# there is no GPU) and an AddressSanitizer + UBSan build of the CPU side.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
[ -d build ] || meson setup build
ninja -C build
meson test -C build --print-errorlogs
[ -d build-asan ] || meson setup build-asan -Dcuda=disabled -Db_sanitize=address,undefined \
  -Db_lundef=false -Dbuildtype=debug
ninja -C build-asan
UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-asan --print-errorlogs
