#!/usr/bin/env python3
"""AF_XDP capture is exact: Ethernet captures of the corpus and generated
traffic, replayed with tcpreplay into one end of a veth pair, are captured
by `afxdpsrc device=` on the other end exactly once and byte for byte, and
gpupacketproc's results equal those of offline processing of what was sent.

With one receive queue (QUEUES 1) the approach is test_live_replay.py's: one
live pipeline
  afxdpsrc device=RX ! gpupacketproc mode=cpu ! packetresultenc ! filesink
with a pad probe recording every batch, a marker frame after each capture
(a queue delivers in order, so once the marker is seen everything before it
has been captured), and the packets and CSV rows between two markers
compared with the capture's and with offline processing of exactly what was
sent.  Timestamps must lie between the start of the capture's replay and the
push of the packet's batch; packet numbers run 1, 2, 3, ... in push order.

With four receive queues (QUEUES 4; the sender's end has four transmit
queues, so the flow hash spreads tcpreplay's flows over them), generated
traffic of many flows:
- afxdpsrc queues=all captures every packet exactly once (the same multiset
  of frames), each flow's packets in their send order, numbers 1, 2, 3, ...
  in push order, each record equal to offline processing of its packet;
- afxdpsrc queues=0-0, then 1-1, 2-2 and 3-3, each fed the same traffic,
  together capture every packet once, each flow on one queue only, and more
  than one queue gets packets (the spread is real).
Both check stats: packets == sent, discarded == 0, no kernel drops at this
gentle rate, queues and xdp-mode (native on a veth) as expected.

The veth's MTU is livenet.XDP_MTU (native XDP refuses a larger one on a
veth), so longer frames of the corpus are left out of the expectation.

With SOURCE_PROPS (one queue), afxdpsrc gets them too: frames-in-place=true
must give the same packets and records, and its stats say the frames are in
place ("host", or "device-mapped" where a GPU registered them); with
GPP_LIVE_PROC_MODE=zerocopy or persistent (the GPU host) and device-mapped
frames gpupacketproc copies no batch.

Usage: test_afxdp_replay.py PCAP_DIR MAKE_SAMPLE_PCAP [QUEUES [SOURCE_PROPS]]
(run by meson as root; exits 77 where namespaces, tcpreplay or AF_XDP are not
available).  GPP_LIVE_PROC_MODE: gpupacketproc's mode (default cpu)."""
import collections
import csv
import os
import struct
import sys
import tempfile
import time

import livenet

PROC_MODE = os.environ.get("GPP_LIVE_PROC_MODE", "cpu")
SENDER_CPU = 0
failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
        failures.append(name)


def start_capture(Gst, pipeline, sources):
    """PLAYING, and waits until every source captures: a source delivers
    what arrives once its streaming thread has started the queues, which it
    says with its first afxdpsrc-stats message (stats-interval)."""
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        livenet.wait_bus(pipeline, Gst, lambda m: False, 1)
        raise RuntimeError("the live pipeline did not start")
    waiting = set(s.get_name() for s in sources)

    def started(m):
        if m.type == Gst.MessageType.ELEMENT and \
                m.get_structure().get_name() == "afxdpsrc-stats":
            waiting.discard(m.src.get_name())
        return not waiting
    if not livenet.wait_bus(pipeline, Gst, started, 10):
        raise RuntimeError(f"no afxdpsrc-stats message from {waiting} within 10 s")


def stop_capture(Gst, pipeline, sources):
    """EOS, then NULL; the sources' stats just before NULL and after it."""
    pipeline.send_event(Gst.Event.new_eos())
    check("EOS after the live capture",
          livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.EOS, 30)
          is not None)
    before = [s.get_property("stats") for s in sources]
    pipeline.set_state(Gst.State.NULL)
    after = [s.get_property("stats") for s in sources]
    for s, st in zip(sources, before):
        print(f"{s.get_name()} stats: {st.to_string()}")
    return before, after


def u64(stats, field):
    return stats.get_uint64(field)[1]


