#!/usr/bin/env python3
"""packetresultenc's community_id column against the Community ID spec's
baselines and suricata-verify's expected value.

  test_community_id.py SHARED_DATA GST_LAUNCH [MODE...]

For each MODE (default: cpu), runs
  pcapsrc ! gpupacketproc mode=MODE ! packetresultenc format=jsonl community-id-seed=S
over the spec's captures (../shared/data/community-id/*.pcap) with seed 0 and
seed 1: the set of (protocol, source, destination, Community ID) of every
packet must equal the baseline's set of flow directions (baseline_deflt.json,
baseline_seed1.json), and a packet without an IP header (arp.pcap) must have
none.  Then suricata-verify's community-id-ipv4 test: seed 7, the flow
172.26.0.39:35958 -> 172.217.14.206:443 is 1:IwiTNfuO7aCaamMijl+7/X9uLx0=.
A GPU mode that is not available here exits 77 (skip).
"""
import json
import os
import subprocess
import sys
import tempfile

from gstlaunch import gst_launch_env, mode_test_args

CAPTURES = ["tcp", "udp", "icmp", "icmp6", "ipv6", "sctp", "rsvp", "arp"]
BASELINES = {0: "baseline_deflt.json", 1: "baseline_seed1.json"}
SV_CAPTURE = "sv__community-id-ipv4.pcap"
SV_SEED = 7
SV_FLOW = ("172.26.0.39", 35958, "172.217.14.206", 443)
SV_ID = "1:IwiTNfuO7aCaamMijl+7/X9uLx0="


def run(gst_launch, capture, mode, seed, workdir, env):
    out = os.path.join(workdir, "out.jsonl")
    cmd = [gst_launch, "-q", "pcapsrc", "location=" + capture, "!", "gpupacketproc",
           "mode=" + mode, "!", "packetresultenc", "format=jsonl",
           "community-id-seed=%d" % seed, "!", "filesink", "location=" + out]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
    if proc.returncode != 0:
        text = proc.stdout + proc.stderr
        if mode != "cpu" and "needs a CUDA GPU" in text:
            return None
        raise RuntimeError("%s failed (%d):\n%s" % (" ".join(cmd), proc.returncode, text))
    with open(out) as fh:
        return [json.loads(line) for line in fh]


def main():
    args = mode_test_args(__doc__)
    if args is None:
        return 2
    data, gst_launch, modes = args
    env = gst_launch_env()
    cid_dir = os.path.join(data, "community-id")
    failures = 0
    skipped = 0
    with tempfile.TemporaryDirectory() as workdir:
        for mode in modes:
            for seed, baseline in BASELINES.items():
                with open(os.path.join(cid_dir, baseline)) as fh:
                    want = {(e["proto"], e["saddr"], e["daddr"], e["communityid"])
                            for e in json.load(fh)}
                got = set()
                packets = 0
                for name in CAPTURES:
                    rows = run(gst_launch, os.path.join(cid_dir, name + ".pcap"), mode, seed,
                               workdir, env)
                    if rows is None:
                        print("mode=%s: no GPU here, skipped" % mode)
                        skipped += 1
                        break
                    for row in rows:
                        packets += 1
                        if row["src"] is None:
                            if row["community_id"] is not None:
                                print("FAIL mode=%s seed=%d %s packet %d: a Community ID without "
                                      "an IP header" % (mode, seed, name, row["packet"]))
                                failures += 1
                            continue
                        got.add((row["l4_proto"], row["src"], row["dst"], row["community_id"]))
                else:
                    for t in sorted(want - got, key=str):
                        print("FAIL mode=%s seed=%d: baseline %s not produced" % (mode, seed, t))
                        failures += 1
                    for t in sorted(got - want, key=str):
                        print("FAIL mode=%s seed=%d: produced %s, not in the baseline"
                              % (mode, seed, t))
                        failures += 1
                    print("mode=%s seed=%d: %d packets, %d flow directions, baseline %d: %s"
                          % (mode, seed, packets, len(got), len(want),
                             "PASS" if got == want else "FAIL"))
                    continue
                break
            rows = run(gst_launch, os.path.join(data, "pcap", SV_CAPTURE), mode, SV_SEED,
                       workdir, env)
            if rows is None:
                continue
            ids = {row["community_id"] for row in rows
                   if (row["src"], row["sport"], row["dst"], row["dport"]) == SV_FLOW or
                   (row["dst"], row["dport"], row["src"], row["sport"]) == SV_FLOW}
            ok = ids == {SV_ID}
            print("mode=%s suricata-verify community-id-ipv4 (seed %d): %s -> %s: %s"
                  % (mode, SV_SEED, SV_FLOW, sorted(ids), "PASS" if ok else "FAIL"))
            failures += not ok
    if skipped == len(modes):
        return 77
    print("FAILED" if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
