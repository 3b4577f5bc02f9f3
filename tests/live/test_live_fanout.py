#!/usr/bin/env python3
"""pcapsrc device= fanout=N: several sockets of one PACKET_FANOUT group, a
thread each, on a veth pair fed with generated traffic of many flows.

(a) Exactness, for fanout=1, 2 and 4 (mode hash) and fanout=2 modes lb,
    rollover, cpu, qm (on a veth of one queue: all to one socket) and
    hash-defrag (the traffic without its IPv4 fragments, see (f)): every
    packet sent is captured exactly once across the sockets (the same
    multiset of frames), packet numbers run 1, 2, 3, ... in push order (the
    CSV's `packet` column too), each record equals offline processing of its
    packet, and the stats add up: packets == sent, received == packets +
    dropped + discarded after NULL, sockets == N.  With hash each flow's
    packets keep their send order and batches of several sockets interleave
    (the capture is not simply the send order, as one socket's would be).
(b) fanout-group: two pcapsrc fanout=2 fanout-group=G together capture
    every packet once (they share one group, as processes do); a third that
    asks for G with another mode fails with a message naming fanout-group.
(c) Errors name the fix: fanout=0, fanout=65, fanout=2 with location=.
(d) Life cycle: 100 PLAYING->NULL cycles of fanout=4 (every tenth with
    traffic), PAUSED<->PLAYING (nothing delivered while PAUSED, counted as
    discarded, capture resuming) and EOS via send_event leave the process's
    fds and threads at their count before.
(e) Without immediate mode the kernel hands a block over only once it is
    closed (here after batch-timeout, 1 s): a frame captured while PAUSED,
    still in the open block when PLAYING comes, is discarded and counted,
    never delivered; the frame sent after PLAYING is.  With fanout=1 (the
    socket read on the streaming thread) and fanout=2 (threads).
(f) hash-defrag: the kernel reassembles IPv4 fragments before the fanout,
    so a datagram sent in three fragments is captured as one packet holding
    the whole datagram (hash: as three).
(g) A batch being built when PAUSED comes (batch-size and batch-timeout
    not reached) is not delivered after PLAYING (fanout=1, where the pause
    unlocks the fill that PLAYING resumes, and fanout=2); it is counted as
    discarded, and a frame sent after PLAYING is delivered.
(i) Offloads on (veth's TSO and GSO, as livenet.run found them): pcapsrc in
    immediate mode warns that its ring holds about 256 packets of 64 KiB
    slots (libpcap's rule) and names "ethtool -K", immediate-mode=false and
    buffer-size; the 16 MiB ring really drops a 1000-packet burst sent while
    the streaming thread is held (and not once they are off).  Without
    immediate mode, or with the offloads off, no such warning.

Usage: test_live_fanout.py MAKE_SAMPLE_PCAP (run by meson as root;
exits 77 where namespaces or tcpreplay are not available)."""
import collections
import csv
import os
import struct
import tempfile
import threading
import time

import livenet

CYCLES = 100
BURST_PACKETS = 1000  # (i): more than 256, far fewer than the ~10,000 of MTU slots
failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
        failures.append(name)


def u64(stats, field):
    return stats.get_uint64(field)[1]


def started(Gst, pipeline, names, timeout=10):
    """Waits for a pcapsrc-stats message from each source in `names`: its
    sockets deliver from then on."""
    waiting = set(names)

    def seen(m):
        if m.type == Gst.MessageType.ELEMENT and \
                m.get_structure().get_name() == "pcapsrc-stats":
            waiting.discard(m.src.get_name())
        return not waiting
    return livenet.wait_bus(pipeline, Gst, seen, timeout) is not None


def bus_error(Gst, description, timeout=10):
    """The GError message of a pipeline expected to fail."""
    pipeline = Gst.parse_launch(description)
    try:
        pipeline.set_state(Gst.State.PLAYING)
        try:
            livenet.wait_bus(pipeline, Gst, lambda m: False, timeout)
        except RuntimeError as e:
            return str(e)
        return None
    finally:
        pipeline.set_state(Gst.State.NULL)


def stop(Gst, pipeline, sources):
    """EOS, then NULL; each source's stats after NULL."""
    pipeline.send_event(Gst.Event.new_eos())
    check("EOS after the capture",
          livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.EOS, 30)
          is not None)
    pipeline.set_state(Gst.State.NULL)
    return [s.get_property("stats") for s in sources]


