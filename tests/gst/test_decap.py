#!/usr/bin/env python3
"""gpupacketproc decap=inner end to end, against tshark's own reading.

  test_decap.py SHARED_DATA GST_LAUNCH [MODE...]

For each MODE (default: cpu), every capture of SHARED_DATA/pcap-tunnels runs
through
  pcapsrc ! gpupacketproc mode=MODE decap=inner ! packetresultenc
and each row is compared with tshark's dissection of its packet (IP
reassembly off): the tunnel columns (the levels tshark decodes, outermost
first, the innermost level's id, the IP header and UDP ports that carry the
innermost IP-borne level) and the main fields, which must be the innermost
packet's (ethertype, the VLAN tags of an inner Ethernet frame, the addresses
and ports of the last IP header and the L4 header after it, as tshark's last
occurrences give them; the Community ID computed from them).  A tunnel whose
carrying IPv4 header is a fragment is not opened.  JSON Lines carry the same
values.

Then, with the default MODE (cpu) alone: decap=none writes exactly what the element writes
without the property (on every capture of SHARED_DATA/pcap too, no tunnel
column); decap=inner rows of packets with no tunnel equal decap=none's;
vxlan-ports moves VXLAN to other ports or turns it off, and refuses a bad
list (start fails, naming it); record-size=176 into an element that only
takes 128 fails with gpupacketproc's not-negotiated error; pcapsink writes
the captured packets either way, with the innermost packet's ACL verdict;
flows=true writes each flow's tunnel_id last with decap=inner (its first
packet's), and no such column with decap=none.
A GPU mode that is not available here exits 77 (skip).
"""
import base64
import csv
import hashlib
import io
import ipaddress
import json
import os
import struct
import subprocess
import sys
import tempfile

from gstlaunch import gst_launch_env, mode_test_args

TUNNEL_DIR = "pcap-tunnels"
MAIN_COLUMNS = 29          # packetresultenc's columns of 128-byte records
TUNNEL_COLUMNS = ["tunnels", "tunnel_id", "outer_src", "outer_dst", "outer_l4_proto",
                  "outer_sport", "outer_dport"]

# tshark's protocol name of each level the walk opens -> (its name in the
# tunnels column, the tshark field of its id, or None: id 0).
MARKERS = {
    "vxlan": ("vxlan", "vxlan.vni"),
    "geneve": ("geneve", "geneve.vni"),
    "gre": ("gre", "gre.key"),
    "erspan": ("erspan", "erspan.spanid"),
    "gtp": ("gtpu", "gtp.teid"),
    "teredo": ("teredo", None),
    "pppoes": ("pppoe", "pppoe.session_id"),
    "ieee8021ah": ("pbb", "ieee8021ah.isid"),
    "vntag": ("vntag", "vntag.dst"),
}
IP_TOKENS = ("ip", "ipv6")
ID_FIELDS = sorted({f for _, f in MARKERS.values() if f})
FIELDS = ["frame.number", "frame.protocols", "vlan.id", "ip.src", "ip.dst", "ip.flags.mf",
          "ip.frag_offset", "ipv6.src", "ipv6.dst", "tcp.srcport", "tcp.dstport",
          "udp.srcport", "udp.dstport"] + ID_FIELDS
# Where an Ethernet header starts in tshark's protocols (PBB's customer frame
# has no eth of its own).
ETHERNET_TOKENS = ("eth", "ieee8021ah")


def tshark(capture):
    """Per packet: its protocol tokens and every occurrence of FIELDS."""
    cmd = ["tshark", "-n", "-r", capture, "-o", "ip.defragment:FALSE",
           "-o", "ipv6.defragment:FALSE", "-T", "fields", "-E", "occurrence=a",
           "-E", "aggregator=,"]
    for f in FIELDS:
        cmd += ["-e", f]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    packets = []
    for line in out.splitlines():
        values = line.split("\t")
        fields = {f: (v.split(",") if v else []) for f, v in zip(FIELDS, values)}
        packets.append(fields)
    return packets


def number(text):
    return int(text, 0)


