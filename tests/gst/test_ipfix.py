#!/usr/bin/env python3
"""ipfixsink against a real collector: nfdump's nfcapd.

  test_ipfix.py PCAP_DIR GST_LAUNCH

For several captures, starts nfcapd on 127.0.0.1 (a free UDP port, its own
directory) and runs
  pcapsrc ! gpupacketproc flows=true name=p  p.src ! queue ! fakesink
     p.flows ! tee name=t  t. ! queue ! ipfixsink host=127.0.0.1 port=P
                           t. ! queue ! packetresultenc format=jsonl ! filesink
then stops nfcapd and reads what it stored with `nfdump -o csv`: every
direction of every flow that saw packets arrives as one record with its
addresses, ports, protocol, packets and IP bytes.  Then with no collector
listening: the pipeline still ends (EOS) and warns, nothing stalls.  Then a
collector restarted mid-stream: a warning, no stall, and export resumes to
the new one (restart_check).  Exits 77
(skip) without nfcapd/nfdump or without ipfixsink (no libfixbuf).
"""
import csv
import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

from gstlaunch import gst_launch_env
from nfcapd import free_udp_port, start_collector, start_collector_on_free_port, stop_collector

CAPTURES = ["zeek__wikipedia.pcap", "zeek__ssh.pcap", "zeek__ftp_ipv6.pcap",
            "zeek__vlan-qinqinq.pcap", "tcpdump__icmpv6.pcap", "zeek__icmp_dot1q.pcap",
            "sv__dhcp-request-flood.pcap"]
PROTO_NAMES = {"TCP": 6, "UDP": 17, "ICMP": 1, "ICMP6": 58}


def pipeline(gst_launch, capture, sink, flows_jsonl):
    return [gst_launch, "-q", "pcapsrc", "location=" + capture, "!", "gpupacketproc",
            "flows=true", "name=p", "p.src", "!", "queue", "!", "fakesink",
            "p.flows", "!", "tee", "name=t", "t.", "!", "queue", "!", *sink,
            "t.", "!", "queue", "!", "packetresultenc", "format=jsonl", "!", "filesink",
            "location=" + flows_jsonl]


def expected(flows_jsonl):
    """One (src, dst, sport, dport, proto, packets, bytes) per direction with packets."""
    out = []
    with open(flows_jsonl) as fh:
        for line in fh:
            f = json.loads(line)
            icmp = f["proto"] == "icmp"
            # ipfixsink keeps ICMP's type << 8 | code in the destination port.
            icmp_port = (f["id.orig_p"] << 8) | f["id.resp_p"]
            ways = [(f["id.orig_h"], f["id.resp_h"], f["id.orig_p"], f["id.resp_p"],
                     f["orig_pkts"], f["orig_ip_bytes"]),
                    (f["id.resp_h"], f["id.orig_h"], f["id.resp_p"], f["id.orig_p"],
                     f["resp_pkts"], f["resp_ip_bytes"])]
            for src, dst, sp, dp, pkts, byts in ways:
                if pkts:
                    if icmp:
                        sp, dp = 0, icmp_port
                    out.append((src, dst, sp, dp, f["ip_proto"], pkts, byts))
    return sorted(out)


def collected(nfdump, directory):
    text = subprocess.run([nfdump, "-R", directory, "-o", "csv"], capture_output=True,
                          text=True, check=True).stdout
    out = []
    # Records, then a summary block (other columns) after an empty line.
    records = text.split("\n\n")[0]
    for row in csv.DictReader(io.StringIO(records)):
        if not row.get("sa") or not row.get("pr"):
            continue
        proto = row["pr"].strip()
        proto = PROTO_NAMES.get(proto, None) if not proto.isdigit() else int(proto)
        dp = row["dp"].strip()
        if "." in dp:  # ICMP shown as type.code
            t, c = dp.split(".")
            dp = (int(t) << 8) | int(c)
        out.append((row["sa"].strip(), row["da"].strip(), int(float(row["sp"])), int(dp),
                    proto, int(row["ipkt"]), int(row["ibyt"])))
    return sorted(out)


