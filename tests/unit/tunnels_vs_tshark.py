#!/usr/bin/env python3
"""Checks the packet core's tunnel walk against tshark, packet by packet.

For every capture given (or every capture of a folder given), compares the
innermost packet the walk reaches (tunnel-records: decap on) with tshark's
innermost network layer: IP version, source and destination, final protocol
and TCP/UDP ports, and the encapsulations passed on the way.  tshark is read as PDML, whose top-level protocols are in
wire order (a packet quoted by an ICMP error is nested inside the ICMP layer,
so it is not taken for a tunnel): its innermost network layer is its last
top-level IPv4 or IPv6 layer, unless a link layer (an inner Ethernet frame,
802.1ah, PPPoE) starts after it, in which case the innermost packet is no IP
packet at all (ARP inside VXLAN, LCP inside PPPoE).

Every accepted difference is listed in KNOWN_DIFFERENCES with its reason; a
listed difference that no longer occurs fails the test too, so the list stays
true.  Exit 77 (skipped) where tshark is not installed.
"""
import argparse
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

# tshark's options and PDML helpers: those of the outer-layer agreement test.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tshark"))
from compare_tshark import IPV6_EXTENSIONS, TSHARK_OPTIONS, fields_of  # noqa: E402

COMPARED = ["ip_version", "src", "dst", "l4_proto", "sport", "dport", "tunnels"]
RECORD_COLUMNS = ["number"] + COMPARED[:-1] + ["status", "tunnels"]

# Top-level layers that start a packet of their own: after the last IP layer,
# the innermost packet is not IP.
LINK_LAYERS = {"eth", "ieee8021ah", "pppoes", "vntag", "etag"}
UPPER = {"6": "tcp", "17": "udp"}

_FIRST_FRAGMENT = ("the GTP-U carrier is an IPv4 first fragment (more fragments set): the walk opens "
                   "unfragmented carriers only and reports the outer UDP datagram; tshark, told not "
                   "to reassemble, still dissects the first fragment's UDP payload as GTP-U and the "
                   "inner packet's first bytes")
# (capture, packet) -> why tshark's innermost layer is not the walk's.
KNOWN_DIFFERENCES = {
    **{("zeek__gtp1_gn_normal_incl_fragmentation.pcap", n): _FIRST_FRAGMENT
       for n in (4, 10, 12, 14, 16, 18, 20, 22, 24, 26, 30, 32, 34, 36, 38, 42, 44, 46, 48, 50, 52,
                 56, 57, 59, 61, 63, 66, 68, 70, 73, 75, 77, 80, 81, 83, 86, 88, 90, 92, 93)},
    ("zeek__gtp_ext_header.pcap", 1): _FIRST_FRAGMENT,
    ("tcpdump__pptp.pcap", 16):
        "PPTP's enhanced GRE (version 1) carrying PPP LCP: the walk does not open GRE version 1 "
        "(unknown_tunnel, the outer packet's record); tshark decodes the GRE layer and the LCP "
        "inside it, no IP packet either",
}


def encapsulations(names):
    """The walk's names of the encapsulations in tshark's top-level layers."""
    levels = []
    for i, name in enumerate(names):
        after = names[i + 1:i + 3] + ["", ""]
        if name in ("vxlan", "geneve", "erspan", "teredo", "vntag", "etag"):
            levels.append(name)
        elif name == "ieee8021ah":
            levels.append("pbb")
        elif name == "gre" and after[0] != "erspan":
            levels.append("gre")
        elif name == "gtp" and after[0] in ("ip", "ipv6"):  # a G-PDU, not signalling
            levels.append("gtpu")
        elif name == "pppoes" and after[1] in ("ip", "ipv6"):  # PPP carrying IP, not LCP
            levels.append("pppoe")
        elif name in ("ip", "ipv6") and i > 0 and names[i - 1] in ("ip", "ipv6"):
            levels.append("ipip")
    return ":".join(levels)