def exact(Gst, tx_ns, tmp, traffic, fanout, mode):
    """(a) for one fanout and mode."""
    packets, sendable, sent = traffic
    frames = [d for _, _, d in sendable]
    label = f"fanout={fanout} fanout-mode={mode}"
    csv_path = os.path.join(tmp, f"live-{fanout}-{mode}.csv")
    pipeline = Gst.parse_launch(
        f"pcapsrc name=src device={livenet.RX_IF} fanout={fanout} fanout-mode={mode} "
        f"batch-size=64 batch-timeout=2000 stats-interval=100 ! gpupacketproc mode=cpu ! "
        f'packetresultenc format=csv ! filesink location="{csv_path}"')
    src = pipeline.get_by_name("src")
    recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
    pipeline.set_state(Gst.State.PLAYING)
    if not started(Gst, pipeline, ["src"]):
        check(f"{label}: capturing", False, "(no pcapsrc-stats message within 10 s)")
        pipeline.set_state(Gst.State.NULL)
        return
    ok, _ = livenet.replay_chunked(tx_ns, tmp, f"flows-{fanout}-{mode}", sendable,
                                   lambda n, t: recorder.wait_for(
                                       lambda _: recorder.packet_count >= n, t), 0, failures)
    stats = stop(Gst, pipeline, [src])[0]
    print(f"{label} stats: {stats.to_string()}")
    captured = recorder.packets()
    got = [p[3] for p in captured]
    check(f"{label}: tcpreplay sent everything", ok == len(sendable), f"({ok})")
    check(f"{label}: every packet captured exactly once",
          collections.Counter(got) == collections.Counter(frames),
          f"({len(got)} captured, {len(frames)} sent)")
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    numbers = [int(r["packet"]) for r in rows]
    check(f"{label}: packet numbers 1, 2, 3, ... in push order",
          numbers == list(range(1, len(rows) + 1)) and [p[1] for p in captured] == numbers)
    expected = livenet.offline_rows(Gst, sent, os.path.join(tmp, "flows.sent.csv"))
    check(f"{label}: every record equals offline processing of its packet",
          livenet.records_match(frames, got, rows, expected))
    check(f"{label}: stats packets == sent, sockets == {fanout}",
          u64(stats, "packets") == len(frames) and stats.get_uint("sockets")[1] == fanout)
    check(f"{label}: stats received == packets + dropped + discarded, no drops",
          u64(stats, "received") == u64(stats, "packets") + u64(stats, "dropped") +
          u64(stats, "discarded") and u64(stats, "dropped") == 0, stats.to_string())
    if mode in ("hash", "hash-defrag") and fanout > 1:
        check(f"{label}: batches of several sockets interleave (not the send order)",
              got != frames)
        followed, out_of_order = livenet.flows_out_of_order(frames, got)
        check(f"{label}: each of {len(followed)} flows keeps its send order",
              len(followed) >= 20 and not out_of_order, f"({len(out_of_order)} out of order)")
    if fanout == 1:
        check(f"{label}: one socket captures in send order", got == frames)


def shared_group(Gst, tx_ns, tmp, traffic):
    """(b): two sources in one group share the packets."""
    packets, sendable, sent = traffic
    frames = [d for _, _, d in sendable]
    group = 40000 + os.getpid() % 20000
    pipeline = Gst.parse_launch(
        f"pcapsrc name=a device={livenet.RX_IF} fanout=2 fanout-group={group} "
        f"stats-interval=100 batch-size=64 ! fakesink "
        f"pcapsrc name=b device={livenet.RX_IF} fanout=2 fanout-group={group} "
        f"stats-interval=100 batch-size=64 ! fakesink")
    a, b = pipeline.get_by_name("a"), pipeline.get_by_name("b")
    rec_a = livenet.BatchRecorder(Gst, a.get_static_pad("src"))
    rec_b = livenet.BatchRecorder(Gst, b.get_static_pad("src"))
    pipeline.set_state(Gst.State.PLAYING)
    if not started(Gst, pipeline, ["a", "b"]):
        check("fanout-group: both sources capture", False)
        pipeline.set_state(Gst.State.NULL)
        return
    msg = bus_error(Gst, f"pcapsrc device={livenet.RX_IF} fanout=2 fanout-group={group} "
                    f"fanout-mode=lb ! fakesink")
    check("fanout-group taken with another mode: the error names fanout-group and mode",
          msg is not None and f"fanout-group={group}" in msg and "fanout-mode" in msg, repr(msg))

    def counted(n, timeout):
        deadline = time.monotonic() + timeout
        while rec_a.packet_count + rec_b.packet_count < n:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True
    livenet.replay_chunked(tx_ns, tmp, "flows-group", sendable, counted, 0, failures)
    stats = stop(Gst, pipeline, [a, b])
    got = [p[3] for p in rec_a.packets() + rec_b.packets()]
    check("fanout-group: two sources of one group capture every packet once between them",
          collections.Counter(got) == collections.Counter(frames),
          f"({rec_a.packet_count} + {rec_b.packet_count}, sent {len(frames)})")
    check("fanout-group: each source gets a share",
          rec_a.packet_count > 0 and rec_b.packet_count > 0 and
          u64(stats[0], "packets") + u64(stats[1], "packets") == len(frames))