def restart_check(gst_launch, nfcapd, nfdump, work, env):
    """A collector that goes away mid-stream and comes back on the same
    port: the pipeline warns, does not stall, ends normally, and UDP export
    resumes (the restarted nfcapd decodes records: templates come again
    every template-refresh seconds).  Paced traffic (packettestsrc rate=)
    whose flows end every second (active timeout 1 s) keeps records flowing
    for about 6 s: the first collector takes the first 2 s, none listens
    for the next 1.5 s, the second takes the rest."""
    first, second = os.path.join(work, "first.nf"), os.path.join(work, "second.nf")
    os.mkdir(first)
    os.mkdir(second)
    collector, port = start_collector_on_free_port(first, nfcapd)
    cmd = [gst_launch, "packettestsrc", "rate=20000", "batch-size=100", "num-buffers=1200",
           "flows=50", "!", "gpupacketproc", "flows=true", "flow-active-timeout=1",
           "flow-idle-timeout=1", "name=p", "p.src", "!", "queue", "!", "fakesink", "p.flows",
           "!", "queue", "!", "ipfixsink", "host=127.0.0.1", "port=%d" % port,
           "template-refresh=1"]
    start = time.monotonic()
    log = os.path.join(work, "restart.log")
    with open(log, "w") as fh:
        run = subprocess.Popen(cmd, stdout=fh, stderr=subprocess.STDOUT, text=True, env=env)
        # The 2 s count from PLAYING: start-up is slow on a loaded machine.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and run.poll() is None:
            with open(log) as rd:
                if "PLAYING" in rd.read():
                    break
            time.sleep(0.05)
        time.sleep(2)
        stop_collector(collector)
        time.sleep(1.5)
        collector = start_collector(second, port, nfcapd)
        try:
            run.wait(timeout=60)
        except subprocess.TimeoutExpired:
            run.kill()
            run.wait()
    with open(log) as rd:
        out = rd.read()
    took = time.monotonic() - start
    stop_collector(collector)  # once it has read every datagram
    before, after = len(collected(nfdump, first)), len(collected(nfdump, second))
    warned = "does not answer" in out
    ok = run.returncode == 0 and warned and before > 0 and after > 0 and took < 30
    print("collector restarted mid-stream: exit %d after %.1f s, %s, %d records before the "
          "restart, %d after: %s" % (run.returncode, took, "warned" if warned else "NO WARNING",
                                    before, after, "PASS" if ok else "FAIL"))
    if not ok:
        print(out[-3000:])
    return ok


def main():
    if len(sys.argv) != 3:
        print(__doc__)
        return 2
    pcaps, gst_launch = sys.argv[1], sys.argv[2]
    nfcapd, nfdump = shutil.which("nfcapd"), shutil.which("nfdump")
    if not nfcapd or not nfdump:
        print("SKIP: nfcapd/nfdump (Debian nfdump) not installed")
        return 77
    env = gst_launch_env()
    inspect = subprocess.run([gst_launch.replace("gst-launch-1.0", "gst-inspect-1.0"),
                              "ipfixsink"], capture_output=True, text=True, env=env)
    if inspect.returncode != 0:
        print("SKIP: no ipfixsink in this build (libfixbuf not found)")
        return 77
    failures = 0
    with tempfile.TemporaryDirectory() as work:
        for name in CAPTURES:
            store = os.path.join(work, name + ".nf")
            os.mkdir(store)
            collector, port = start_collector_on_free_port(store, nfcapd)
            flows_jsonl = os.path.join(work, "flows.jsonl")
            run = subprocess.run(pipeline(gst_launch, os.path.join(pcaps, name),
                                          ["ipfixsink", "host=127.0.0.1", "port=%d" % port],
                                          flows_jsonl),
                                 capture_output=True, text=True, env=env, timeout=120)
            stop_collector(collector)  # once it has read every datagram
            if run.returncode != 0:
                print("FAIL %s: the pipeline failed (%d): %s" % (name, run.returncode,
                                                                   run.stderr[-2000:]))
                failures += 1
                continue
            want, got = expected(flows_jsonl), collected(nfdump, store)
            ok = want == got
            if not ok:
                missing = [r for r in want if r not in got][:5]
                extra = [r for r in got if r not in want][:5]
                print("FAIL %s: %d records expected, nfcapd stored %d; missing %s; extra %s"
                      % (name, len(want), len(got), missing, extra))
                failures += 1
            print("%s: %d flow directions exported, %d stored by nfcapd: %s"
                  % (name, len(want), len(got), "PASS" if ok else "FAIL"))
        # No collector at all: a warning, and the stream still ends.
        port = free_udp_port()
        start = time.monotonic()
        run = subprocess.run(pipeline(gst_launch, os.path.join(pcaps, "zeek__ssh.pcap"),
                                      ["ipfixsink", "host=127.0.0.1", "port=%d" % port],
                                      os.path.join(work, "flows.jsonl")),
                             capture_output=True, text=True, env=env, timeout=120)
        took = time.monotonic() - start
        ok = run.returncode == 0 and took < 60
        print("no collector on port %d: exit %d after %.1f s, %s: %s"
              % (port, run.returncode, took,
                 "warned" if "does not answer" in run.stdout + run.stderr else "no warning",
                 "PASS" if ok else "FAIL"))
        failures += not ok
        failures += not restart_check(gst_launch, nfcapd, nfdump, work, env)
    print("FAILED" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