def expect(fields):
    """What decap=inner must write for a packet tshark dissected as
    `fields`: the tunnel columns and the innermost packet's main fields."""
    tokens = [t for t in fields["frame.protocols"][0].split(":") if not t.startswith("ipv6.")]
    seen = {}                  # token -> occurrences so far
    ips = []                   # (token, occurrence, place in tokens) of each IP header
    levels = []                # (column name, id)
    level_at = 0               # place in tokens of the last level opened
    carrier = None             # (IP header, outer_l4_proto, UDP occurrence or None)
    last_udp = None

    def fragment(ip):
        token, k, _ = ip
        return token == "ip" and (fields["ip.flags.mf"][k] == "1" or
                                  fields["ip.frag_offset"][k] != "0")

    def id_of(field, k):
        values = fields.get(field) or []
        if not field or not values:
            return 0
        return number(values[k] if k < len(values) else values[-1])

    for i, token in enumerate(tokens):
        if token in ("icmp", "icmpv6"):
            break              # an ICMP error quotes IP headers: not a tunnel
        k = seen.get(token, 0)
        seen[token] = k + 1
        after = tokens[i + 1] if i + 1 < len(tokens) else ""
        if token in IP_TOKENS:
            if ips and tokens[i - 1] in IP_TOKENS:
                if fragment(ips[-1]):
                    break
                levels.append(("ipip", 0))
                level_at = i
                carrier = (ips[-1], 4 if token == "ip" else 41, None)
            ips.append((token, k, i))
        elif token == "udp":
            last_udp = k
        elif token in MARKERS:
            name, id_field = MARKERS[token]
            if token == "gre" and after == "erspan":
                continue       # ERSPAN over GRE is one level, erspan
            if token == "gtp" and after not in IP_TOKENS:
                break
            if token == "pppoes" and not (after == "ppp" and tokens[i + 2] in IP_TOKENS):
                break
            ip_borne = token not in ("pppoes", "ieee8021ah", "vntag")
            if ip_borne and fragment(ips[-1]):
                break
            levels.append((name, id_of(id_field, k)))
            level_at = i
            if ip_borne:
                udp = tokens[i - 1] == "udp" or (token == "erspan" and tokens[i - 2] == "udp")
                carrier = (ips[-1], 17 if udp else 47, last_udp if udp else None)

    want = {"tunnels": ";".join(name for name, _ in levels),
            "tunnel_id": str(levels[-1][1]) if levels else ""}
    for column in TUNNEL_COLUMNS[2:]:
        want[column] = ""
    if carrier:
        (token, k, _), proto, udp = carrier
        want["outer_src"] = fields[token + ".src"][k]
        want["outer_dst"] = fields[token + ".dst"][k]
        want["outer_l4_proto"] = str(proto)
        if udp is not None:
            want["outer_sport"] = fields["udp.srcport"][udp]
            want["outer_dport"] = fields["udp.dstport"][udp]
    # The innermost packet's IP header: the last one the walk reached past
    # the last level it opened (none: ARP in VXLAN, say).
    inner = [ip for ip in ips if ip[2] >= level_at]
    main = {"ip_version": ""}
    # Inside an Ethernet level, vlan is that frame's tags.
    ethernet = [i for i, t in enumerate(tokens) if t in ETHERNET_TOKENS]
    if levels and ethernet and ethernet[-1] >= level_at:
        tags = tokens[ethernet[-1]:].count("vlan")
        main["vlan"] = ";".join(fields["vlan.id"][len(fields["vlan.id"]) - tags:]) if tags else ""
    if inner:
        token, k, place = inner[-1]
        main["ip_version"] = "4" if token == "ip" else "6"
        if tokens[place - 1] != "mpls":     # MPLS: the ethertype stays 0x8847
            main["ethertype"] = "0x0800" if token == "ip" else "0x86dd"
        main["src"] = fields[token + ".src"][k]
        main["dst"] = fields[token + ".dst"][k]
        l4 = tokens[place + 1] if place + 1 < len(tokens) else ""
        if l4 in ("tcp", "udp") and not fragment(inner[-1]):
            j = tokens[:place + 1].count(l4)
            main["l4_proto"] = "6" if l4 == "tcp" else "17"
            main["sport"] = fields[l4 + ".srcport"][j]
            main["dport"] = fields[l4 + ".dstport"][j]
    return want, main


def same_address(a, b):
    """Equal addresses, however each is written; else equal text."""
    try:
        return ipaddress.ip_address(a) == ipaddress.ip_address(b)
    except ValueError:
        return a == b


def community_id(flow, seed=0):
    """Community ID v1 of a TCP or UDP packet (src, dst, sport, dport, l4_proto)."""
    src, dst = ipaddress.ip_address(flow["src"]), ipaddress.ip_address(flow["dst"])
    sport, dport = int(flow["sport"]), int(flow["dport"])
    if (src.packed, sport) > (dst.packed, dport):
        src, dst, sport, dport = dst, src, dport, sport
    data = (struct.pack("!H", seed) + src.packed + dst.packed +
            struct.pack("!BBHH", int(flow["l4_proto"]), 0, sport, dport))
    return "1:" + base64.b64encode(hashlib.sha1(data).digest()).decode()


