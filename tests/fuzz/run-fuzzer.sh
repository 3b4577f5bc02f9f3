#!/bin/sh
# Runs one fuzz harness for a bounded time over a corpus seeded from
# ../shared/data, keeping what it finds in WORK/corpus for the next run.
#   run-fuzzer.sh FUZZER SEED_TOOL KIND SHARED_DATA SECONDS WORK
# GPP_FUZZ_SECONDS, where set, overrides SECONDS (a longer run).
# KIND: packet-core, acl-loader or dpi-loader.  A crash, a sanitizer report,
# a harness check that fails, a leak or a 20-second input fails the test; the
# input that did it is left in WORK/artifacts (rerun: FUZZER FILE).
set -eu
fuzzer=$1 seeds=$2 kind=$3 data=$4 seconds=${GPP_FUZZ_SECONDS:-$5} work=$6
mkdir -p "$work/seeds" "$work/corpus" "$work/artifacts"
case $kind in
  packet-core)
    "$seeds" packets "$work/seeds" "$data"/pcap/*.pcap* "$data"/pcap-tunnels/*.pcap*
    "$seeds" tunnels "$work/seeds" ;;
  acl-loader)
    "$seeds" lines "$work/seeds" "" 12 "$data"/acl/*.rules "$data"/acl/dpdk_*_rule ;;
  dpi-loader)
    # Both selections (the first byte), over the two category files and a
    # few files of the 2024 rule folder.
    set -- "$data"/dpi/*.rules "$data"/dpi/et_open_2024/emerging-web_client.rules \
      "$data"/dpi/et_open_2024/emerging-exploit.rules
    "$seeds" lines "$work/seeds" "$(printf '\001')" 6 "$@"
    "$seeds" lines "$work/seeds" "$(printf '\002')" 6 "$@" ;;
  *) echo "unknown kind $kind" >&2; exit 2 ;;
esac
exec "$fuzzer" -max_total_time="$seconds" -max_len=4096 -timeout=20 -rss_limit_mb=3072 \
  -print_final_stats=1 -artifact_prefix="$work/artifacts/" "$work/corpus" "$work/seeds"
