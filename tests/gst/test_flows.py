#!/usr/bin/env python3
"""gpupacketproc flows=true end to end: its flow records against flows
recomputed here, independently, from the packet records of the same run.

  test_flows.py PCAP_DIR GST_LAUNCH [MODE...]

For several captures and each MODE (default cpu), runs
  pcapsrc ! gpupacketproc mode=MODE flows=true name=p
     p.src ! queue ! packetresultenc format=jsonl ! filesink (packets)
     p.flows ! queue ! packetresultenc format=jsonl ! filesink (flows)
and checks, with timeouts long enough that every flow ends at EOS:
- every packet with an IP header is in exactly one flow: per flow (IP version,
  endpoints in either order, protocol, outer VLAN; ICMP type and code on the
  responder's side) the packets and IP bytes each way, the initiator (the
  source of the flow's first packet), first packet, start and end times;
- every flow ends "forced" (EOS) or, for TCP, "end" (FIN each way or RST);
  its Community ID is one of its packets'.
Then with flow-idle-timeout=1 on a capture whose packets are seconds apart:
some flows end "idle", and the packet total is unchanged.  With
packet-records=false: no packet record on the src pad, and the same flow
records as with them.  And with flows=false and the flows pad linked: the
run still ends.
A GPU mode that is not available here exits 77 (skip) when all are.
"""
import json
import os
import subprocess
import sys
import tempfile

from gstlaunch import gst_launch_env, mode_test_args

CAPTURES = ["zeek__wikipedia.pcap", "zeek__ssh.pcap", "zeek__ftp_ipv6.pcap",
            "zeek__vlan-qinqinq.pcap", "zeek__ipv6-fragmented-dns.pcap",
            "sv__community-id-ipv4.pcap", "tcpdump__icmpv6.pcap", "zeek__icmp_dot1q.pcap"]


def run(gst_launch, capture, mode, workdir, env, extra=()):
    packets = os.path.join(workdir, "packets.jsonl")
    flows = os.path.join(workdir, "flows.jsonl")
    cmd = [gst_launch, "-q", "pcapsrc", "location=" + capture, "!", "gpupacketproc",
           "mode=" + mode, "flows=true", *extra, "name=p",
           "p.src", "!", "queue", "!", "packetresultenc", "format=jsonl", "!", "filesink",
           "location=" + packets,
           "p.flows", "!", "queue", "!", "packetresultenc", "format=jsonl", "!", "filesink",
           "location=" + flows]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        if mode != "cpu" and "needs a CUDA GPU" in text:
            return None
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), proc.returncode, text))
    with open(packets) as fh:
        p = [json.loads(line) for line in fh]
    with open(flows) as fh:
        f = [json.loads(line) for line in fh]
    return p, f


def canonical(flows):
    return sorted(json.dumps(f, sort_keys=True) for f in flows)


def seconds_ns(text):
    whole, _, frac = str(text).partition(".")
    return int(whole) * 10**9 + int((frac + "000000000")[:9])


def expected_flows(packets):
    """Flows by our own keying of the packet records."""
    flows = {}
    for r in packets:
        if r["src"] is None:
            continue
        proto = r["l4_proto"]
        if proto in (1, 58):
            sport, dport = 0, ((r["icmp_type"] or 0) << 8) | (r["icmp_code"] or 0)
            if r["icmp_type"] is None:
                dport = 0
        else:
            sport, dport = r["sport"] or 0, r["dport"] or 0
        vlan = int(str(r["vlan"][0])) & 0xfff if r["vlan"] else 0
        a, b = (r["src"], sport), (r["dst"], dport)
        key = (r["ip_version"], frozenset([a, b]) if a != b else frozenset([a]), proto, vlan,
               tuple(sorted([a, b])))
        f = flows.get(key)
        if f is None:
            f = flows[key] = {"orig": a, "resp": b, "first": r["packet"], "pkts": [0, 0],
                              "bytes": [0, 0], "start": None, "end": None, "ids": set()}
        way = 0 if (a == f["orig"]) else 1
        f["pkts"][way] += 1
        f["bytes"][way] += r["ip_length"]
        t = seconds_ns(r["timestamp"])
        f["start"] = t if f["start"] is None else min(f["start"], t)
        f["end"] = t if f["end"] is None else max(f["end"], t)
        f["ids"].add(r["community_id"])
    return flows


