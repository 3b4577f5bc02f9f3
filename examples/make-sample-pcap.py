#!/usr/bin/env python3
"""Writes a pcap of synthetic but realistic mixed traffic for the demo.

Ethernet frames with IPv4 and IPv6, TCP, UDP, ICMP and ICMPv6, some 802.1Q
and QinQ tags, IPv6 extension headers, IPv4 fragments, ARP, and a small share
of deliberately broken packets (bad IHL, bad checksums, cut by the snap
length), so every column of the output has something to show.  Python's
standard library only; deterministic for a given --seed.

For benchmarks: --frame-size B writes only IPv4 UDP frames of exactly B bytes
(60: the smallest Ethernet frame, 64 on the wire with its FCS) over the same
flows; --distinct N makes N packets and then repeats them, timestamps going
on, until --packets (millions of packets in seconds rather than minutes).
"""
import argparse
import random
import struct


def csum(data):
    if len(data) % 2:
        data += b"\0"
    s = sum(struct.unpack("!%dH" % (len(data) // 2), data))
    while s >> 16:
        s = (s & 0xFFFF) + (s >> 16)
    return (~s) & 0xFFFF


def ipv4(src, dst, proto, payload, ident=0, frag=0, ttl=64, options=b""):
    ihl = 5 + len(options) // 4
    hdr = struct.pack("!BBHHHBBH4s4s", (4 << 4) | ihl, 0, 4 * ihl + len(payload), ident, frag,
                      ttl, proto, 0, src, dst) + options
    hdr = hdr[:10] + struct.pack("!H", csum(hdr)) + hdr[12:]
    return hdr + payload


def ipv6(src, dst, next_header, payload, hop_limit=64):
    return struct.pack("!IHBB16s16s", 6 << 28, len(payload), next_header, hop_limit, src, dst) + payload


def l4(proto, src, dst, sport, dport, data, v6):
    if proto == 6:
        seg = struct.pack("!HHIIBBHHH", sport, dport, 1, 0, 5 << 4, 0x18, 65535, 0, 0) + data
        off = 16
    else:
        seg = struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data
        off = 6
    if v6:
        pseudo = src + dst + struct.pack("!IxxxB", len(seg), proto)
    else:
        pseudo = src + dst + struct.pack("!xBH", proto, len(seg))
    c = csum(pseudo + seg) or 0xFFFF
    return seg[:off] + struct.pack("!H", c) + seg[off + 2:]


def icmp_echo(data, v6=False, src=b"", dst=b""):
    msg = struct.pack("!BBHHH", 128 if v6 else 8, 0, 0, 1, 1) + data
    pseudo = src + dst + struct.pack("!IxxxB", len(msg), 58) if v6 else b""
    return msg[:2] + struct.pack("!H", csum(pseudo + msg)) + msg[4:]


def ether(payload, ethertype, vlans=()):
    frame = b"\x02\x00\x00\x00\x00\x01\x02\x00\x00\x00\x00\x02"
    for i, vid in enumerate(vlans):
        tpid = 0x88A8 if (len(vlans) > 1 and i == 0) else 0x8100
        frame += struct.pack("!HH", tpid, vid)
    return frame + struct.pack("!H", ethertype) + payload


def make_packet(rng, flows):
    kind = rng.random()
    src4, dst4, src6, dst6, sport, dport = rng.choice(flows)
    data = bytes(rng.getrandbits(8) for _ in range(rng.choice([0, 6, 64, 200, 512, 1200])))
    vlans = rng.choice([(), (), (), (), (100,), (200, 300)])
    if kind < 0.40:
        proto = rng.choice([6, 6, 17])
        return ether(ipv4(src4, dst4, proto, l4(proto, src4, dst4, sport, dport, data, False)), 0x0800, vlans)
    if kind < 0.60:
        proto = rng.choice([6, 17])
        seg = l4(proto, src6, dst6, sport, dport, data, True)
        if rng.random() < 0.3:  # hop-by-hop options header (PadN) before the upper layer
            seg = struct.pack("!BB", proto, 0) + b"\x01\x04\0\0\0\0" + seg
            proto = 0
        return ether(ipv6(src6, dst6, proto, seg), 0x86DD, vlans)
    if kind < 0.70:
        return ether(ipv4(src4, dst4, 1, icmp_echo(data)), 0x0800, vlans)
    if kind < 0.75:
        return ether(ipv6(src6, dst6, 58, icmp_echo(data, True, src6, dst6)), 0x86DD, vlans)
    if kind < 0.83:  # a UDP datagram in two IPv4 fragments
        whole = l4(17, src4, dst4, sport, dport, bytes(1000), False)
        ident = rng.getrandbits(16)
        first = ipv4(src4, dst4, 17, whole[:504], ident, 0x2000)
        return [ether(first, 0x0800, vlans),
                ether(ipv4(src4, dst4, 17, whole[504:], ident, 504 // 8), 0x0800, vlans)]
    if kind < 0.90:  # ARP request
        arp = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, 1, b"\x02\0\0\0\0\x01", src4, b"\0" * 6, dst4)
        return ether(arp, 0x0806)
    if kind < 0.94:  # IPv4 with a router-alert option, as IGMP uses
        return ether(ipv4(src4, dst4, 2, b"\x11\x64\xee\x9b\0\0\0\0", options=b"\x94\x04\0\0"), 0x0800)
    if kind < 0.97:  # broken: header length below 20 bytes
        p = bytearray(ipv4(src4, dst4, 17, l4(17, src4, dst4, sport, dport, data, False)))
        p[0] = 0x43
        return ether(bytes(p), 0x0800)
    # broken: bad IPv4 header checksum
    p = bytearray(ipv4(src4, dst4, 6, l4(6, src4, dst4, sport, dport, data, False)))
    p[10] ^= 0xFF
    return ether(bytes(p), 0x0800)


def make_udp_frame(rng, flows, frame_size):
    """An IPv4 UDP frame of exactly frame_size bytes from one of the flows."""
    src4, dst4, _, _, sport, dport = rng.choice(flows)
    data = bytes(rng.getrandbits(8) for _ in range(frame_size - 42))
    return ether(ipv4(src4, dst4, 17, l4(17, src4, dst4, sport, dport, data, False)), 0x0800)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("output")
    ap.add_argument("--packets", type=int, default=100000)
    ap.add_argument("--flows", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--snaplen", type=int, default=1024, help="longer packets are cut (caplen < len)")
    ap.add_argument("--frame-size", type=int, metavar="BYTES",
                    help="only IPv4 UDP frames of exactly BYTES bytes (42 or more; 60 = minimum Ethernet)")
    ap.add_argument("--distinct", type=int, metavar="N",
                    help="make N packets, then repeat them with later timestamps up to --packets")
    args = ap.parse_args()
    if args.frame_size is not None and not 42 <= args.frame_size <= args.snaplen:
        ap.error("--frame-size must be between 42 and --snaplen")
    if args.distinct is not None and args.distinct < 1:
        ap.error("--distinct must be at least 1")
    rng = random.Random(args.seed)
    flows = []
    for _ in range(args.flows):
        flows.append((bytes([10, rng.randrange(256), rng.randrange(256), rng.randrange(1, 255)]),
                      bytes([192, 0, 2, rng.randrange(1, 255)]),
                      bytes([0x20, 0x01, 0x0d, 0xb8] + [rng.randrange(256) for _ in range(12)]),
                      bytes([0x20, 0x01, 0x0d, 0xb8, 0, 1] + [rng.randrange(256) for _ in range(10)]),
                      rng.randrange(1024, 65536), rng.choice([53, 80, 443, 8080, 4789, 123])))
    distinct = min(args.packets, args.distinct or args.packets)
    with open(args.output, "wb") as out:
        out.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, args.snaplen, 1))  # ns timestamps
        made, t_ns = [], 1_700_000_000 * 10**9
        while len(made) < distinct:
            if args.frame_size is None:
                packets = make_packet(rng, flows)
            else:
                packets = make_udp_frame(rng, flows, args.frame_size)
            for frame in packets if isinstance(packets, list) else [packets]:
                if len(made) == distinct:
                    break
                t_ns += rng.randrange(200, 20000)
                made.append((t_ns, frame))
        # Repeats go on from the last timestamp, with the same gaps.
        span = made[-1][0] - made[0][0] + 10000
        records = [(t, struct.pack("<II", min(len(f), args.snaplen), len(f)) + f[:args.snaplen])
                   for t, f in made]
        written, shift, stamp = 0, 0, struct.Struct("<II").pack
        while written < args.packets:
            part = records[:args.packets - written]
            out.write(b"".join(stamp(*divmod(t + shift, 10**9)) + rest for t, rest in part))
            written += len(part)
            shift += span
    print(f"wrote {written} packets to {args.output}")


if __name__ == "__main__":
    main()