def check_stats(label, before, after, packets, queues, may_discard=0):
    """`may_discard`: frames that may still arrive after the test's last
    look and be held at the stop (markers sent after the one awaited)."""
    kernel = {f: u64(before, f) for f in ("rx-dropped", "rx-invalid-descs", "rx-ring-full",
                                         "rx-fill-ring-empty")}
    check(f"{label}: stats packets == sent, after NULL too",
          u64(before, "packets") == packets and u64(after, "packets") == packets,
          f"({u64(before, 'packets')}, {u64(after, 'packets')}; sent {packets})")
    check(f"{label}: stats discarded == 0 (everything sent while PLAYING)"
          + (f", but for at most {may_discard} late markers at the stop" if may_discard else ""),
          u64(before, "discarded") == 0 and u64(after, "discarded") <= may_discard,
          f"({u64(before, 'discarded')}, after NULL {u64(after, 'discarded')})")
    # rx-fill-ring-empty may count a kernel look at an empty fill ring while
    # the thread refills; drops are what lose packets.
    check(f"{label}: no kernel drops at a gentle rate",
          kernel["rx-dropped"] == 0 and kernel["rx-ring-full"] == 0 and
          kernel["rx-invalid-descs"] == 0, str(kernel))
    check(f"{label}: dropped == rx-dropped + rx-ring-full",
          u64(before, "dropped") == kernel["rx-dropped"] + kernel["rx-ring-full"],
          f"({u64(before, 'dropped')})")
    check(f"{label}: queues {queues}, native XDP, copy mode on a veth",
          before.get_uint("queues")[1] == queues and
          before.get_string("xdp-mode") == "native" and
          before.get_boolean("zero-copy") == (True, False))


# --- one queue -----------------------------------------------------------------

def one_queue(Gst, tx_ns, data_dir, make_sample, tmp, source_props):
    captures = []
    names = sorted(n for n in os.listdir(data_dir) if n.endswith((".pcap", ".pcapng")))
    for name in names:
        got = livenet.sendable_copy(os.path.join(data_dir, name), tmp, name)
        if got:
            captures.append((name, *got))
    for name, options in (("generated-mixed.pcap", ("--packets", "3000", "--flows", "48",
                                                     "--seed", "11")),
                          ("generated-60B.pcap", ("--packets", "2000", "--frame-size", "60",
                                                  "--seed", "12"))):
        path = livenet.generate(make_sample, os.path.join(tmp, name), *options)
        captures.append((name, *livenet.sendable_copy(path, tmp, name)))

    csv_path = os.path.join(tmp, "live.csv")
    pipeline = Gst.parse_launch(
        f"afxdpsrc name=src device={livenet.RX_IF} batch-size=64 batch-timeout=2000 "
        f"stats-interval=600000 {source_props} ! gpupacketproc name=proc mode={PROC_MODE} ! "
        f'packetresultenc format=csv ! filesink location="{csv_path}"')
    src = pipeline.get_by_name("src")
    recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
    start_capture(Gst, pipeline, [src])

    def counted(n, timeout):
        return recorder.wait_for(lambda _: recorder.packet_count >= n, timeout)

    windows = []
    sent_so_far = 0
    for i, (name, packets, sendable, sent) in enumerate(captures):
        marker = livenet.marker_frame(i)
        marker_pcap = os.path.join(tmp, f"marker{i}.pcap")
        livenet.write_pcap(marker_pcap, [(0, len(marker), marker)])
        start = time.time_ns()
        ok, lost = livenet.replay_chunked(tx_ns, tmp, name, sendable, counted, sent_so_far,
                                          failures)
        sent_so_far += ok
        if lost:
            break
        livenet.replay(tx_ns, marker_pcap, "--topspeed")
        sent_so_far += 1
        windows.append(start)
        if ok != len(sendable):
            failures.append(f"{name}: tcpreplay sent {ok} of {len(sendable)}")
        if not recorder.wait_for(lambda batches: any(
                p[3] == marker for _, b in batches for p in b), 30):
            failures.append(f"{name}: marker not captured within 30 s")
            break
    before, after = stop_capture(Gst, pipeline, [src])
    check_stats("one queue", before[0], after[0], sent_so_far, 1)
    in_place = before[0].get_string("frames-in-place")
    if "frames-in-place=true" in source_props:
        check("frames in place: stats say so", in_place in ("host", "device-mapped"),
              f"({in_place})")
        proc_stats = pipeline.get_by_name("proc").get_property("stats")
        copied = proc_stats.get_uint64("copied-batches")[1]
        if in_place == "device-mapped" and PROC_MODE in ("zerocopy", "persistent"):
            check(f"frames in place: mode={PROC_MODE} reads them there (copied-batches 0)",
                  copied == 0, f"({copied})")
    else:
        check("frames copied: stats say so", in_place == "off", f"({in_place})")

    pushed_at = [t for t, b in recorder.batches for _ in b]
    captured = recorder.packets()
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    numbers = [int(r["packet"]) for r in rows]
    check("packet numbers 1, 2, 3, ... in push order, one record each",
          numbers == list(range(1, len(rows) + 1)) and [p[1] for p in captured] == numbers,
          f"({len(captured)} packets, {len(rows)} records)")
    check("wire length = bytes captured (a veth carries what was sent)",
          all(w == len(d) for _, _, w, d in captured))
    pos = 0
    total = 0
    for i, (name, packets, sendable, sent) in enumerate(captures):
        marker = livenet.marker_frame(i)
        end = next((j for j in range(pos, len(captured)) if captured[j][3] == marker), None)
        if end is None:
            check(f"{name}: captured", False)
            continue
        got, got_rows, stamps = captured[pos:end], rows[pos:end], pushed_at[pos:end]
        problems = []
        if [p[3] for p in got] != [d for _, _, d in sendable]:
            first = next((k for k, (a, b) in enumerate(zip(got, sendable)) if a[3] != b[2]),
                         min(len(got), len(sendable)))
            problems.append(f"captured {len(got)} of {len(sendable)} sent; first difference "
                            f"at packet {first + 1}")
        if not all(windows[i] <= p[0] <= t for p, t in zip(got, stamps)):
            problems.append("timestamps outside [replay start, push of the batch]")
        expected = livenet.offline_rows(Gst, sent, os.path.join(tmp, name + ".sent.csv"))
        if [livenet.compared(r) for r in got_rows] != [livenet.compared(r) for r in expected]:
            problems.append("results differ from offline processing of the sent packets")
        total += len(got)
        left_out = len(packets) - len(sendable)
        check(f"{name}: {len(got)}/{len(sendable)} exactly once, byte-identical, results "
              f"equal" + (f" ({left_out} too long for the veth left out)" if left_out else ""),
              not problems, "; ".join(problems))
        pos = end + 1
    check("nothing captured after the last marker", pos == len(captured),
          f"({len(captured) - pos} packets)")
    print(f"{len(captures)} captures: {total} packets captured")