def check(name, mode, packets, flows):
    problems = []
    want = {f["first"]: f for f in expected_flows(packets).values()}
    got = {f["first_packet"]: f for f in flows}
    if sorted(want) != sorted(got):
        problems.append("flows by first packet differ: %d expected, %d written; missing %s, extra %s"
                        % (len(want), len(got), sorted(set(want) - set(got))[:10],
                           sorted(set(got) - set(want))[:10]))
    for first in sorted(set(want) & set(got)):
        w, g = want[first], got[first]
        orig = (g["id.orig_h"], g["id.orig_p"])
        if g["proto"] == "icmp":
            orig = (g["id.orig_h"], 0)
        fields = [("initiator", w["orig"][0], g["id.orig_h"]),
                  ("orig_pkts", w["pkts"][0], g["orig_pkts"]),
                  ("resp_pkts", w["pkts"][1], g["resp_pkts"]),
                  ("orig_ip_bytes", w["bytes"][0], g["orig_ip_bytes"]),
                  ("resp_ip_bytes", w["bytes"][1], g["resp_ip_bytes"]),
                  ("ts", w["start"], seconds_ns(g["ts"])),
                  ("end_ts", w["end"], seconds_ns(g["end_ts"]))]
        # No timeout can strike (they are set beyond the captures' spans):
        # TCP flows end at their FINs or RST, the rest at EOS.
        if g["end_reason"] not in (("end", "forced") if g["proto"] == "tcp" else ("forced",)):
            problems.append("flow of packet %d: end_reason %s" % (first, g["end_reason"]))
        for field, exp, val in fields:
            if exp != val:
                problems.append("flow of packet %d: %s %r, expected %r" % (first, field, val, exp))
        if g["community_id"] not in w["ids"]:
            problems.append("flow of packet %d: community_id %s is none of its packets' %s"
                            % (first, g["community_id"], sorted(w["ids"])))
    total = sum(g["orig_pkts"] + g["resp_pkts"] for g in flows)
    ip_packets = sum(1 for r in packets if r["src"] is not None)
    if total != ip_packets:
        problems.append("flows hold %d packets, the capture %d with an IP header"
                        % (total, ip_packets))
    for p in problems[:10]:
        print("FAIL mode=%s %s: %s" % (mode, name, p))
    print("mode=%s %s: %d packets, %d flows: %s" % (mode, name, len(packets), len(flows),
                                                   "FAIL" if problems else "PASS"))
    return len(problems)


def main():
    args = mode_test_args(__doc__)
    if args is None:
        return 2
    pcaps, gst_launch, modes = args
    env = gst_launch_env()
    failures = 0
    ran = 0
    with tempfile.TemporaryDirectory() as workdir:
        for mode in modes:
            skipped = False
            flows_of = {}
            for name in CAPTURES:
                out = run(gst_launch, os.path.join(pcaps, name), mode, workdir, env,
                          ["flow-idle-timeout=4000000000", "flow-active-timeout=4000000000"])
                if out is None:
                    print("mode=%s: no GPU here, skipped" % mode)
                    skipped = True
                    break
                failures += check(name, mode, *out)
                flows_of[name] = out[1]
            if skipped:
                continue
            ran += 1
            # packet-records=false: the src pad carries gaps, not records
            # (in streams, zerocopy and graph they stay on the GPU), and
            # the flow records are the same.
            for name in ("zeek__wikipedia.pcap", "zeek__ipv6-fragmented-dns.pcap"):
                packets, flows = run(gst_launch, os.path.join(pcaps, name), mode, workdir, env,
                                     ["flow-idle-timeout=4000000000",
                                      "flow-active-timeout=4000000000", "packet-records=false"])
                same = canonical(flows) == canonical(flows_of[name])
                ok = not packets and flows and same
                print("mode=%s %s packet-records=false: %d packet records, %d flows, %s: %s"
                      % (mode, name, len(packets), len(flows),
                         "the same as with them" if same else "DIFFERENT from with them",
                         "PASS" if ok else "FAIL"))
                failures += not ok
            # Idle timeouts: ssh.pcap spans minutes with pauses of seconds.
            out = run(gst_launch, os.path.join(pcaps, "zeek__ssh.pcap"), mode, workdir, env,
                      ["flow-idle-timeout=1"])
            packets, flows = out
            reasons = {}
            for f in flows:
                reasons[f["end_reason"]] = reasons.get(f["end_reason"], 0) + 1
            total = sum(f["orig_pkts"] + f["resp_pkts"] for f in flows)
            ip_packets = sum(1 for r in packets if r["src"] is not None)
            ok = reasons.get("idle", 0) > 0 and total == ip_packets
            print("mode=%s ssh with flow-idle-timeout=1: %d flows %s, %d of %d packets: %s"
                  % (mode, len(flows), reasons, total, ip_packets, "PASS" if ok else "FAIL"))
            failures += not ok
            # flows=false with the flows pad linked all the same: the pad
            # carries an empty stream, so its sink prerolls and the pipeline
            # runs to EOS.  (It used to wait for ever once the packet
            # branch's queue was full: 300 buffers here, a queue holds 200.)
            cmd = [gst_launch, "-q", "packettestsrc", "num-buffers=300", "batch-size=64", "!",
                   "gpupacketproc", "mode=" + mode, "flows=false", "name=p", "p.src", "!",
                   "queue", "!", "fakesink", "p.flows", "!", "queue", "!", "fakesink"]
            try:
                proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=60)
                ok, why = proc.returncode == 0, "exit %d" % proc.returncode
            except subprocess.TimeoutExpired:
                ok, why = False, "still running after 60 s"
            print("mode=%s flows=false, flows pad linked, 300 batches: %s: %s"
                  % (mode, why, "PASS" if ok else "FAIL"))
            failures += not ok
    if ran == 0:
        return 77
    print("FAILED" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
