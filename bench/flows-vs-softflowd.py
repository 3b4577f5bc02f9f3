#!/usr/bin/env python3
"""Flow metering on the host: gpupacketproc mode=cpu on every core against
softflowd (Debian's NetFlow/IPFIX probe), on the same capture, side by side.

  flows-vs-softflowd.py [--packets N] [--flows F] [--runs R] [--threads T] [--batch B]
                        [--gst-launch PATH] [--softflowd PATH] [--report FILE.md]
                        [--expect-same-flows]

The capture: packettestsrc's `mix` profile (IPv4/IPv6, TCP/UDP/ICMP, VLAN
tags, fragments), F distinct 5-tuples, N packets (written once, read from the
page cache by every run).  Each tool reads it as its users run it on a file
and exports IPFIX over UDP to a local socket that drains it:
- softflowd -r FILE -v 10 -b -6 (bidirectional, IPv6 too; one thread: that
  is how softflowd works, one process per interface);
- gst-launch-1.0 pcapsrc ! gpupacketproc mode=cpu cpu-threads=T flows=true
  (T=0: one thread per core for the packet core and the host flow table),
  per-packet records to fakesink, flow records to ipfixsink.
Each is run R times, alternating; the medians are compared.  Seconds are
the wall time of the whole process (start-up included, for both).  Flows:
softflowd's "Flows exported" line; for gpupacket, the records of a run with
the flows written as CSV instead (not timed).  Exit 77 when softflowd or the
plugin is missing.
"""
import argparse
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time


