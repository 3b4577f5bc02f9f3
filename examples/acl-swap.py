#!/usr/bin/python3
"""Python (PyGObject) example: runs  pcapsrc ! gpupacketproc ! appsink,  reads the
per-packet result records, and swaps the ACL rule file while the pipeline plays.

    examples/acl-swap.py CAPTURE [--batch-size N] [--swap-after N] [--mode MODE]

It writes two rule files: the first drops TCP, the second drops UDP.  After
--swap-after batches it sets gpupacketproc's acl-rules to the second file.
gpupacketproc loads the new file in this (the application's) thread and
swaps it in between batches, so every batch is judged wholly by one rule set:
the script checks that, batch by batch, and prints what it saw.
"""
import argparse
import os
import struct
import sys
import tempfile

import gi

gi.require_version("Gst", "1.0")
gi.require_version("GstApp", "1.0")
from gi.repository import Gst, GstApp  # noqa: E402

# GppResult (include/gpupacket/packet-result.h): 128 bytes per packet,
# little-endian.  The fields this example reads, at their offsets:
RECORD_SIZE = 128
PACKET_NUMBER = struct.Struct("<Q")  # offset 0
L4_PROTO = struct.Struct("<B")       # offset 44
ACL_RULE = struct.Struct("<i")       # offset 104
ACL_ACTION = struct.Struct("<B")     # offset 108
ALLOW, DROP = 1, 2

DROP_TCP = "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x06/0xFF drop\n" \
           "@::/0 ::/0 0 : 65535 0 : 65535 0x06/0xFF drop\n"
DROP_UDP = "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x11/0xFF drop\n" \
           "@::/0 ::/0 0 : 65535 0 : 65535 0x11/0xFF drop\n"


def judge(records):
    """Which rule set judged a batch: 'tcp', 'udp', or None if it cannot tell."""
    seen = set()
    for off in range(0, len(records), RECORD_SIZE):
        proto = L4_PROTO.unpack_from(records, off + 44)[0]
        action = ACL_ACTION.unpack_from(records, off + 108)[0]
        if proto in (6, 17):
            dropped = action == DROP
            seen.add(("tcp" if proto == 6 else "udp") if dropped else
                     ("udp" if proto == 6 else "tcp"))
    return seen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("capture")
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--swap-after", type=int, default=5)
    ap.add_argument("--mode", default="cpu")
    args = ap.parse_args()

    Gst.init(None)
    tmp = tempfile.TemporaryDirectory()  # removed when the script ends
    rules = []
    for name, text in (("drop-tcp.rules", DROP_TCP), ("drop-udp.rules", DROP_UDP)):
        rules.append(os.path.join(tmp.name, name))
        with open(rules[-1], "w") as fh:
            fh.write(text)

    pipeline = Gst.parse_launch(
        f"pcapsrc name=src batch-size={args.batch_size} ! "
        f"gpupacketproc name=proc mode={args.mode} default-action=allow ! "
        "appsink name=sink sync=false max-buffers=1")
    pipeline.get_by_name("src").set_property("location", args.capture)
    proc = pipeline.get_by_name("proc")
    proc.set_property("acl-rules", rules[0])
    sink = pipeline.get_by_name("sink")
    bus = pipeline.get_bus()
    pipeline.set_state(Gst.State.PLAYING)

    batches = packets = dropped = 0
    judged = []  # per batch: the rule set that judged it
    status = 0
    while True:
        sample = sink.try_pull_sample(Gst.SECOND)
        if sample is None:
            msg = bus.pop_filtered(Gst.MessageType.ERROR)
            if msg:
                err, debug = msg.parse_error()
                print(f"ERROR: {err.message}\n{debug}", file=sys.stderr)
                status = 1
                break
            if sink.is_eos():
                break
            continue
        buf = sample.get_buffer()
        ok, info = buf.map(Gst.MapFlags.READ)
        records = bytes(info.data)
        buf.unmap(info)
        batches += 1
        packets += len(records) // RECORD_SIZE
        dropped += sum(ACL_ACTION.unpack_from(records, off + 108)[0] == DROP
                       for off in range(0, len(records), RECORD_SIZE))
        seen = judge(records)
        if len(seen) > 1:
            first = PACKET_NUMBER.unpack_from(records, 0)[0]
            print(f"batch from packet {first} was judged by both rule sets", file=sys.stderr)
            status = 1
        judged.append(seen.pop() if seen else None)
        if batches == args.swap_after:
            print(f"after {batches} batches: acl-rules={rules[1]}")
            proc.set_property("acl-rules", rules[1])
    pipeline.set_state(Gst.State.NULL)

    order = [j for j in judged if j]
    switched = order.count("tcp") and order.count("udp") and order == sorted(order)
    print(f"{batches} batches, {packets} packets, {dropped} dropped; "
          f"batches judged by drop-tcp: {order.count('tcp')}, by drop-udp: {order.count('udp')}")
    if batches > args.swap_after + 1 and not switched:
        print("expected the drop-tcp batches first, then only drop-udp ones", file=sys.stderr)
        status = 1
    print("every batch was judged wholly by one rule set" if status == 0 else "FAILED")
    return status


if __name__ == "__main__":
    sys.exit(main())
