#!/bin/bash
# scripts/gpu-host-check.sh one part at a time, each alone, as the lent GPU
# host runs them, here without a GPU (CUDA_VISIBLE_DEVICES is emptied, so a
# machine with one behaves alike): every part must end with its checks
# reported, run or skipped (exit 77, or a program not found here), and never
# stop on a shell error (an unset variable, a command not found, a syntax
# error).  Only the shell plumbing is under test, not the checks' results.
#
# Kept short: without a GPU the GPU tests and the benchmarks skip at once; the
# parts that run on the CPU get the options of their own smoke tests
# (PEERS_ARGS, SOFTFLOWD_ARGS, PIPELINE_ARGS, LIVE_CAPTURE_ARGS, SOAK_MINUTES)
# instead of their minutes-long defaults.
#
# usage: test_gpu_host_check.sh SOURCE_ROOT BUILD_ROOT
set -u
src=$1
build=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
parts="suite-parity suite-checks peers bench-stress bench-realistic bench-flows bench-decap
       bench-umem softflowd soak pipeline live-capture"
failed=0
for part in $parts; do
  out=$tmp/$part
  mkdir -p "$out"
  start=$SECONDS
  CUDA_VISIBLE_DEVICES= OUT=$out BUILD=$build REGISTRY=$tmp/registry.bin TAIL=3 \
    PEERS_ARGS="--quick --threads 2" \
    SOFTFLOWD_ARGS="--packets 20000 --flows 2000 --runs 1" \
    PIPELINE_ARGS="--quick --cpu-only --no-peers" \
    LIVE_CAPTURE_ARGS="--quick" SOAK_MINUTES=0.02 \
    BENCH_ARGS="--quick" FLOW_BENCH_ARGS="--quick" DECAP_BENCH_ARGS="--quick" UMEM_BENCH_ARGS="--quick" \
    bash "$src/scripts/gpu-host-check.sh" "$part" > "$out/stdout.txt" 2>&1
  rc=$?
  checks=$(grep -c '^== ' "$out/stdout.txt")
  echo "-- $part: exit $rc, $checks check(s), $((SECONDS - start)) s"
  grep '^== ' "$out/stdout.txt" | sed 's/^/   /'
  # The script's own errors name it and a line; a `sh -c` check's name sh.
  errors=$(grep -hE 'gpu-host-check\.sh: line [0-9]+:|unbound variable|command not found|syntax error' \
    "$out/stdout.txt" "$out"/logs/*.log 2> /dev/null)
  if [ -n "$errors" ]; then
    echo "$part: shell errors:"
    echo "$errors" | head -20
    failed=1
  fi
  # 0: every check passed or skipped; 1: a check ran and failed (a GPU mode's
  # pipeline without a GPU).  Anything else is the script stopping.
  if [ $rc -ne 0 ] && [ $rc -ne 1 ]; then
    echo "$part: the script exited $rc"
    tail -n 20 "$out/stdout.txt"
    failed=1
  fi
  if [ "$checks" -eq 0 ]; then
    echo "$part: no check reported"
    tail -n 20 "$out/stdout.txt"
    failed=1
  fi
done
exit $failed