def launch(gst_launch, env, *pipeline):
    proc = subprocess.run([gst_launch, "-q", *pipeline], capture_output=True, text=True,
                          env=env, timeout=120)
    return proc.returncode, proc.stdout + proc.stderr


class Run:
    def __init__(self, gst_launch, env, workdir):
        self.gst_launch, self.env, self.workdir = gst_launch, env, workdir

    def text(self, capture, props, fmt="csv"):
        """packetresultenc's text of `capture` through gpupacketproc `props`,
        or None when the mode needs a GPU that is not here."""
        out = os.path.join(self.workdir, "out." + fmt)
        rc, output = launch(self.gst_launch, self.env, "pcapsrc", "location=" + capture, "!",
                            "gpupacketproc", *props, "!", "packetresultenc", "format=" + fmt,
                            "!", "filesink", "location=" + out)
        if rc != 0:
            if "needs a CUDA GPU" in output:
                return None
            raise RuntimeError("%s with %s failed (%d):\n%s" % (capture, props, rc, output))
        with open(out) as fh:
            return fh.read()


def rows_of(text):
    reader = csv.reader(io.StringIO(text))
    header = next(reader)
    return header, [dict(zip(header, r)) for r in reader]


def check_capture(name, rows, packets):
    """Failures of one capture's decap=inner rows against tshark."""
    failures = []
    if len(rows) != len(packets):
        return ["%s: %d rows, tshark %d packets" % (name, len(rows), len(packets))]
    for row, fields in zip(rows, packets):
        where = "%s packet %s" % (name, row["packet"])
        want, main = expect(fields)
        for column, value in want.items():
            got = row[column]
            same = (same_address(got, value) if column in ("outer_src", "outer_dst")
                    else got == value)
            if not same:
                failures.append("%s: %s is %r, tshark %r (%s)" % (
                    where, column, got, value, fields["frame.protocols"][0]))
        for column, value in main.items():
            got = row[column]
            same = same_address(got, value) if column in ("src", "dst") else got == value
            if not same:
                failures.append("%s: %s is %r, tshark's innermost %r (%s)" % (
                    where, column, got, value, fields["frame.protocols"][0]))
        if "tunnel" in row["status"]:
            failures.append("%s: status %s" % (where, row["status"]))
        if main.get("sport") and row["community_id"] != community_id(main):
            failures.append("%s: community_id %s, the inner flow's is %s" % (
                where, row["community_id"], community_id(main)))
    return failures


def check_jsonl(name, csv_rows, text):
    """JSON Lines: the same tunnel values, null where CSV is empty."""
    failures = []
    for row, line in zip(csv_rows, text.splitlines()):
        obj = json.loads(line)
        for column in TUNNEL_COLUMNS:
            want = row[column]
            got = obj[column]
            if want == "":
                ok = got is None
            elif column in ("tunnels", "outer_src", "outer_dst"):
                ok = got == want
            else:
                ok = got == int(want)
            if not ok:
                failures.append("%s packet %s (jsonl): %s is %r, csv %r" % (
                    name, row["packet"], column, got, want))
    return failures


def check_modes(run, data, modes):
    failures, skipped = [], 0
    tunnel_dir = os.path.join(data, TUNNEL_DIR)
    captures = sorted(f for f in os.listdir(tunnel_dir) if f.endswith(".pcap"))
    dissected = {name: tshark(os.path.join(tunnel_dir, name)) for name in captures}
    for mode in modes:
        tunnelled = 0
        for name in captures:
            capture = os.path.join(tunnel_dir, name)
            text = run.text(capture, ["mode=" + mode, "decap=inner"])
            if text is None:
                print("mode=%s: no GPU here, skipped" % mode)
                skipped += 1
                break
            header, rows = rows_of(text)
            if header[MAIN_COLUMNS:] != TUNNEL_COLUMNS:
                failures.append("%s: header %s" % (name, header))
                continue
            failures += check_capture(name, rows, dissected[name])
            failures += check_jsonl(name, rows, run.text(capture, ["mode=" + mode,
                                                                   "decap=inner"], "jsonl"))
            tunnelled += sum(1 for r in rows if r["tunnels"])
        print("mode=%s: %d captures, %d tunnelled packets checked against tshark" % (
            mode, len(captures), tunnelled))
    return failures, skipped == len(modes)


