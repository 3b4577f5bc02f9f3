#!/usr/bin/env python3
"""Live capture is exact: every Ethernet capture of the corpus, replayed with
tcpreplay into one end of a veth pair, is captured by `pcapsrc device=` on
the other end exactly once and byte for byte, and gpupacketproc's results
equal those of offline processing of the same packets.

One live pipeline runs through all captures:
  pcapsrc device=RX ! tee ! gpupacketproc mode=cpu ! packetresultenc ! filesink
with a pad probe recording every batch pcapsrc pushes.  After each capture a
marker frame is replayed; once the marker is seen, everything sent before it
has been captured (a veth delivers in order), so the packets between two
markers are compared with the capture's, and the CSV rows between two marker
rows with offline processing.

What tcpreplay cannot send is left out of the expectation: frames shorter
than an Ethernet header or longer than the MTU (tcpreplay's own count of
sent packets must agree).  A frame the capture holds truncated (caplen <
wire length) goes on the wire with its captured bytes only, so live it has
wire length = caplen; the expected results therefore come from offline
processing of exactly what was sent (`sent.pcap`: the frames, wire length =
caplen).  Columns compared: all but `packet` (live numbers count from the
start of the capture session; checked to be consecutive) and `timestamp`
(live capture time; checked to lie within the replay).

Usage: test_live_replay.py PCAP_DIR (run by meson as root; exits 77 when it
cannot create namespaces or lacks tcpreplay)."""
import csv
import io
import os
import sys
import tempfile
import time

import livenet

# The captures are small but one holds 10,000 packets: paced so that a
# 2-core machine running tcpreplay, the pipeline and this probe drops none,
# and sent in parts of at most CHUNK_PACKETS, each waited for before the
# next: the capture ring holds a few thousand packets, and a stall of the
# pipeline under a sanitizer on a loaded machine outlasts 0.1 s of traffic.
# A packet lost all the same still fails the run (a part's wait counts every
# frame captured, so a stray one could end it early; the exact comparison
# per capture below catches any loss regardless).
PACKETS_PER_SECOND = 20000
CHUNK_PACKETS = 1000


offline_rows = livenet.offline_rows
compared = livenet.compared