def errors(Gst, tmp):
    """(c)"""
    _, one = livenet.marker_pcap(tmp, 0, "one.pcap")
    for value in (0, 65):
        msg = bus_error(Gst, f"pcapsrc device={livenet.RX_IF} fanout={value} ! fakesink")
        check(f"fanout={value} refused, naming the range",
              msg is not None and f"fanout={value}" in msg and "64" in msg, repr(msg))
    msg = bus_error(Gst, f'pcapsrc location="{one}" fanout=2 ! fakesink')
    check("fanout=2 with location= refused, naming live capture",
          msg is not None and "fanout=2" in msg and "device=" in msg, repr(msg))
    msg = bus_error(Gst, "pcapsrc device=gppnosuch0 fanout=2 ! fakesink")
    check("fanout=2 on a missing interface: the interface's error",
          msg is not None and 'No network interface "gppnosuch0"' in msg, repr(msg))


def lifecycle(Gst, tx_ns, tmp):
    """(d)"""
    _, one = livenet.marker_pcap(tmp, 1, "one-marker.pcap")
    desc = (f"pcapsrc name=src device={livenet.RX_IF} fanout=4 buffer-size=1024 "
            f"batch-size=1 stats-interval=50 ! fakesink")
    baseline = livenet.resources()
    problems = []
    for i in range(CYCLES):
        pipeline = Gst.parse_launch(desc)
        src = pipeline.get_by_name("src")
        recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
        pipeline.set_state(Gst.State.PLAYING)
        if i % 10 == 0:
            if not started(Gst, pipeline, ["src"]):
                problems.append(f"cycle {i}: not capturing")
            livenet.replay(tx_ns, one, "--topspeed")
            if not recorder.wait_for(lambda b: len(b) >= 1, 5):
                problems.append(f"cycle {i}: the packet was not captured")
        pipeline.set_state(Gst.State.NULL)
        del pipeline, src, recorder
    now = livenet.settle_resources(baseline)
    check(f"{CYCLES} PLAYING->NULL cycles of fanout=4: every tenth captures", not problems,
          "; ".join(problems[:3]))
    check(f"{CYCLES} PLAYING->NULL cycles leave no fd or thread behind",
          livenet.nothing_left(now, baseline),
          f"(fds, threads: {baseline} before, {now} after)")

    problems, stats, pushed = livenet.paused_rounds(
        Gst, desc, lambda pipeline: started(Gst, pipeline, ["src"]), tx_ns, one, 5)
    check("PAUSED<->PLAYING x5 with fanout=4: nothing delivered while PAUSED, counted as "
          "discarded, capture resumes", not problems, "; ".join(problems[:3]))
    check("PAUSED<->PLAYING: stats packets == packets pushed",
          u64(stats, "packets") == pushed, f"({u64(stats, 'packets')} vs {pushed})")

    slow = []
    for i in range(10):
        pipeline = Gst.parse_launch(desc)
        pipeline.set_state(Gst.State.PLAYING)
        started(Gst, pipeline, ["src"])
        t0 = time.monotonic()
        pipeline.send_event(Gst.Event.new_eos())
        eos = livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.EOS, 5)
        if not eos or time.monotonic() - t0 > 1:
            slow.append(i)
        pipeline.set_state(Gst.State.NULL)
        del pipeline, eos
    check("EOS via send_event x10 with no traffic: EOS within 1 s", not slow, str(slow))
    now = livenet.settle_resources(baseline)
    check("PAUSED and EOS runs leave no fd or thread behind",
          livenet.nothing_left(now, baseline),
          f"(fds, threads: {baseline} before, {now} after)")