def check_decap_none(run, data):
    """decap=none is the element without the property, and decap=inner
    changes nothing of a packet it opens no tunnel of."""
    failures = []
    paths = []
    for folder in ("pcap", TUNNEL_DIR):
        directory = os.path.join(data, folder)
        paths += [os.path.join(directory, f) for f in sorted(os.listdir(directory))
                  if ".pcap" in f]
    for path in paths:
        name = os.path.basename(path)
        plain = run.text(path, [])
        if run.text(path, ["decap=none"]) != plain:
            failures.append("%s: decap=none differs from no decap property" % name)
        header, none_rows = rows_of(plain)
        if len(header) != MAIN_COLUMNS:
            failures.append("%s: decap=none has %d columns" % (name, len(header)))
        _, inner_rows = rows_of(run.text(path, ["decap=inner"]))
        for before, after in zip(none_rows, inner_rows):
            if after["tunnels"] or "tunnel" in after["status"]:
                continue
            if any(before[c] != after[c] for c in header):
                failures.append("%s packet %s: no tunnel, yet decap=inner changed it" % (
                    name, before["packet"]))
    print("decap=none: %d captures as without the property" % len(paths))
    return failures


def check_flows(run, data):
    """flows=true beside decap: with decap=inner the flows' CSV and JSON
    Lines end with tunnel_id, each flow's the tunnel id of its first packet;
    with decap=none they have no such column."""
    failures = []
    directory = os.path.join(data, TUNNEL_DIR)
    paths = [os.path.join(directory, f) for f in sorted(os.listdir(directory)) if ".pcap" in f]
    flows_seen = tunnelled = 0
    for path in paths:
        name = os.path.basename(path)
        for decap in ("inner", "none"):
            packets = os.path.join(run.workdir, "packets.csv")
            flows = {fmt: os.path.join(run.workdir, "flows." + fmt) for fmt in ("csv", "jsonl")}
            rc, output = launch(run.gst_launch, run.env, "pcapsrc", "location=" + path, "!",
                                "gpupacketproc", "decap=" + decap, "flows=true", "name=p", "!",
                                "packetresultenc", "format=csv", "!", "filesink",
                                "location=" + packets,
                                "p.flows", "!", "tee", "name=t",
                                "t.", "!", "queue", "!", "packetresultenc", "format=csv", "!",
                                "filesink", "location=" + flows["csv"],
                                "t.", "!", "queue", "!", "packetresultenc", "format=jsonl", "!",
                                "filesink", "location=" + flows["jsonl"])
            if rc != 0:
                failures.append("%s decap=%s flows: exit %d: %s" % (name, decap, rc, output[-300:]))
                continue
            with open(packets) as fh:
                _, rows = rows_of(fh.read())
            by_number = {r["packet"]: r for r in rows}
            with open(flows["csv"]) as fh:
                header, flow_rows = rows_of(fh.read())
            with open(flows["jsonl"]) as fh:
                json_rows = [json.loads(line) for line in fh if line.strip()]
            if decap == "none":
                if "tunnel_id" in header or any("tunnel_id" in j for j in json_rows):
                    failures.append("%s decap=none: flows have a tunnel_id" % name)
                continue
            if header[-1:] != ["tunnel_id"]:
                failures.append("%s decap=inner: flows' last column is %s" % (name, header[-1:]))
                continue
            if len(json_rows) != len(flow_rows):
                failures.append("%s: %d JSON flows, %d CSV" % (name, len(json_rows), len(flow_rows)))
                continue
            for f, j in zip(flow_rows, json_rows):
                first = by_number.get(f["first_packet"])
                want = int(first["tunnel_id"] or 0) if first else None
                if want is None or int(f["tunnel_id"]) != want or j.get("tunnel_id") != want:
                    failures.append("%s flow of packet %s: tunnel_id %s (JSON %s), its first "
                                    "packet's %s" % (name, f["first_packet"], f["tunnel_id"],
                                                     j.get("tunnel_id"), want))
                flows_seen += 1
                tunnelled += want != 0
    print("flows: %d flows of %d captures, %d with a tunnel id" % (flows_seen, len(paths),
                                                                    tunnelled))
    if not tunnelled:
        failures.append("flows: no flow with a tunnel id: the check checked nothing")
    return failures