def main(tx_ns, args):
    data_dir = args[0]
    Gst = livenet.init_gst()
    failures = []
    tmp = tempfile.mkdtemp(prefix="gpp-live-replay-")

    # The expectation per capture: Ethernet frames tcpreplay can send.
    captures = []
    for name in sorted(os.listdir(data_dir)):
        if not name.endswith((".pcap", ".pcapng")):
            continue
        classic = livenet.classic_copy(os.path.join(data_dir, name),
                                       os.path.join(tmp, name + ".classic.pcap"))
        if not classic:
            continue
        linktype, packets = livenet.read_pcap(classic)
        if linktype != livenet.LINKTYPE_ETHERNET:
            continue
        sendable = [p for p in packets if livenet.fits_veth(p[2])]
        if not sendable:
            print(f"{name}: nothing tcpreplay can send on a veth ({len(packets)} packets), skipped")
            continue
        sent = os.path.join(tmp, name + ".sent.pcap")
        livenet.write_pcap(sent, [(ts, len(d), d) for ts, _, d in sendable])
        captures.append((name, os.path.join(data_dir, name), packets, sendable, sent))

    csv_path = os.path.join(tmp, "live.csv")
    pipeline = Gst.parse_launch(
        f"pcapsrc name=src device={livenet.RX_IF} batch-size=64 batch-timeout=2000 "
        f"buffer-size=262144 ! gpupacketproc mode=cpu ! "
        f'packetresultenc format=csv ! filesink location="{csv_path}"')
    src = pipeline.get_by_name("src")
    recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
    if pipeline.set_state(Gst.State.PLAYING) == Gst.StateChangeReturn.FAILURE:
        livenet.wait_bus(pipeline, Gst, lambda m: False, 1)
        raise RuntimeError("the live pipeline did not start")
    # Capturing from here on: set_state returns once pcapsrc has started (the
    # sink completes its state change only with the first buffer).

    windows = []  # (start, end) wall time of each capture's replay
    sent_so_far = 0  # packets sent so far (frames and markers)
    for i, (name, _, packets, sendable, sent) in enumerate(captures):
        marker = livenet.marker_frame(i)
        marker_pcap = os.path.join(tmp, f"marker{i}.pcap")
        livenet.write_pcap(marker_pcap, [(0, len(marker), marker)])
        start = time.time_ns()
        ok = failed = 0
        lost = False
        for first in range(0, len(sendable), CHUNK_PACKETS):
            part = sendable[first:first + CHUNK_PACKETS]
            part_pcap = sent
            if len(part) < len(sendable):
                part_pcap = os.path.join(tmp, f"{name}.part{first}.pcap")
                livenet.write_pcap(part_pcap, [(ts, len(d), d) for ts, _, d in part])
            part_ok, part_failed = livenet.replay(tx_ns, part_pcap, f"--pps={PACKETS_PER_SECOND}")
            ok += part_ok
            failed += part_failed
            sent_so_far += part_ok
            if not recorder.wait_for(lambda _: recorder.packet_count >= sent_so_far, 30):
                failures.append(f"{name}: {recorder.packet_count} of {sent_so_far} packets sent "
                                f"so far captured within 30 s")
                lost = True
                break
        if lost:
            break   # every later wait would time out too
        livenet.replay(tx_ns, marker_pcap, "--topspeed")
        sent_so_far += 1
        windows.append((start, time.time_ns()))
        if ok != len(sendable) or failed:
            failures.append(f"{name}: tcpreplay sent {ok} of {len(sendable)} ({failed} failed)")
        if not recorder.wait_for(lambda batches: any(
                p[3] == marker for _, b in batches for p in b), 30):
            failures.append(f"{name}: marker not captured within 30 s "
                            f"({recorder.packet_count} of {sent_so_far} packets captured)")
            break

    pipeline.send_event(Gst.Event.new_eos())
    if not livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.EOS, 30):
        failures.append("no EOS after the live capture")
    stats = src.get_property("stats")
    pipeline.set_state(Gst.State.NULL)
    print(f"pcapsrc stats: {stats.to_string()}")
    if stats.get_uint64("dropped")[1] or stats.get_uint64("if-dropped")[1]:
        failures.append("drops during the exactness run")

    # Split the capture and the CSV at the markers.
    captured = recorder.packets()
    with open(csv_path, newline="") as fh:
        rows = list(csv.DictReader(fh))
    numbers = [int(r["packet"]) for r in rows]
    if numbers != list(range(1, len(rows) + 1)) or [p[1] for p in captured] != numbers:
        failures.append("live packet numbers are not 1, 2, 3, ... in capture order")
    if len(rows) != len(captured):
        failures.append(f"{len(captured)} packets captured but {len(rows)} result rows")
    seg_packets, seg_rows, pos = [], [], 0
    for i in range(len(captures)):
        marker = livenet.marker_frame(i)
        end = next((j for j in range(pos, len(captured)) if captured[j][3] == marker), None)
        if end is None:
            break
        seg_packets.append(captured[pos:end])
        seg_rows.append(rows[pos:end])
        pos = end + 1
    if pos != len(captured):
        failures.append(f"{len(captured) - pos} packets captured after the last marker")

    total_sent = total_captured = 0
    for i, (name, original, packets, sendable, sent) in enumerate(captures):
        if i >= len(seg_packets):
            failures.append(f"{name}: not captured")
            continue
        got = seg_packets[i]
        total_sent += len(sendable)
        total_captured += len(got)
        problems = []
        if [p[3] for p in got] != [d for _, _, d in sendable]:
            first = next((k for k, (a, b) in enumerate(zip(got, sendable)) if a[3] != b[2]),
                         min(len(got), len(sendable)))
            problems.append(f"captured {len(got)} of {len(sendable)} sent; first byte "
                            f"difference at packet {first + 1}")
        if any(wirelen != len(data) for _, _, wirelen, data in got):
            problems.append("a live wire length differs from the bytes captured")
        start, end = windows[i]
        if not all(start <= ts <= end for ts, _, _, _ in got):
            problems.append("capture timestamps outside the replay's time")
        expected = offline_rows(Gst, sent, os.path.join(tmp, name + ".sent.csv"))
        if [compared(r) for r in seg_rows[i]] != [compared(r) for r in expected]:
            problems.append("results differ from offline processing of the sent packets")
        # Frames sent whole carry the original capture's results too.
        original_rows = offline_rows(Gst, original, os.path.join(tmp, name + ".csv"))
        by_number = {int(r["packet"]): r for r in original_rows}
        whole = [(k, n + 1) for k, n in zip(range(len(got)), (
            idx for idx, p in enumerate(packets) if livenet.fits_veth(p[2])))
            if len(packets[n][2]) == packets[n][1]]
        if any(compared(seg_rows[i][k]) != compared(by_number[n]) for k, n in whole
               if k < len(seg_rows[i])):
            problems.append("results of whole frames differ from offline processing of "
                            "the original capture")
        left_out = len(packets) - len(sendable)
        note = f" ({left_out} unsendable left out)" if left_out else ""
        truncated = sum(1 for _, w, d in sendable if len(d) < w)
        note += f" ({truncated} truncated in the capture)" if truncated else ""
        if problems:
            failures.append(f"{name}: " + "; ".join(problems))
            print(f"FAIL {name}: {'; '.join(problems)}")
        else:
            print(f"ok   {name}: {len(got)}/{len(sendable)} packets byte-identical, "
                  f"results equal{note}")
    print(f"{len(captures)} captures: {total_sent} packets replayed, {total_captured} captured")
    if not captures:
        failures.append("no Ethernet capture found")
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    livenet.run(main)