def frames_and_stats(Gst, pipeline, src, recorder):
    """Stops a recorded_source() pipeline: (the frames it pushed, its stats)."""
    frames = [p[3] for p in recorder.packets()]
    return frames, stop(Gst, pipeline, [src])[0]


def recorded_source(Gst, props):
    """`pcapsrc name=src device=RX_IF props ! fakesink`: (pipeline, src, its
    BatchRecorder)."""
    pipeline = Gst.parse_launch(
        f"pcapsrc name=src device={livenet.RX_IF} {props} stats-interval=50 ! fakesink")
    src = pipeline.get_by_name("src")
    return pipeline, src, livenet.BatchRecorder(Gst, src.get_static_pad("src"))


def stale_block(Gst, tx_ns, tmp, fanout):
    """(e) for one fanout."""
    paused_frame, paused_one = livenet.marker_pcap(tmp, 7, "paused.pcap")
    played_frame, played_one = livenet.marker_pcap(tmp, 8, "played.pcap")
    pipeline, src, recorder = recorded_source(
        Gst, f"fanout={fanout} immediate-mode=false batch-size=1 batch-timeout=1000000")
    pipeline.set_state(Gst.State.PAUSED)
    pipeline.get_state(Gst.CLOCK_TIME_NONE)
    livenet.replay(tx_ns, paused_one, "--topspeed")
    time.sleep(0.05)  # well within the 1 s block timeout
    pipeline.set_state(Gst.State.PLAYING)
    livenet.replay(tx_ns, played_one, "--topspeed")
    got = recorder.wait_for(lambda b: recorder.packet_count >= 1, 5)
    time.sleep(1.5)  # the paused frame's block is closed by now: it would be here
    frames, stats = frames_and_stats(Gst, pipeline, src, recorder)
    label = f"fanout={fanout} immediate-mode=false"
    check(f"{label}: the frame sent after PLAYING is delivered once",
          got and frames.count(played_frame) == 1, f"({len(frames)} frames)")
    check(f"{label}: a frame captured while PAUSED, in the block still open at "
          "PLAYING, is not delivered", paused_frame not in frames, f"({len(frames)} frames)")
    check(f"{label}: ... and is counted as discarded", u64(stats, "discarded") >= 1,
          stats.to_string())


def held_batch(Gst, tx_ns, tmp, fanout):
    """(g) for one fanout."""
    held_frame, held_one = livenet.marker_pcap(tmp, 10, "held.pcap")
    played_frame, played_one = livenet.marker_pcap(tmp, 11, "played-after.pcap")
    pipeline, src, recorder = recorded_source(
        Gst, f"fanout={fanout} batch-size=100 batch-timeout=5000000")
    pipeline.set_state(Gst.State.PLAYING)
    label = f"fanout={fanout}"
    if not started(Gst, pipeline, ["src"]):
        check(f"{label}: capturing", False)
        pipeline.set_state(Gst.State.NULL)
        return
    livenet.replay(tx_ns, held_one, "--topspeed")
    time.sleep(0.3)  # read into the batch being built (5 s to its timeout)
    pipeline.set_state(Gst.State.PAUSED)
    pipeline.get_state(Gst.CLOCK_TIME_NONE)
    time.sleep(0.1)
    pipeline.set_state(Gst.State.PLAYING)
    src.set_property("batch-timeout", 1000)
    livenet.replay(tx_ns, played_one, "--topspeed")
    got = recorder.wait_for(lambda b: played_frame in [p[3] for _, batch in b for p in batch], 5)
    time.sleep(0.1)
    frames, stats = frames_and_stats(Gst, pipeline, src, recorder)
    check(f"{label}: a frame in the batch being built at PAUSED is not delivered after PLAYING",
          held_frame not in frames, f"({len(frames)} frames)")
    check(f"{label}: ... it is counted as discarded, and the frame sent after PLAYING is "
          f"delivered", got and frames.count(played_frame) == 1 and
          u64(stats, "discarded") >= 1, stats.to_string())


def ipv4_fragment(frame):
    """Whether an Ethernet frame (VLAN tags skipped) is an IPv4 fragment."""
    at = 12
    while frame[at:at + 2] in (b"\x81\x00", b"\x88\xa8"):
        at += 4
    if frame[at:at + 2] != b"\x08\x00" or len(frame) < at + 2 + 8:
        return False
    flags_offset = int.from_bytes(frame[at + 8:at + 10], "big")
    return flags_offset & 0x3FFF != 0  # more fragments, or an offset


