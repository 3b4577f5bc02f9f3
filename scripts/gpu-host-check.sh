#!/bin/bash
# Runs the GPU checks on a machine with a CUDA GPU, from an existing build:
# the gpu test suite, compute-sanitizer over it, the examples in every mode,
# the CPU peers and the benchmark.  For the lent GPU host (no GStreamer there),
# carry build/, .gstrt/ (../shared/tools/gst-runtime-bundle) and .shared/ (a
# copy of ../shared) and run:  bash scripts/gpu-host-check.sh [PART...]
# PART: suite (tests, sanitizers, examples, live latency), bench (the CPU peers
# on every core, then gpupacket-bench's stress and realistic grids, then
# gpupacket-flow-bench, gpupacket-decap-bench and gpupacket-umem-bench), or
# their pieces: suite-parity (the GPU tests, the AF_XDP capture's test and the live
# latency), suite-checks
# (compute-sanitizer, the examples, Community ID and flows through
# gst-launch), peers, bench-stress, bench-realistic, bench-flows,
# bench-decap (decap=inner against none, every mode, report in $OUT/decap),
# bench-umem (AF_XDP frames read in place from a mapped UMEM against the
# gathered batch, about 10 s, report in $OUT/umem; UMEM_BENCH_ARGS adds options);
# default: all of them.  A check that cannot run here (exit 77)
# is reported as skipped, not failed.
# softflowd (not in the default): bench/flows-vs-softflowd.py, mode=cpu against
# softflowd (bundle Debian's softflowd with the runtime), its report in
# $OUT/softflowd.md.
# soak (not in the default): gpupacket-soak in mode=persistent with the ACL
# and DPI stages on, SOAK_MINUTES (3) long, its report in $OUT/soak.md.
# pipeline (not in the default; a call of its own, about 6 minutes):
# bench/pipeline-bench.py, the gst-launch-1.0 pipelines a user runs beside
# dd, the engine alone and the peer tools on two generated 4M-packet
# captures, its report (report.md, report.csv, the plots where matplotlib
# is) in $OUT/pipeline; PIPELINE_ARGS adds options (e.g. --packets N).  Pack
# with `scripts/pack-gpu-host.sh --pipeline` (or --peers): the peer tools
# then come from build/peers; one missing there is skipped with the reason.
# live-capture (not in the default; a call of its own, about 2 minutes):
# bench/live-capture-bench.py, pcapsrc and afxdpsrc (1, 2 and 4 queues) on a
# veth pair between two network namespaces, senders on the other cores
# (gpupacket-xdp-send where built, else tcpreplay); needs root (skipped
# otherwise), its report in $OUT/live-capture; LIVE_CAPTURE_ARGS adds options
# (e.g. --proc persistent --duration 3 --steps 5: about 2.5 minutes; --napi-cores
# --senders 4: each source's kernel receive work on one core, as behind one
# NIC queue).
# On the lent host one command may run 10 minutes: run suite-parity,
# suite-checks and the bench's pieces apart (suite took 559 s on 2026-12-03; peers
# 137 s, and the full realistic grid after them did not finish within 330 s:
# give `peers bench-realistic` a call of its own).
# Logs go to $OUT/logs/NAME.log, the benchmark reports to $OUT/stress and
# $OUT/realistic, the peers' figures to $OUT/peers.csv.  Each part runs on its
# own.  BUILD names the build (default build/); PEERS_ARGS, SOFTFLOWD_ARGS add
# options to gpupacket-cpu-peers and bench/flows-vs-softflowd.py (e.g. --quick,
# --packets N: tests/scripts/test_gpu_host_check.sh runs every part so); a
# program not found here is reported as a skipped check.
set -uo pipefail
parts=" ${*:-suite bench} "
parts=${parts/ suite / suite-parity suite-checks }
parts=${parts/ bench / peers bench-stress bench-realistic bench-flows bench-decap bench-umem }
want() { [[ $parts == *" $1 "* ]]; }
cd "$(dirname "$0")/.."
OUT=${OUT:-$PWD/out}
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
# Straight into $OUT, so what ran comes back even if the machine's time runs out.
LOGS=$OUT/logs
mkdir -p "$LOGS"
[ -d .shared ] && [ ! -e ../shared ] && ln -sfn "$PWD/.shared" ../shared
[ -f .gstrt/env.sh ] && source .gstrt/env.sh
export GST_PLUGIN_PATH_1_0=$BUILD/gst-plugin
export GST_REGISTRY_1_0=${REGISTRY:-/tmp/gpupacket-registry.bin}
pcaps=../shared/data/pcap
# The element's modes, from the product's table (gpu/engine.h kModes).
modes=$("$BUILD/bench/gpupacket-pcap-engines" --list-modes 2> /dev/null | tr '\n' ' ')
gpu_modes=${modes#cpu }
# The realistic sets (ClassBench fw1 10k, ET Open 2024's fast patterns).
realistic="acl-rules=../shared/data/acl/classbench_fw1_10k.rules dpi-patterns=../shared/data/dpi/et_open_2024 dpi-select=fast-pattern"
san="compute-sanitizer --error-exitcode 9"
status=0
run() {  # run NAME COMMAND...: log to $OUT/NAME.log, print the tail
  local name=$1; shift
  local start=$SECONDS
  # A program that is not here: the check cannot run (skipped, as exit 77).
  if ! command -v "$1" > /dev/null; then
    printf '== %s: skipped (%s not found here)\n' "$name" "$1" | tee "$LOGS/$name.log"
    return
  fi
  "$@" > "$LOGS/$name.log" 2>&1
  local rc=$?
  printf '== %s: rc=%d%s, %ds\n' "$name" "$rc" "$([ $rc -eq 77 ] && echo ' (skipped)')" \
    $((SECONDS - start))
  tail -n "${TAIL:-6}" "$LOGS/$name.log"
  [ $rc -eq 0 ] || [ $rc -eq 77 ] || status=1
}
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | tee "$LOGS/gpu.txt"
else
  echo "no nvidia-smi here: no NVIDIA driver, the GPU checks skip" | tee "$LOGS/gpu.txt"
fi
[ -n "$modes" ] || echo "no $BUILD/bench/gpupacket-pcap-engines: the checks over every mode skip"
if want suite-parity; then
run parity $BUILD/tests/gpu/test-gpu-parity "$pcaps"
run modes $BUILD/tests/gpu/test-gpu-modes "$pcaps"
GPP_GPU_MODES_PROPS="acl-rules=../shared/data/acl/classbench_fw1_1k.rules dpi-patterns=../shared/data/dpi/et_open_emerging-scan.rules" \
  GPP_GPU_MODES_CAPTURES=zeek__wikipedia.pcap,zeek__ssh.pcap,zeek__ftp_ipv6.pcap \
  run modes-classify $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section parity
# The realistic sets through the element in every mode; test-gpu-parity runs
# them over every capture.
GPP_GPU_MODES_PROPS="$realistic" GPP_GPU_MODES_CAPTURES=wikipedia,ssh,http,generated \
  run modes-realistic $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section parity
# The element defaults to one persistent block per SM; a single block too (every
# batch over 256 packets then loops on it).
GPP_GPU_MODES_MODES=persistent GPP_GPU_MODES_PROPS="persistent-blocks=1" \
  run modes-persistent-1blk $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section parity
GPP_GPU_MODES_MODES=persistent GPP_GPU_MODES_PROPS="persistent-blocks=1 acl-rules=../shared/data/acl/classbench_fw1_1k.rules dpi-patterns=../shared/data/dpi/et_open_emerging-scan.rules" \
  GPP_GPU_MODES_CAPTURES=zeek__wikipedia.pcap,zeek__ssh.pcap,generated \
  run modes-persistent-1blk-classify $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section parity
GPP_GPU_MODES_MODES=persistent GPP_GPU_MODES_PROPS="persistent-blocks=1" \
  run swap-persistent-1blk $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section swap
# Several GPUs' code on this one: every batch sharded over two shards of
# device 0 (device-ids=0,0; two resident kernels need persistent-blocks),
# byte-identical to cpu, and 100 state cycles.
two_shards="device-ids=0,0 persistent-blocks=16"
GPP_GPU_MODES_PROPS="$two_shards" GPP_GPU_MODES_CAPTURES=wikipedia,ssh,http,generated \
  run modes-two-shards $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section parity
GPP_GPU_MODES_PROPS="$two_shards" run leaks-two-shards $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section leaks
# decap=inner through the element in every mode on the tunnelled captures:
# the records and the tunnel plane byte-identical to cpu's.
GPP_GPU_MODES_PROPS="decap=inner" \
  run modes-decap $BUILD/tests/gpu/test-gpu-modes ../shared/data/pcap-tunnels --section parity
# Sets of realistic size (ClassBench 10k, the whole ET Open 2024 folder)
# swapped while playing, in every mode.
GPP_GPU_MODES_SWAP_REALISTIC=1 run swap-realistic $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section swap
# Capture-to-result latency per mode on a veth pair (needs root and network
# namespaces; iproute2 may come from the bundle).
command -v ip > /dev/null || export PATH="$PWD/.gstrt/root/bin:$PATH"
# The AF_XDP capture library under afxdpsrc, on this host's kernel (root, a
# namespace of its own; skipped without).
run xdp-capture $BUILD/tests/capture/test-xdp-capture
TAIL=9 GPP_LIVE_LATENCY=$BUILD/bench/gpupacket-live-latency \
  run live-latency sh bench/live-latency.sh --rate 20000 --seconds 2 --csv "$OUT/live-latency.csv"
# The same with the lowest-latency settings (threads spinning, results pushed
# by the thread that processed them), where the build has afxdpsrc; first the
# machine's interruptions of a spinning thread on each CPU (what sets the p99).
if gst-inspect-1.0 afxdpsrc > /dev/null 2>&1; then
  TAIL=$(( $(nproc) + 10 )) GPP_LIVE_LATENCY=$BUILD/bench/gpupacket-live-latency \
    run live-latency-spin sh bench/live-latency.sh --rate 20000 --seconds 2 --sources afxdpsrc \
    --noise-ms 100 \
    --source-props busy-poll=true --proc-props low-latency=true --csv "$OUT/live-latency-spin.csv"
  # ... and with the frames read where the kernel wrote them.
  TAIL=7 GPP_LIVE_LATENCY=$BUILD/bench/gpupacket-live-latency \
    run live-latency-in-place sh bench/live-latency.sh --rate 20000 --seconds 2 --sources afxdpsrc \
    --source-props "busy-poll=true frames-in-place=true" --proc-props low-latency=true \
    --csv "$OUT/live-latency-in-place.csv"
fi
fi
if want suite-checks; then
run memcheck-parity $san --tool memcheck --leak-check full $BUILD/tests/gpu/test-gpu-parity "$pcaps" --quick
run racecheck-parity $san --tool racecheck $BUILD/tests/gpu/test-gpu-parity "$pcaps" --quick
run memcheck-modes $san --tool memcheck $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section switch
# The device flow table in every mode: update, sweep, eviction, rebuild and
# moves between host and device.
run memcheck-flows $san --tool memcheck $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section flows
# Frames in place (afxdpsrc frames-in-place): batches whose packets lie apart
# in a registered mapping, read there; the persistent kernel stages them one
# by one.
GPP_GPU_MODES_MODES=zerocopy,persistent GPP_GPU_MODES_CAPTURES=generated-ethernet \
  run memcheck-in-place $san --tool memcheck $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section parity
# The block-wide DPI kernels of the modes test-gpu-parity does not launch.
GPP_GPU_MODES_MODES=zerocopy,persistent GPP_GPU_MODES_PROPS="$realistic" GPP_GPU_MODES_CAPTURES=zeek__ssh.pcap \
  run racecheck-modes-realistic $san --tool racecheck $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section parity
run racecheck-modes $san --tool racecheck $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section events
# The tunnel walk's builds of the kernels that write over PCIe and stay resident.
GPP_GPU_MODES_MODES=zerocopy,persistent GPP_GPU_MODES_PROPS="decap=inner" \
  run memcheck-modes-decap $san --tool memcheck $BUILD/tests/gpu/test-gpu-modes ../shared/data/pcap-tunnels --section parity
GPP_GPU_MODES_MODES=persistent GPP_GPU_MODES_PROPS="persistent-blocks=1" \
  run memcheck-swap-persistent $san --tool memcheck $BUILD/tests/gpu/test-gpu-modes "$pcaps" --section swap
python3 examples/make-sample-pcap.py $BUILD/sample-traffic.pcap --packets 100000 > /dev/null
run mode-switch $BUILD/examples/gpupacket-mode-switch --every 20 $BUILD/sample-traffic.pcap
for m in $modes; do
  run "launch-$m" sh -c "sh examples/launch/$m.sh $BUILD/sample-traffic.pcap $LOGS/$m.csv && wc -l < $LOGS/$m.csv"
done
# Community ID from GPU records equals the spec's baselines and suricata-verify's value.
if [ -n "$modes" ]; then
  run community-id python3 tests/gst/test_community_id.py ../shared/data "$(command -v gst-launch-1.0)" \
    $modes
  run flows python3 tests/gst/test_flows.py ../shared/data/pcap "$(command -v gst-launch-1.0)" \
    $modes
  run csv-identical sh -c "for m in $gpu_modes; do cmp $LOGS/cpu.csv $LOGS/\$m.csv || exit 1; done; echo all modes identical to cpu"
else
  echo "== community-id, flows, csv-identical: skipped (no mode list: gpupacket-pcap-engines not built)"
fi
rm -f "$LOGS"/*.csv
fi
if want peers; then
  # The CPU peers need DPDK's and Hyperscan's runtime libraries; bundle them with
  # ../shared/tools/gst-runtime-bundle .gstrt librte-acl23 librte-eal23 librte-kvargs23 \
  #     librte-telemetry23 libhyperscan5 libnuma1 libfdt1 libbsd0 libmd0 libfixbuf9 softflowd
  # (libfixbuf9 for the plugin itself: ipfixsink links it; softflowd for the
  # softflowd part)
  # Every worker pinned to its own core; rte_acl cross-checked against dpdk-test-acl.
  if [ -x $BUILD/bench/gpupacket-cpu-peers ] && ! ldd $BUILD/bench/gpupacket-cpu-peers | grep -q "not found"; then
    test_acl=()
    [ -x $BUILD/bench/dpdk-test-acl ] && test_acl=(--test-acl $BUILD/bench/dpdk-test-acl)
    TAIL=60 run cpu-peers $BUILD/bench/gpupacket-cpu-peers "${test_acl[@]}" ${PEERS_ARGS:-} --csv "$OUT/peers.csv" \
      ../shared/data
  else
    echo "== cpu-peers: skipped (not built, or DPDK / Hyperscan libraries missing here)"
  fi
fi
peers=()
[ -s "$OUT/peers.csv" ] && peers=(--peers-csv "$OUT/peers.csv")
if want bench-stress; then
  TAIL=${BENCH_TAIL:-60} run bench-stress $BUILD/bench/gpupacket-bench --grid stress --gst "${peers[@]}" \
    ${BENCH_ARGS:-} --out "$OUT/stress"
fi
if want bench-realistic; then
  TAIL=${BENCH_TAIL:-60} run bench-realistic $BUILD/bench/gpupacket-bench --grid realistic "${peers[@]}" \
    ${BENCH_ARGS:-} --out "$OUT/realistic"
fi
if want bench-decap; then
  TAIL=${BENCH_TAIL:-20} run bench-decap $BUILD/bench/gpupacket-decap-bench ${DECAP_BENCH_ARGS:-} \
    --out "$OUT/decap"
fi
if want bench-umem; then
  TAIL=${BENCH_TAIL:-30} run bench-umem $BUILD/bench/gpupacket-umem-bench ${UMEM_BENCH_ARGS:-} \
    --out "$OUT/umem"
fi
if want bench-flows; then
  TAIL=${BENCH_TAIL:-30} run bench-flows $BUILD/bench/gpupacket-flow-bench ${FLOW_BENCH_ARGS:-} \
    --report "$OUT/flows.md"
fi
if want softflowd; then
  softflowd=$(command -v softflowd || echo "$PWD/.gstrt/root/usr/sbin/softflowd")
  TAIL=20 run softflowd python3 bench/flows-vs-softflowd.py --softflowd "$softflowd" \
    --packets 4194304 --flows 400000 --runs 3 ${SOFTFLOWD_ARGS:-} --report "$OUT/softflowd.md"
fi
if want pipeline; then
  tools=()
  [ -d $BUILD/peers/bin ] && tools=(--tools-dir $BUILD/peers/bin)
  TAIL=${PIPELINE_TAIL:-140} run pipeline python3 bench/pipeline-bench.py --build "$BUILD" "${tools[@]}" \
    ${PIPELINE_ARGS:-} --out "$OUT/pipeline"
fi
if want live-capture; then
  command -v ip > /dev/null || export PATH="$PWD/.gstrt/root/bin:$PATH"
  TAIL=${LIVE_CAPTURE_TAIL:-40} run live-capture python3 bench/live-capture-bench.py --build "$BUILD" \
    ${LIVE_CAPTURE_ARGS:-} --out "$OUT/live-capture"
fi
if want soak; then
  TAIL=30 run soak $BUILD/bench/gpupacket-soak --minutes "${SOAK_MINUTES:-3}" --interval 10 \
    --mode persistent --acl-rules ../shared/data/acl/classbench_fw1_10k.rules \
    --dpi-patterns ../shared/data/dpi/et_open_emerging-scan.rules --report "$OUT/soak.md"
fi
exit $status
