#!/usr/bin/env python3
"""A capture damaged part-way gives the rows before the damage, then one error.

A copy of a real capture whose record 24 claims a length past the snapshot
length is read by
  gst-launch-1.0 pcapsrc ! gpupacketproc mode=M ! packetresultenc ! filesink
many times over: each run must write the CSV header and rows 1..23, in order,
print one error naming the damage after packet 23, and exit 1.  The rows used
to be lost now and then (the error reached gst-launch while they were still
in flight, and the EOS that followed it made filesink drop its buffer).

usage: test_damaged_capture.py CAPTURE GST_LAUNCH RUNS MODE...
"""
import os
import struct
import subprocess
import sys
import tempfile

from gstlaunch import gst_launch_env

GOOD_RECORDS = 23


def damaged_copy(capture, out_path):
    """The capture's first GOOD_RECORDS records, then one whose caplen exceeds
    the snapshot length, then a few good records libpcap must never reach."""
    data = open(capture, "rb").read()
    magic = data[:4]
    order = "<" if magic in (b"\xd4\xc3\xb2\xa1", b"\x4d\x3c\xb2\xa1") else ">"
    snaplen = struct.unpack(order + "I", data[16:20])[0]
    offset, records = 24, []
    while offset + 16 <= len(data) and len(records) < GOOD_RECORDS + 4:
        caplen = struct.unpack(order + "I", data[offset + 8:offset + 12])[0]
        records.append(data[offset:offset + 16 + caplen])
        offset += 16 + caplen
    if len(records) < GOOD_RECORDS + 4:
        sys.exit(f"{capture}: too few records for this test")
    bad = bytearray(records[GOOD_RECORDS])
    bad[8:12] = struct.pack(order + "I", snaplen + 1)
    with open(out_path, "wb") as out:
        out.write(data[:24] + b"".join(records[:GOOD_RECORDS]) + bytes(bad) +
                  b"".join(records[GOOD_RECORDS + 1:]))


def main():
    capture, gst_launch, runs, modes = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
    env = gst_launch_env()
    failures = 0
    with tempfile.TemporaryDirectory() as tmp:
        damaged = os.path.join(tmp, "damaged.pcap")
        damaged_copy(capture, damaged)
        csv_path = os.path.join(tmp, "rows.csv")
        for mode in modes:
            bad_runs = 0
            for run in range(runs):
                if os.path.exists(csv_path):
                    os.unlink(csv_path)
                # Small batches: the rows cross several buffers and threads.
                proc = subprocess.run(
                    [gst_launch, "-q", "pcapsrc", "location=" + damaged, "batch-size=8", "!",
                     "gpupacketproc", "mode=" + mode, "!", "packetresultenc", "!", "filesink",
                     "location=" + csv_path], capture_output=True, text=True, env=env,
                    timeout=60)
                lines = open(csv_path).read().splitlines() if os.path.exists(csv_path) else []
                numbers = [line.split(",", 1)[0] for line in lines[1:]]
                errors = [line for line in proc.stderr.splitlines()
                          if line.startswith("ERROR: from element")]
                problems = []
                if numbers != [str(n) for n in range(1, GOOD_RECORDS + 1)]:
                    problems.append(f"rows {numbers[:3]}..{numbers[-3:]} ({len(numbers)})")
                if len(errors) != 1 or "damaged after packet 23" not in errors[0]:
                    problems.append(f"errors {errors}")
                if proc.returncode != 1:
                    problems.append(f"exit status {proc.returncode}")
                if problems:
                    bad_runs += 1
                    if bad_runs <= 3:
                        print(f"mode={mode} run {run}: {'; '.join(problems)}\n{proc.stderr}")
            print(f"mode={mode}: {runs - bad_runs}/{runs} runs gave rows 1..23 and one error")
            failures += bad_runs
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
