#!/bin/sh
# Installs what gpupacket needs (Debian 12), then builds and runs the whole
# test suite twice: a normal build (GPU suite included: it reports SKIP where
# there is no GPU) and an AddressSanitizer + UBSan build of the CPU side;
# then the three fuzz harnesses, a minute each, in a clang build of their own.
set -eu
cd "$(dirname "$0")/.."
./scripts/install-deps.sh
# Both builds run and report whatever the first one found: one failure does
# not hide the sanitizer half.
normal=0 asan=0 fuzz=0
# --reconfigure: a build set up by the demo (fewer packages) finds what
# install-deps added since, or its test targets would be silently missing.
setup() { if [ -d "$1" ]; then meson setup --reconfigure "$@"; else meson setup "$@"; fi; }
setup build && ninja -C build && meson test -C build --print-errorlogs ||
  normal=1
setup build-asan -Dcuda=disabled -Db_sanitize=address,undefined -Db_lundef=false \
  -Dbuildtype=debug && ninja -C build-asan &&
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 meson test -C build-asan --print-errorlogs ||
  asan=1
# Only the harnesses are built there (libFuzzer's coverage flags everywhere).
fuzzers="tests/fuzz/fuzz-packet-core tests/fuzz/fuzz-acl-loader tests/fuzz/fuzz-dpi-loader
  tests/fuzz/fuzz-seeds"
CC=clang CXX=clang++ setup build-fuzz -Dfuzzing=true -Dcuda=disabled \
  -Db_sanitize=address,undefined -Db_lundef=false && ninja -C build-fuzz $fuzzers &&
  meson test -C build-fuzz --no-rebuild --suite fuzz --print-errorlogs ||
  fuzz=1
verdict() { [ "$1" = 0 ] && echo passed || echo FAILED; }
echo "test.sh: normal build $(verdict $normal), ASan/UBSan build $(verdict $asan)," \
  "fuzzing $(verdict $fuzz)"
[ $normal = 0 ] && [ $asan = 0 ] && [ $fuzz = 0 ]