class Drain:
    """A UDP socket on 127.0.0.1 that reads and counts what arrives, as a
    collector would (a closed port makes softflowd retry)."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.datagrams = 0
        self.stopping = False
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stopping:
            try:
                self.sock.recv(65536)
                self.datagrams += 1
            except socket.timeout:
                pass

    def stop(self):
        self.stopping = True
        self.thread.join()
        self.sock.close()


# gst-launch-1.0 with a plugin built with sanitizers needs their runtime
# first (the test suite's GPP_SANITIZER_PRELOAD); softflowd does not.
GST_ENV = dict(os.environ)
if GST_ENV.get("GPP_SANITIZER_PRELOAD"):
    GST_ENV["LD_PRELOAD"] = GST_ENV["GPP_SANITIZER_PRELOAD"]


def timed(cmd, env=None):
    start = time.monotonic()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=900)
    return time.monotonic() - start, proc


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--packets", type=int, default=2 * 1024 * 1024)
    ap.add_argument("--flows", type=int, default=200000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=0, help="gpupacketproc cpu-threads (0: every core)")
    # mode=cpu gives each thread at least 512 packets of a batch (gpu/cpu_engine.h):
    # 8192-packet batches keep 16 threads parsing.
    ap.add_argument("--batch", type=int, default=8192, help="packets per batch (pcapsrc batch-size)")
    ap.add_argument("--gst-launch", default=shutil.which("gst-launch-1.0") or "gst-launch-1.0")
    ap.add_argument("--softflowd", default=shutil.which("softflowd") or "/usr/sbin/softflowd")
    ap.add_argument("--report")
    ap.add_argument("--expect-same-flows", action="store_true",
                    help="exit 1 unless both count the same number of flows (the smoke test)")
    a = ap.parse_args()
    if not os.access(a.softflowd, os.X_OK):
        print("SKIP: softflowd not found (Debian: softflowd)")
        return 77
    batch = a.batch
    work = tempfile.mkdtemp(prefix="gpp-flows-vs-softflowd-")
    try:
        capture = os.path.join(work, "capture.pcap")
        batches = (a.packets + batch - 1) // batch
        # packettestsrc replays a ring of at most ~1.4M distinct packets
        # (later copies with later timestamps: the same flows go on).
        ring = min(batches, max(1, 1000000 // batch))
        gen = subprocess.run([a.gst_launch, "-q", "packettestsrc", "profile=mix",
                              "flows=%d" % a.flows, "batch-size=%d" % batch,
                              "ring-batches=%d" % ring, "num-buffers=%d" % batches, "!",
                              "gpupacketproc", "mode=cpu", "cpu-threads=0", "!", "pcapsink",
                              "location=" + capture], capture_output=True, text=True, env=GST_ENV)
        if gen.returncode != 0:
            if "no element" in gen.stderr:
                print("SKIP: the gpupacket plugin is not on GST_PLUGIN_PATH_1_0")
                return 77
            sys.stderr.write(gen.stderr)
            return 1
        packets = batches * batch
        size = os.path.getsize(capture)
        with open(capture, "rb") as fh:  # into the page cache before any run
            while fh.read(1 << 24):
                pass

        def softflowd():
            drain = Drain()
            # Debian's softflowd 1.1.0 never reads a packet when its control
            # socket path is longer than 12 characters (tests/gst/test_softflowd.py).
            ctl = "/tmp/s%05d" % drain.port
            try:
                secs, proc = timed([a.softflowd, "-d", "-r", capture, "-n",
                                    "127.0.0.1:%d" % drain.port, "-v", "10", "-b", "-6",
                                    "-m", "4000000", "-p", os.path.join(work, "sf.pid"),
                                    "-c", ctl])
            finally:
                time.sleep(0.3)
                drain.stop()
                if os.path.exists(ctl):
                    os.unlink(ctl)
            out = proc.stdout + proc.stderr
            if proc.returncode != 0:
                raise RuntimeError("softflowd failed:\n" + out[-2000:])
            seen = re.search(r"Packets processed: (\d+)", out)
            flows = re.search(r"Flows exported: (\d+)", out)
            if not seen or int(seen.group(1)) != packets:
                raise RuntimeError("softflowd processed %s of %d packets" %
                                   (seen.group(1) if seen else "?", packets))
            return secs, int(flows.group(1)) if flows else 0

        def gpupacket(flows_sink):
            return [a.gst_launch, "-q", "pcapsrc", "location=" + capture, "batch-size=%d" % batch,
                    "!", "gpupacketproc", "mode=cpu", "cpu-threads=%d" % a.threads, "flows=true",
                    "name=p", "p.src", "!", "queue", "!", "fakesink", "p.flows", "!", "queue",
                    "!"] + flows_sink

        def gpupacket_ipfix():
            drain = Drain()
            try:
                secs, proc = timed(gpupacket(["ipfixsink", "host=127.0.0.1",
                                              "port=%d" % drain.port]), env=GST_ENV)
            finally:
                time.sleep(0.3)
                drain.stop()
            if proc.returncode != 0:
                raise RuntimeError("gst-launch failed:\n" + (proc.stdout + proc.stderr)[-2000:])
            return secs

        csv_path = os.path.join(work, "flows.csv")
        proc = subprocess.run(gpupacket(["packetresultenc", "!", "filesink",
                                         "location=" + csv_path]), capture_output=True, text=True,
                              env=GST_ENV)
        if proc.returncode != 0:
            sys.stderr.write(proc.stdout + proc.stderr)
            return 1
        with open(csv_path) as fh:
            our_flows = sum(1 for _ in fh) - 1  # a header line

        theirs, ours, their_flows = [], [], 0
        for _ in range(a.runs):
            secs, their_flows = softflowd()
            theirs.append(secs)
            ours.append(gpupacket_ipfix())
        t_sf, t_gp = statistics.median(theirs), statistics.median(ours)
        threads = a.threads or os.cpu_count()
        # Threads a batch actually uses: the packet core at least 512 packets
        # a thread (gpu/cpu_engine.h), the host flow table 256.
        core_threads = min(threads, max(1, batch // 512))
        table_threads = min(threads, batch // 256 + 1)
        lines = [
            "# Flow metering on the host: gpupacketproc mode=cpu vs softflowd",
            "",
            "`bench/flows-vs-softflowd.py --packets %d --flows %d --runs %d --threads %d "
            "--batch %d` on %d host threads: a %d-packet capture (%.0f MB, packettestsrc `mix`, "
            "%d 5-tuples), each tool reading it and exporting IPFIX to a local UDP socket; "
            "median of %d alternating runs, wall time of the whole process." %
            (a.packets, a.flows, a.runs, a.threads, batch, os.cpu_count(), packets, size / 1e6,
             a.flows, a.runs),
            "",
            "| tool | threads | seconds | Mpps | flows | flows/s | vs softflowd |",
            "|---|---|---|---|---|---|---|",
            "| softflowd 1.1.0 (`-r`, IPFIX) | 1 | %.2f | %.2f | %d | %.0f | 1.0x |" %
            (t_sf, packets / t_sf / 1e6, their_flows, their_flows / t_sf),
            "| gpupacketproc mode=cpu flows=true (IPFIX) | %d | %.2f | %.2f | %d | %.0f | %.1fx |" %
            (threads, t_gp, packets / t_gp / 1e6, our_flows, our_flows / t_gp, t_sf / t_gp),
            "",
            "gpupacketproc's %d-packet batches ran the packet core on %d threads and the flow "
            "table on %d." % (batch, core_threads, table_threads),
            "",
            "Runs (s): softflowd %s; gpupacketproc %s." %
            (", ".join("%.2f" % t for t in theirs), ", ".join("%.2f" % t for t in ours)),
            "",
        ]
        text = "\n".join(lines)
        print(text)
        if a.report:
            with open(a.report, "w") as fh:
                fh.write(text)
        if a.expect_same_flows and our_flows != their_flows:
            print("FAIL: gpupacket counted %d flows, softflowd %d" % (our_flows, their_flows))
            return 1
        return 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