def check_vxlan_ports(run, data):
    failures = []
    capture = os.path.join(data, TUNNEL_DIR, "zeek__vxlan.pcap")
    default = run.text(capture, ["decap=inner"])
    for ports, opened in (("4789", True), ("8472,4789", True), (" 4789 ", True),
                          ("8472", False), ("", False)):
        # Quoted: gst-launch-1.0 reads an empty value as the next word.
        _, rows = rows_of(run.text(capture, ["decap=inner", 'vxlan-ports="%s"' % ports]))
        got = sum(1 for r in rows if r["tunnels"] == "vxlan")
        if got != (len(rows) if opened else 0):
            failures.append("vxlan-ports=%r: %d of %d packets opened" % (ports, got, len(rows)))
    if run.text(capture, ["decap=inner", "vxlan-ports=8472,4789"]) != default:
        failures.append("vxlan-ports=8472,4789 differs from the default")
    for bad in ("abc", "0", "65536", "4789,8472,4790", "4789,", "-1", "4789;8472"):
        rc, output = launch(run.gst_launch, run.env, "pcapsrc", "location=" + capture, "!",
                            "gpupacketproc", "decap=inner", "vxlan-ports=" + bad, "!",
                            "fakesink")
        if rc == 0 or "Invalid vxlan-ports" not in output:
            failures.append("vxlan-ports=%r: exit %d, want a failed start naming it:\n%s" % (
                bad, rc, output))
    print("vxlan-ports: other ports, none, and 7 bad lists refused")
    return failures


def check_refused_caps(run, data):
    """An element that takes only 128-byte records after decap=inner."""
    capture = os.path.join(data, TUNNEL_DIR, "zeek__vxlan.pcap")
    rc, output = launch(run.gst_launch, run.env, "pcapsrc", "location=" + capture, "!",
                        "gpupacketproc", "decap=inner", "!", "capsfilter",
                        "caps=application/x-packet-results,record-size=(int)128", "!",
                        "fakesink")
    if rc == 0 or "not-negotiated" not in output or "record-size=(int)176" not in output \
            or "decap=none" not in output:
        return ["record-size=176 into a 128-only element: exit %d, want gpupacketproc's "
                "not-negotiated error:\n%s" % (rc, output)]
    print("record-size=176 into a 128-only element: not-negotiated, named")
    return []


def frame_count(path, display_filter=None):
    cmd = ["tshark", "-n", "-r", path, "-T", "fields", "-e", "frame.number"]
    if display_filter:
        cmd += ["-Y", display_filter]
    return len(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout.split())


def check_pcapsink(run, data):
    """pcapsink takes both record sizes; the verdict is the innermost
    packet's: a rule dropping ICMP drops the VXLAN packets that carry it."""
    failures = []
    capture = os.path.join(data, TUNNEL_DIR, "zeek__vxlan.pcap")
    rules = os.path.join(run.workdir, "icmp.rules")
    with open(rules, "w") as fh:
        fh.write("@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x01/0xFF drop\n")
    written = {}
    for decap in ("none", "inner"):
        for verdict in ("all", "drop"):
            out = os.path.join(run.workdir, "%s-%s.pcap" % (decap, verdict))
            rc, output = launch(run.gst_launch, run.env, "pcapsrc", "location=" + capture,
                                "!", "gpupacketproc", "decap=" + decap, "acl-rules=" + rules,
                                "!", "pcapsink", "verdict=" + verdict, "location=" + out)
            if rc != 0:
                failures.append("pcapsink decap=%s: exit %d:\n%s" % (decap, rc, output))
                continue
            with open(out, "rb") as fh:
                written[decap, verdict] = fh.read()
    if failures:
        return failures
    if written["none", "all"] != written["inner", "all"]:
        failures.append("pcapsink verdict=all: decap=inner wrote other packets than decap=none")
    icmp = frame_count(capture, "icmp")
    dropped = {decap: frame_count(os.path.join(run.workdir, "%s-drop.pcap" % decap))
               for decap in ("none", "inner")}
    if icmp == 0 or dropped != {"none": 0, "inner": icmp}:
        failures.append("pcapsink verdict=drop: %s packets dropped, want none with decap=none "
                        "and the %d carrying ICMP with decap=inner" % (dropped, icmp))
    print("pcapsink: the same packets with record-size 176; ICMP inside VXLAN dropped")
    return failures


def main():
    args = mode_test_args(__doc__)
    if args is None:
        return 2
    data, gst_launch, modes = args
    with tempfile.TemporaryDirectory() as workdir:
        run = Run(gst_launch, gst_launch_env(), workdir)
        failures, all_skipped = check_modes(run, data, modes)
        if all_skipped:
            return 77
        if modes == ["cpu"]:
            failures += check_decap_none(run, data)
            failures += check_vxlan_ports(run, data)
            failures += check_flows(run, data)
            failures += check_refused_caps(run, data)
            failures += check_pcapsink(run, data)
    for f in failures[:40]:
        print("FAIL", f)
    if len(failures) > 40:
        print("... %d failures in all" % len(failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