def unfragmented(traffic, tmp):
    """`traffic` without its IPv4 fragments (hash-defrag would join them)."""
    packets, sendable, _ = traffic
    kept = [p for p in sendable if not ipv4_fragment(p[2])]
    sent = os.path.join(tmp, "flows-unfragmented.sent.pcap")
    livenet.write_pcap(sent, [(ts, len(d), d) for ts, _, d in kept])
    return packets, kept, sent


def checksum(data):
    total = sum(int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return (~total) & 0xFFFF


def fragmented_datagram(tmp):
    """A 1200-byte UDP datagram in three IPv4 fragments: (path, datagram length)."""
    payload = bytes(range(256)) * 5
    udp = struct.pack("!HHHH", 40000, 9, 8 + 1192, 0) + payload[:1192]
    frames = []
    for first in range(0, len(udp), 408):  # 408: a multiple of 8
        part = udp[first:first + 408]
        more = first + 408 < len(udp)
        header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(part), 0x4242,
                             (0x2000 if more else 0) | first // 8, 64, 17, 0,
                             bytes([10, 9, 0, 1]), bytes([10, 9, 0, 2]))
        header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
        frames.append(b"\x02\x00\x00\x00\x00\x02\x02\x00\x00\x00\x00\x01\x08\x00" +
                      header + part)
    path = os.path.join(tmp, "fragments.pcap")
    livenet.write_pcap(path, [(i, len(f), f) for i, f in enumerate(frames)])
    return path, 20 + len(udp)


def defrag(Gst, tx_ns, tmp):
    """(f)"""
    path, datagram = fragmented_datagram(tmp)
    for mode, expected in (("hash-defrag", [datagram]), ("hash", [428, 428, 404])):
        pipeline, src, recorder = recorded_source(
            Gst, f"fanout=2 fanout-mode={mode} batch-size=1 batch-timeout=1000")
        pipeline.set_state(Gst.State.PLAYING)
        if not started(Gst, pipeline, ["src"]):
            check(f"fanout-mode={mode}: capturing", False)
            pipeline.set_state(Gst.State.NULL)
            continue
        livenet.replay(tx_ns, path, "--topspeed")
        recorder.wait_for(lambda b: recorder.packet_count >= len(expected), 5)
        time.sleep(0.2)  # nothing more arrives
        stop(Gst, pipeline, [src])
        lengths = [int.from_bytes(p[3][16:18], "big") for p in recorder.packets()
                   if p[3][12:14] == b"\x08\x00" and p[3][26:30] == bytes([10, 9, 0, 1])]
        check(f"fanout-mode={mode}: a datagram sent in three IPv4 fragments is captured as "
              f"IPv4 total lengths {expected}", sorted(lengths) == sorted(expected), f"({lengths})")


def held_burst(Gst, tx_ns, tmp, traffic, props):
    """`pcapsrc props` (one socket, read by the streaming thread) while 1000
    packets come and its first batch is held downstream: (the warnings it
    posted when it started, its stats after NULL)."""
    _, sendable, _ = traffic
    _, marker = livenet.marker_pcap(tmp, 12, "burst-marker.pcap")
    burst = os.path.join(tmp, "burst.pcap")
    livenet.write_pcap(burst, [(ts, len(d), d) for ts, _, d in sendable[:BURST_PACKETS]])
    pipeline = Gst.parse_launch(f"pcapsrc name=src device={livenet.RX_IF} {props} "
                                "batch-size=1 batch-timeout=1000 stats-interval=50 ! fakesink")
    src = pipeline.get_by_name("src")
    warnings = []
    held = threading.Event()

    def hold(pad, info):
        held.set()
        return Gst.PadProbeReturn.OK
    probe = src.get_static_pad("src").add_probe(Gst.PadProbeType.BLOCK | Gst.PadProbeType.BUFFER,
                                                hold)

    def seen(m):
        if m.type == Gst.MessageType.WARNING:
            warnings.append(m.parse_warning()[0].message)
        return m.type == Gst.MessageType.ELEMENT and \
            m.get_structure().get_name() == "pcapsrc-stats"
    pipeline.set_state(Gst.State.PLAYING)
    if livenet.wait_bus(pipeline, Gst, seen, 10) is None:
        pipeline.set_state(Gst.State.NULL)
        return warnings, None
    livenet.replay(tx_ns, marker, "--topspeed")
    if held.wait(5):
        livenet.replay(tx_ns, burst, f"--pps={livenet.PACKETS_PER_SECOND}")
    src.get_static_pad("src").remove_probe(probe)
    # Until the ring is read out: every packet pushed or counted as dropped.
    livenet.poll(lambda: src.get_property("stats"),
                 lambda st: u64(st, "packets") + u64(st, "dropped") >= BURST_PACKETS + 1, 10)
    return warnings, stop(Gst, pipeline, [src])[0]


