#!/usr/bin/env python3
"""A burst at top speed: nothing is lost silently.  tcpreplay --topspeed sends
a 10,000-packet capture several times into the veth while
  pcapsrc device=RX (a deliberately small ring) ! gpupacketproc ! fakesink
captures; every sent packet must be accounted for in pcapsrc's stats, either
captured (pushed downstream, and processed by gpupacketproc) or dropped by
the kernel, and the counts are reported.

Usage: test_live_burst.py PCAP_DIR (run by meson as root; exits 77 when it
cannot create namespaces or lacks tcpreplay)."""
import os
import sys
import time

import livenet

CAPTURE = "sv__dhcp-request-flood.pcap"
LOOPS = 5
RING_KIB = 4096   # a few dozen slots of the 64 KiB the veth's MTU asks for


def main(tx_ns, args):
    Gst = livenet.init_gst()
    capture = os.path.join(args[0], CAPTURE)
    pipeline = Gst.parse_launch(
        f"pcapsrc name=src device={livenet.RX_IF} batch-size=256 batch-timeout=1000 "
        f"buffer-size={RING_KIB} ! gpupacketproc name=proc mode=cpu ! fakesink")
    src, proc = pipeline.get_by_name("src"), pipeline.get_by_name("proc")
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        livenet.wait_bus(pipeline, Gst, lambda m: False, 1)
        raise RuntimeError("the live pipeline did not start")

    start = time.monotonic()
    sent, failed = livenet.replay(tx_ns, capture, "--topspeed", f"--loop={LOOPS}")
    send_s = time.monotonic() - start
    veth_dropped = livenet.veth_counter(tx_ns, livenet.TX_IF, "tx_dropped")

    def counts():
        s = src.get_property("stats")
        c = {k: s.get_uint64(k)[1] for k in ("received", "packets", "dropped", "if-dropped")}
        c["processed"] = proc.get_property("stats").get_uint64("packets")[1]
        return c

    # Done when the kernel has seen every packet, pcapsrc has taken every one
    # the ring kept and gpupacketproc has processed them (or 20 s pass: then
    # the assertions below report).
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        c = counts()
        if (c["received"] >= sent and c["packets"] + c["dropped"] >= c["received"]
                and c["processed"] >= c["packets"]):
            break
        livenet.wait_bus(pipeline, Gst, lambda m: False, 0.05)
    c = counts()
    processed = c["processed"]
    pipeline.set_state(Gst.State.NULL)
    discarded = src.get_property("stats").get_uint64("discarded")[1]

    print(f"sent {sent} packets ({failed} failed) in {send_s:.2f} s "
          f"({sent / send_s:,.0f} packets/s); veth tx_dropped {veth_dropped}")
    print(f"pcapsrc: received {c['received']}, captured {c['packets']}, "
          f"dropped {c['dropped']} (kernel), {c['if-dropped']} (interface), "
          f"discarded {discarded}; gpupacketproc processed {processed}")
    failures = []
    if sent != LOOPS * 10000 or failed:
        failures.append("tcpreplay did not send every packet")
    if c["received"] != sent - veth_dropped:
        failures.append(f"the kernel saw {c['received']} packets of {sent - veth_dropped}")
    if c["packets"] + c["dropped"] + discarded != c["received"]:
        failures.append("captured + dropped + discarded do not add up to received: "
                        "packets lost silently")
    if processed != c["packets"]:
        failures.append("gpupacketproc did not process exactly the packets pcapsrc pushed")
    if not c["packets"]:
        failures.append("nothing captured")
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    livenet.run(main)
