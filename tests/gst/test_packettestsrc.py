#!/usr/bin/env python3
"""packettestsrc: profiles, flows, seeds, numbering, ACL/DPI-driven traffic,
pacing and bad input, checked through gpupacketproc's parse of its output."""
import collections
import csv
import io
import os
import selectors
import subprocess
import sys
import time

from gstlaunch import gst_launch_env

DATA, GST_LAUNCH = sys.argv[1], sys.argv[2]
ENV = gst_launch_env()
failures = []


def run(src_props, proc_props="", expect_ok=True):
    cmd = ([GST_LAUNCH, "-q", "packettestsrc"] + src_props.split() +
           ["!", "gpupacketproc", "cpu-threads=0", "verify-l4-checksum=true"] + proc_props.split() +
           ["!", "packetresultenc", "!", "fdsink"])
    proc = subprocess.run(cmd, capture_output=True, text=True, env=ENV)
    if expect_ok and proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {proc.stderr}")
    return proc if not expect_ok else list(csv.DictReader(io.StringIO(proc.stdout)))


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
        failures.append(name)


def without_time(rows):
    return [{k: v for k, v in r.items() if k != "timestamp"} for r in rows]


# Profiles: sizes, and every packet parses cleanly with good checksums.
for profile, sizes in (("64", {"64"}), ("1500", {"1500"})):
    rows = run(f"profile={profile} num-buffers=4 batch-size=256")
    check(f"profile={profile} sizes", {r["wirelen"] for r in rows} == sizes)
    check(f"profile={profile} clean", all(r["status"] == "ok" and r["ipv4_checksum"] == "good"
                                          and r["l4_checksum"] == "good" for r in rows))
rows = run("profile=imix num-buffers=12 batch-size=1000")
share = collections.Counter(r["wirelen"] for r in rows)
n = len(rows)
check("imix 7:4:1", abs(share["64"] / n - 7 / 12) < 0.03 and abs(share["576"] / n - 4 / 12) < 0.03
      and abs(share["1500"] / n - 1 / 12) < 0.03, str(dict(share)))
rows = run("profile=mix num-buffers=8 batch-size=1000")
check("mix variety", {"4", "6"} <= {r["ip_version"] for r in rows} and
      {"6", "17", "1", "58"} <= {r["l4_proto"] for r in rows} and
      any(r["vlan"] for r in rows) and any(r["frag_offset"] not in ("", "0") for r in rows))
check("mix clean", all(r["status"] == "ok" for r in rows) and
      all(r["l4_checksum"] in ("good", "") for r in rows))

# Flows, seeds, numbering across the replayed ring.
rows = run("profile=64 flows=10 num-buffers=10 batch-size=100")
tuples = {(r["src"], r["dst"], r["sport"], r["dport"], r["l4_proto"]) for r in rows}
check("flows=10", len(tuples) == 10, str(len(tuples)))
a = without_time(run("seed=7 num-buffers=3 batch-size=50"))
b = without_time(run("seed=7 num-buffers=3 batch-size=50"))
c = without_time(run("seed=8 num-buffers=3 batch-size=50"))
check("same seed, same packets", a == b)
check("other seed, other packets", a != c)
rows = run("ring-batches=2 num-buffers=5 batch-size=10")
check("numbers continue over the ring", [int(r["packet"]) for r in rows] == list(range(1, 51)))

# Headers from ACL rules, payloads with DPI patterns.
acl = os.path.join(DATA, "acl", "classbench_acl1_1k.rules")
rows = run(f"profile=64 acl-rules={acl} acl-rate=1 num-buffers=4 batch-size=500",
           f"acl-rules={acl}")
check("acl-rate=1: every header matches a rule", all(r["acl_rule"] != "" for r in rows))
rule_tuples = {(r["src"], r["dst"]) for r in rows}
rows = run(f"profile=64 acl-rules={acl} acl-rate=0 num-buffers=4 batch-size=500",
           f"acl-rules={acl}")
check("acl-rate=0: headers from the flows, not the rules",
      not rule_tuples & {(r["src"], r["dst"]) for r in rows})
dpi = os.path.join(DATA, "dpi", "et_open_emerging-shellcode.rules")
rows = run(f"profile=1500 dpi-patterns={dpi} dpi-rate=1 num-buffers=2 batch-size=500",
           f"dpi-patterns={dpi}")
hit = sum(int(r["dpi_hits"]) > 0 for r in rows)
check("dpi-rate=1: payloads carry patterns", hit == len(rows), f"{hit}/{len(rows)}")

# Pacing: 2000 packets at 10,000 packets/s take about 0.2 s.
start = time.monotonic()
run("rate=10000 num-buffers=20 batch-size=100")
elapsed = time.monotonic() - start
check("rate paces the batches", elapsed >= 0.17, f"{elapsed:.2f} s")

# A slow rate never holds up a stop: the pacing wait ends on unlock.  The
# signal goes once gst-launch-1.0 is PLAYING (its SIGINT handler is in place
# by then: before it, the signal would just end the process) and the source
# is well into its wait; the stop must be gst-launch-1.0's own, exit 0.
proc = subprocess.Popen([GST_LAUNCH, "packettestsrc", "rate=1", "batch-size=64", "!",
                         "fakesink"], env=ENV, stdout=subprocess.PIPE,
                        stderr=subprocess.STDOUT, text=True)
playing_by = time.monotonic() + 30
with selectors.DefaultSelector() as waiting:
    waiting.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < playing_by and waiting.select(playing_by - time.monotonic()):
        line = proc.stdout.readline()
        if not line or "PLAYING" in line:
            break
time.sleep(1.5)
proc.send_signal(2)  # SIGINT: gst-launch-1.0 stops the pipeline (to NULL)
try:
    output, _ = proc.communicate(timeout=10)
    check("stop during a rate wait", proc.returncode == 0 and "handling interrupt" in output,
          f"exit {proc.returncode}: {output[-300:]!r}")
except subprocess.TimeoutExpired:
    proc.kill()
    proc.communicate()
    check("stop during a rate wait", False, "still waiting 10 s after SIGINT")

# Bad input: a clear error naming the file.
proc = run("acl-rules=/nonexistent.rules acl-rate=0.5 num-buffers=1", expect_ok=False)
check("missing rule file is an error", proc.returncode != 0 and "/nonexistent.rules" in proc.stderr)

print("FAIL: " + ", ".join(failures) if failures else "PASS")
sys.exit(1 if failures else 0)