# --- four queues ---------------------------------------------------------------

def four_queues(Gst, tx_ns, make_sample, tmp):
    path = livenet.generate(make_sample, os.path.join(tmp, "flows.pcap"), "--packets", "4000",
                    "--flows", "64", "--seed", "21")
    packets, sendable, sent = livenet.sendable_copy(path, tmp, "flows.pcap")
    frames = [d for _, _, d in sendable]
    expected = livenet.offline_rows(Gst, sent, os.path.join(tmp, "flows.sent.csv"))

    # queues=all: every packet once, flows in order, records equal.
    csv_path = os.path.join(tmp, "live-mq.csv")
    pipeline = Gst.parse_launch(
        f"afxdpsrc name=src device={livenet.RX_IF} queues=all batch-size=64 "
        f"batch-timeout=2000 stats-interval=600000 ! gpupacketproc mode=cpu ! "
        f'packetresultenc format=csv ! filesink location="{csv_path}"')
    src = pipeline.get_by_name("src")
    recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
    start_capture(Gst, pipeline, [src])
    start = time.time_ns()
    ok, _ = livenet.replay_chunked(tx_ns, tmp, "flows.pcap", sendable,
                                   lambda n, t: recorder.wait_for(
                                       lambda _: recorder.packet_count >= n, t), 0, failures,
                                   cpu=SENDER_CPU)
    before, after = stop_capture(Gst, pipeline, [src])
    check("queues=all: tcpreplay sent everything", ok == len(sendable), f"({ok})")
    check_stats("queues=all", before[0], after[0], len(sendable), 4)
    captured = recorder.packets()
    got = [p[3] for p in captured]
    check("queues=all: every packet captured exactly once",
          collections.Counter(got) == collections.Counter(frames),
          f"({len(got)} captured, {len(frames)} sent)")
    check("queues=all: packets interleave across queues (not simply send order)",
          got != frames)
    followed, out_of_order = livenet.flows_out_of_order(frames, got)
    check(f"queues=all: each of {len(followed)} flows keeps its send order",
          len(followed) >= 20 and not out_of_order, f"({len(out_of_order)} out of order)")
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    numbers = [int(r["packet"]) for r in rows]
    check("queues=all: packet numbers 1, 2, 3, ... in push order",
          numbers == list(range(1, len(rows) + 1)) and [p[1] for p in captured] == numbers)
    check("queues=all: timestamps within the replay",
          all(start <= p[0] <= t for (t, b) in recorder.batches for p in b))
    check("queues=all: every record equals offline processing of its packet",
          livenet.records_match(frames, got, rows, expected))

    # Two afxdpsrc in one pipeline, queues 0-1 and 2-3 of the interface:
    # they share its XDP program, and every packet is captured once by one.
    pipeline = Gst.parse_launch(" ".join(
        f"afxdpsrc name={name} device={livenet.RX_IF} queues={queues} batch-size=64 "
        f"batch-timeout=2000 stats-interval=600000 ! fakesink"
        for name, queues in (("low", "0-1"), ("high", "2-3"))))
    halves = [pipeline.get_by_name("low"), pipeline.get_by_name("high")]
    recorders = [livenet.BatchRecorder(Gst, h.get_static_pad("src")) for h in halves]
    start_capture(Gst, pipeline, halves)
    captured_by_both = lambda: sum(r.packet_count for r in recorders)
    ok, _ = livenet.replay_chunked(
        tx_ns, tmp, "flows-halves.pcap", sendable,
        lambda n, t: livenet.poll(captured_by_both, lambda c: c >= n, t) >= n, 0, failures,
        cpu=SENDER_CPU)
    stop_capture(Gst, pipeline, halves)
    got = [[p[3] for p in r.packets()] for r in recorders]
    check("two afxdpsrc on queues 0-1 and 2-3: every packet captured exactly once by one of "
          "them", ok == len(sendable) and
          collections.Counter(got[0] + got[1]) == collections.Counter(frames),
          f"({len(got[0])} + {len(got[1])} captured, {len(frames)} sent)")
    check("two afxdpsrc: each captured some", all(got), f"({[len(g) for g in got]})")
    check("two afxdpsrc: no XDP program left after NULL",
          livenet.xdp_attached(livenet.RX_IF) == "")

    # Which queue each flow takes: afxdpsrc queues=q-q for each queue in turn
    # (the others' packets go to the stack), the same traffic each time, then
    # marker frames of many UDP flows: a queue delivers in order, so once one
    # of them is seen the queue's share of the traffic has been captured.
    markers = [marker_udp(n) for n in range(64)]
    with_markers = sendable + [(0, len(m), m) for m in markers]
    per_queue = []
    for q in range(4):
        pipeline = Gst.parse_launch(
            f"afxdpsrc name=src device={livenet.RX_IF} queues={q}-{q} batch-size=64 "
            f"batch-timeout=2000 stats-interval=600000 ! fakesink")
        src = pipeline.get_by_name("src")
        recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
        start_capture(Gst, pipeline, [src])
        livenet.write_pcap(os.path.join(tmp, "flows-markers.pcap"),
                           [(ts, len(d), d) for ts, _, d in with_markers])
        livenet.replay(tx_ns, os.path.join(tmp, "flows-markers.pcap"),
                       f"--pps={livenet.PACKETS_PER_SECOND}", cpu=SENDER_CPU)
        seen = recorder.wait_for(lambda batches: any(
            p[3] in markers for _, b in batches for p in b), 30)
        before, after = stop_capture(Gst, pipeline, [src])
        got = recorder.packets()
        data = [p[3] for p in got if p[3] not in markers]
        check(f"queues={q}-{q}: a marker captured", seen)
        # The stop comes once one marker is seen; this queue's later markers
        # may arrive meanwhile, held in the open batch and discarded at NULL.
        late = len(markers) - sum(1 for p in got if p[3] in markers)
        check_stats(f"queues={q}-{q}", before[0], after[0], len(got), 1, may_discard=late)
        per_queue.append(data)
    counts = [len(d) for d in per_queue]
    check("queue by queue: every packet captured exactly once overall",
          collections.Counter(d for p in per_queue for d in p) == collections.Counter(frames),
          f"(per queue {counts}, sent {len(frames)})")
    check("queue by queue: the flow hash spreads the traffic over several queues",
          sum(1 for c in counts if c) >= 2, f"({counts})")
    queue_of, split = {}, set()
    for q, data in enumerate(per_queue):
        for d in data:
            k = livenet.flow_key(d)
            if k is not None and queue_of.setdefault(k, q) != q:
                split.add(k)
    check("queue by queue: each flow on one queue only", not split,
          f"({len(split)} flows on several)")