def innermost(packet):
    """tshark's innermost network layer of one PDML packet, as COMPARED fields."""
    exp = {k: "" for k in COMPARED}
    protos = [p for p in packet.findall("proto") if p.get("name") not in ("geninfo", "frame")]
    names = [p.get("name") for p in protos]
    exp["tunnels"] = encapsulations(names)
    ips = [i for i, n in enumerate(names) if n in ("ip", "ipv6")]
    if not ips:
        return exp
    last = ips[-1]
    if any(n in LINK_LAYERS for n in names[last + 1:]):
        return exp
    f = fields_of(protos[last])
    if names[last] == "ip":
        exp["ip_version"] = "4"
        exp["src"], exp["dst"] = f.get("ip.src", ""), f.get("ip.dst", "")
        exp["l4_proto"] = f.get("ip.proto", "")
    else:
        exp["ip_version"] = "6"
        exp["src"], exp["dst"] = f.get("ipv6.src", ""), f.get("ipv6.dst", "")
        exp["l4_proto"] = f.get("ipv6.nxt", "")
        for ext in protos[last].iter("proto"):  # extension headers, in chain order
            if ext.get("name") in IPV6_EXTENSIONS:
                exp["l4_proto"] = fields_of(ext).get(IPV6_EXTENSIONS[ext.get("name")], exp["l4_proto"])
    upper = names[last + 1] if last + 1 < len(names) else ""
    if upper and upper == UPPER.get(exp["l4_proto"]):
        u = fields_of(protos[last + 1])
        exp["sport"], exp["dport"] = u.get(upper + ".srcport", ""), u.get(upper + ".dstport", "")
    return exp


def tshark_innermost(path):
    out = subprocess.run(["tshark", *TSHARK_OPTIONS, "-r", path, "-T", "pdml"],
                         check=True, capture_output=True).stdout
    result = {}
    for packet in ET.fromstring(out).findall("packet"):
        number = next(f.get("show") for f in packet.iter("field") if f.get("name") == "frame.number")
        result[int(number)] = innermost(packet)
    return result


def walk_records(path, records):
    out = subprocess.run([records, path], check=True, capture_output=True, text=True).stdout
    rows = [dict(zip(RECORD_COLUMNS, line.split("\t"))) for line in out.splitlines()]
    return {int(row["number"]): row for row in rows}


def compare(path, records, verbose):
    name = os.path.basename(path)
    ours = walk_records(path, records)
    theirs = tshark_innermost(path)
    problems, known = [], set()
    if sorted(ours) != sorted(theirs):
        problems.append(f"{name}: packet numbers differ: ours {len(ours)}, tshark {len(theirs)}")
    opened = 0
    for number in sorted(set(ours) & set(theirs)):
        opened += bool(ours[number]["tunnels"])
        diff = [f"{f} {ours[number][f]!r} vs {theirs[number][f]!r}"
                for f in COMPARED if ours[number][f] != theirs[number][f]]
        if not diff:
            continue
        if (name, number) in KNOWN_DIFFERENCES:
            known.add((name, number))
            continue
        problems.append(f"{name} packet {number} (walk: {ours[number]['tunnels'] or 'no tunnel'}, "
                        f"status {ours[number]['status'] or 'ok'}): " + ", ".join(diff))
    if verbose:
        print(f"{name}: {len(ours)} packets, {opened} opened, {len(problems)} differences, "
              f"{len(known)} known")
    return problems, known, len(ours)


def capture_paths(arguments):
    """The files named, and the captures in the folders named, in order."""
    paths = []
    for c in arguments:
        if os.path.isdir(c):
            paths += sorted(os.path.join(c, f) for f in os.listdir(c)
                            if f.endswith((".pcap", ".pcapng")))
        else:
            paths.append(c)
    return paths


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("captures", nargs="+", help="pcap/pcapng files or folders of them")
    ap.add_argument("--records", required=True, help="the tunnel-records program")
    ap.add_argument("-v", "--verbose", action="store_true")
    args = ap.parse_args()
    if not shutil.which("tshark"):
        print("tshark not installed: skipped")
        return 77
    paths = capture_paths(args.captures)
    results = [compare(p, args.records, args.verbose) for p in paths]
    problems = [line for r in results for line in r[0]]
    known = set().union(*(r[1] for r in results))
    names = {os.path.basename(p) for p in paths}
    problems += [f"{capture} packet {number}: listed as a known difference, but agrees"
                 for capture, number in sorted(KNOWN_DIFFERENCES)
                 if capture in names and (capture, number) not in known]
    print("\n".join(problems + [f"{len(paths)} captures, {sum(r[2] for r in results)} packets, "
                                f"{len(problems)} differences, {len(known)} known differences"]))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