def offload_warning(Gst, tx_ns, tmp, traffic):
    """(i)"""
    for offloads, props in ((True, "immediate-mode=true"), (True, "immediate-mode=false"),
                            (False, "immediate-mode=true")):
        livenet.set_offloads(livenet.RX_IF, offloads)
        warnings, stats = held_burst(Gst, tx_ns, tmp, traffic, props)
        livenet.set_offloads(livenet.RX_IF, False)
        label = f"offloads {'on' if offloads else 'off'}, {props}"
        if stats is None:
            check(f"{label}: capturing", False, "(no pcapsrc-stats message within 10 s)")
            continue
        told = [w for w in warnings if "has offloads on" in w]
        dropped = u64(stats, "dropped")
        if offloads and props == "immediate-mode=true":
            check(f"{label}: warns of 64 KiB slots, about 256 packets in the ring, and names "
                  "the fixes", len(told) == 1 and "about 256 packets" in told[0] and
                  f"ethtool -K {livenet.RX_IF} tso off gso off" in told[0] and
                  "immediate-mode=false" in told[0] and "buffer-size" in told[0], repr(warnings))
            check(f"{label}: a held burst of {BURST_PACKETS} overflows the ring, counted as "
                  "dropped", 0 < dropped < BURST_PACKETS and
                  u64(stats, "received") == u64(stats, "packets") + dropped +
                  u64(stats, "discarded"), stats.to_string())
        else:
            check(f"{label}: no offload warning", not told, repr(warnings))
            check(f"{label}: a held burst of {BURST_PACKETS} fits the ring",
                  dropped == 0 and u64(stats, "packets") == BURST_PACKETS + 1,
                  stats.to_string())


def main(tx_ns, args):
    make_sample = args[0]
    Gst = livenet.init_gst()
    tmp = tempfile.mkdtemp(prefix="gpp-live-fanout-")
    path = livenet.generate(make_sample, os.path.join(tmp, "flows.pcap"), "--packets", "3000",
                            "--flows", "64", "--seed", "31")
    traffic = livenet.sendable_copy(path, tmp, "flows")
    for fanout, mode in ((1, "hash"), (2, "hash"), (4, "hash"), (2, "lb"), (2, "rollover"),
                         (2, "cpu"), (2, "qm")):
        exact(Gst, tx_ns, tmp, traffic, fanout, mode)
    exact(Gst, tx_ns, tmp, unfragmented(traffic, tmp), 2, "hash-defrag")
    shared_group(Gst, tx_ns, tmp, traffic)
    errors(Gst, tmp)
    lifecycle(Gst, tx_ns, tmp)
    for fanout in (1, 2):
        stale_block(Gst, tx_ns, tmp, fanout)
    for fanout in (1, 2):
        held_batch(Gst, tx_ns, tmp, fanout)
    # (h) PLAYING again while the streaming thread still pushes a batch from
    # before the pause: what arrives meanwhile is delivered.
    for fanout in (1, 2):
        problems = livenet.played_while_pushing(
            Gst, tx_ns, tmp, f"pcapsrc name=src device={livenet.RX_IF} fanout={fanout} "
            "batch-size=1 batch-timeout=1000 stats-interval=600000 ! fakesink")
        check(f"fanout={fanout}: a frame captured after PLAYING while the batch from before "
              "the pause is still being pushed is delivered once", not problems,
              "; ".join(problems))
    defrag(Gst, tx_ns, tmp)
    offload_warning(Gst, tx_ns, tmp, traffic)
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    # A 1500-byte MTU, offloads off (livenet.run): libpcap sizes immediate
    # mode's ring slots by the MTU, so each socket's default ring holds
    # about 10,000 frames, not 256 of 64 KiB (no drops on a slow machine
    # while a socket's thread waits; with qm one socket takes every packet).
    livenet.run(main, mtu=1500)
