#!/usr/bin/env python3
"""packetresultenc threads=N writes the same bytes as threads=1, through the
element: packet records (CSV and JSON Lines) of generated traffic and of
captures, flow records, buffers of a few records and of thousands; and one
output buffer per input buffer (large writes downstream).

usage: test_resultenc_threads.py SHARED_DATA_DIR GST_LAUNCH"""
import os
import re
import subprocess
import sys
import tempfile

from gstlaunch import gst_launch_env

DATA, GST_LAUNCH = sys.argv[1], sys.argv[2]
ENV = gst_launch_env()
failures = []


def launch(pipeline, out_dir, name):
    """Runs `pipeline` (filesink locations given as {NAME}); the files' bytes."""
    paths = {}

    def location(match):
        paths[match.group(1)] = os.path.join(out_dir, match.group(1))
        return paths[match.group(1)]

    cmd = [GST_LAUNCH, "-q"] + re.sub(r"\{(\w+)\}", location, pipeline).split()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError(f"{name}: {' '.join(cmd)}: exit {proc.returncode}: {proc.stderr}")
    return {k: open(p, "rb").read() for k, p in paths.items()}


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
        failures.append(name)


def compare(name, pipeline):
    """`pipeline` holds THREADS; its files at 4 and 3 threads against 1."""
    with tempfile.TemporaryDirectory() as tmp:
        outputs = {n: launch(pipeline.replace("THREADS", str(n)), tmp, f"{name} threads={n}")
                   for n in (1, 4, 3)}
    for n in (4, 3):
        for key, data in outputs[1].items():
            other = outputs[n][key]
            same = other == data
            where = "" if same else next(
                (f"first difference at byte {i}" for i, (a, b) in enumerate(zip(data, other))
                 if a != b), f"lengths {len(data)} and {len(other)}")
            check(f"{name} {key} threads={n}", same and len(data) > 0,
                  f"{len(data)} bytes{', ' + where if where else ''}")


# A capture (packettestsrc stamps packets with the clock: not repeatable).
scratch = tempfile.TemporaryDirectory()
sample = os.path.join(scratch.name, "sample.pcap")
subprocess.run([sys.executable, os.path.join(os.path.dirname(__file__), "..", "..", "examples",
                                             "make-sample-pcap.py"),
                "--packets", "20000", "--flows", "2000", sample], check=True,
               stdout=subprocess.DEVNULL)
for fmt in ("csv", "jsonl"):
    for batch in (4096, 7):
        compare(f"sample {fmt} batch-size={batch}",
                f"pcapsrc location={sample} batch-size={batch} ! gpupacketproc cpu-threads=0 ! "
                f"packetresultenc format={fmt} threads=THREADS ! filesink location={{out}}")

# Flow records: idle ones along the way, the rest at the end of the stream.
compare("sample flows",
        f"pcapsrc location={sample} batch-size=4096 ! gpupacketproc flows=true "
        "flow-idle-timeout=1 name=p "
        "p.src ! queue ! packetresultenc threads=THREADS ! filesink location={packets} "
        "p.flows ! queue ! packetresultenc format=jsonl threads=THREADS ! "
        "filesink location={flows}")

pcap = os.path.join(DATA, "pcap")
for capture in ("zeek__wikipedia.pcap", "tcpdump__icmpv6.pcap", "sv__ipv4frags.pcap"):
    compare(f"{capture} jsonl",
            f"pcapsrc location={os.path.join(pcap, capture)} batch-size=1000 ! "
            "gpupacketproc verify-l4-checksum=true ! packetresultenc format=jsonl "
            "threads=THREADS ! filesink location={out}")

# One text buffer per batch, whatever the threads: fakesink counts them.
proc = subprocess.run(
    [GST_LAUNCH, "-v", "packettestsrc", "batch-size=4096", "num-buffers=3", "!",
     "gpupacketproc", "!", "packetresultenc", "threads=4", "!", "fakesink", "silent=false"],
    capture_output=True, text=True, env=ENV, timeout=300)
sizes = [int(s) for s in re.findall(r"chain +\*+ \(fakesink0:sink\) \((\d+) bytes", proc.stdout)]
check("one output buffer per batch", proc.returncode == 0 and len(sizes) == 3
      and min(sizes) > 4096 * 100, f"buffers of {sizes} bytes")

if failures:
    sys.exit(f"{len(failures)} failed: {', '.join(failures)}")
