#!/usr/bin/env python3
"""pcapsink writes exactly the packets of the chosen ACL verdict, byte for byte.

For several captures (Ethernet, Linux SLL, BSD loopback, pcapng), runs
  pcapsrc ! gpupacketproc acl-rules=R default-action=drop ! pcapsink verdict=V
for V in all / allow / drop, and reads every output back with tshark: the
frames (bytes, lengths, timestamps) must be those of the input whose
acl_action (from packetresultenc's CSV of the same run) is V, in order.
"""
import csv
import os
import subprocess
import sys
import tempfile

from gstlaunch import gst_launch_env

CAPTURES = ["zeek__wikipedia.pcap", "tcpdump__mptcp-v1.pcap", "zeek__dns-svcb.pcap",
            "zeek__pcapng-multi-interface.pcapng", "zeek__ipv6-fragmented-dns.pcap"]

# Drop web traffic and one /16, allow DNS explicitly, everything else falls to
# default-action=drop except IPv6, which a catch-all rule allows.
RULES = """# test rules
@0.0.0.0/0 0.0.0.0/0 0 : 65535 80 : 80 0x06/0xFF drop
@0.0.0.0/0 0.0.0.0/0 80 : 80 0 : 65535 0x06/0xFF drop
@141.142.0.0/16 0.0.0.0/0 0 : 65535 0 : 65535 0/0 drop
@0.0.0.0/0 0.0.0.0/0 0 : 65535 53 : 53 0x11/0xFF allow
@0.0.0.0/0 0.0.0.0/0 53 : 53 0 : 65535 0x11/0xFF allow
@::/0 ::/0 0 : 65535 0 : 65535 0x00/0x00 allow
@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x06/0xFF allow
"""


def frames(path, numbers=None):
    """(epoch time, length, captured bytes as hex) of each frame, in order."""
    out = subprocess.run(["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.number",
                          "-e", "frame.time_epoch", "-e", "frame.len"],
                         check=True, capture_output=True, text=True).stdout.splitlines()
    hexdump = subprocess.run(["tshark", "-n", "-r", path, "-x"], check=True,
                             capture_output=True, text=True).stdout.split("\n\n")
    hexdump = [h for h in hexdump if h.strip()]
    rows = []
    for line, dump in zip(out, hexdump):
        number, epoch, length = line.split("\t")
        if numbers is None or int(number) in numbers:
            rows.append((epoch, length, dump.strip()))
    return rows


def full_disk(data, gst_launch, env):
    """A disk that fills (/dev/full): one error, with its reason, whether the
    writes fail as packets are written (a large capture) or only at the final
    flush (a small one, which stays in the write buffer until EOS)."""
    if not os.path.exists("/dev/full"):
        print("full disk: skipped, no /dev/full")
        return 0
    failures = 0
    for name in ("zeek__wikipedia.pcap", "zeek__dns-svcb.pcap"):
        proc = subprocess.run([gst_launch, "-q", "pcapsrc", "location=" + os.path.join(data, name),
                               "!", "gpupacketproc", "!", "pcapsink", "location=/dev/full"],
                              capture_output=True, text=True, env=env, timeout=60)
        errors = proc.stderr.count("Could not write to the capture file")
        if proc.returncode == 0 or errors != 1 or "No space left on device" not in proc.stderr:
            print(f"full disk, {name}: exit {proc.returncode}, {errors} write errors (want 1 "
                  f"naming ENOSPC):\n{proc.stderr}")
            failures += 1
        else:
            print(f"full disk, {name}: one error, ENOSPC")
    return failures


def main():
    data, gst_launch = sys.argv[1], sys.argv[2]
    env = gst_launch_env()
    failures = 0
    totals = {"allow": 0, "drop": 0}
    with tempfile.TemporaryDirectory() as tmp:
        rules = os.path.join(tmp, "test.rules")
        with open(rules, "w") as fh:
            fh.write(RULES)
        for name in CAPTURES:
            capture = os.path.join(data, name)
            csv_path = os.path.join(tmp, name + ".csv")
            outs = {v: os.path.join(tmp, f"{name}.{v}.pcap") for v in ("all", "allow", "drop")}
            cmd = [gst_launch, "-q", "pcapsrc", f"location={capture}", "batch-size=7", "!",
                   "gpupacketproc", f"acl-rules={rules}", "default-action=drop", "!", "tee",
                   "name=t"]
            for v, out in outs.items():
                cmd += ["t.", "!", "queue", "!", "pcapsink", f"verdict={v}", f"location={out}"]
            cmd += ["t.", "!", "queue", "!", "packetresultenc", "!", "filesink",
                    f"location={csv_path}"]
            proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
            if proc.returncode != 0:
                print(f"{name}: pipeline failed:\n{proc.stdout}{proc.stderr}")
                failures += 1
                continue
            with open(csv_path, newline="") as fh:
                rows = list(csv.DictReader(fh))
            by_verdict = {"all": {int(r["packet"]) for r in rows},
                          "allow": {int(r["packet"]) for r in rows if r["acl_action"] == "allow"},
                          "drop": {int(r["packet"]) for r in rows if r["acl_action"] == "drop"}}
            totals["allow"] += len(by_verdict["allow"])
            totals["drop"] += len(by_verdict["drop"])
            for v, out in outs.items():
                expected = frames(capture, by_verdict[v])
                got = frames(out)
                if got != expected:
                    failures += 1
                    print(f"{name} verdict={v}: wrote {len(got)} frames, expected "
                          f"{len(expected)}; first difference at frame "
                          f"{next((i for i, (a, b) in enumerate(zip(got, expected)) if a != b), min(len(got), len(expected))) + 1}")
                else:
                    print(f"{name} verdict={v}: {len(got)} frames identical")
    if not totals["allow"] or not totals["drop"]:
        print(f"the rules must both allow and drop packets: {totals}")
        failures += 1
    failures += full_disk(data, gst_launch, env)
    print("FAIL" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