def marker_udp(n):
    """An IPv4 UDP frame of flow n (no capture holds such a frame)."""
    payload = b"gpupacket afxdp marker %04d" % n
    udp = struct.pack("!HHHH", 40000 + n, 9, 8 + len(payload), 0) + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), n, 0, 64, 17, 0,
                     bytes([198, 18, 0, 1]), bytes([198, 18, 0, 2]))
    return (b"\x02\x00\x00\x00\x00\x02" + b"\x02\x00\x00\x00\x00\x01" + b"\x08\x00" +
            ip + udp).ljust(60, b"\0")


def main(tx_ns, args):
    data_dir, make_sample = args[0], args[1]
    queues = int(args[2]) if len(args) > 2 else 1
    source_props = args[3] if len(args) > 3 else ""
    Gst = livenet.init_gst()
    if not Gst.ElementFactory.find("afxdpsrc"):
        livenet.skip("this build has no afxdpsrc (libxdp missing at configure time)")
    tmp = tempfile.mkdtemp(prefix="gpp-afxdp-replay-")
    if queues == 1:
        one_queue(Gst, tx_ns, data_dir, make_sample, tmp, source_props)
    else:
        four_queues(Gst, tx_ns, make_sample, tmp)
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    livenet.run(main, mtu=livenet.XDP_MTU,
                queues=int(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[1] != "--inner"
                else int(sys.argv[5]) if len(sys.argv) > 5 else 1,
                af_xdp=True)
