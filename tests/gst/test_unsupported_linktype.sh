#!/bin/sh
# gst-launch-1.0 with a capture of a link type gpupacketproc does not parse
# (LINKTYPE_USER0): every run must end, with a failure exit status (255: the
# state change failed) and the error that names the element and the link type.  About one run in seven used to hang:
# the error came from the first buffer, before gst-launch's main loop ran.
#   test_unsupported_linktype.sh GST_LAUNCH RUNS
set -u
gst_launch=$1 runs=$2
[ -n "${GPP_SANITIZER_PRELOAD:-}" ] && export LD_PRELOAD="$GPP_SANITIZER_PRELOAD"
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
# A pcap header (LINKTYPE_USER0 = 147) and one 4-byte packet.
printf '\324\303\262\241\002\000\004\000\000\000\000\000\000\000\000\000\377\377\000\000\223\000\000\000\001\000\000\000\000\000\000\000\004\000\000\000\004\000\000\000\336\255\276\357' > "$dir/user0.pcap"
failed=0
i=0
while [ $i -lt "$runs" ]; do
  i=$((i + 1))
  timeout 30 "$gst_launch" -q pcapsrc location="$dir/user0.pcap" ! gpupacketproc ! \
    packetresultenc ! fakesink > "$dir/out" 2>&1
  rc=$?
  if [ $rc -eq 0 ] || [ $rc -eq 124 ] || [ $rc -eq 137 ] ||
     ! grep -q "does not accept link type 147" "$dir/out"; then
    echo "run $i: exit status $rc (124: it hung)"; cat "$dir/out"; failed=$((failed + 1))
  fi
done
echo "$((runs - failed))/$runs runs ended, failing, with the link-type error"
[ $failed -eq 0 ]
