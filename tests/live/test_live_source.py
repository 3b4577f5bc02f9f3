#!/usr/bin/env python3
"""pcapsrc device= as a live source: batch timeout, latency, stopping, stats
messages and errors.

- A single packet is pushed batch-timeout after its capture, within a small
  margin, and not before; batch-size still closes a batch early; changing
  batch-timeout while PLAYING posts a LATENCY message and applies.
- The pipeline's latency is pcapsrc's batch-timeout plus gpupacketproc's
  processing latency; gpupacketproc's capture-latency stats see the wait.
- It is live (no preroll), posts pcapsrc-stats messages, and stops at once
  with no traffic, counting a batch it had begun as discarded.
- A missing interface, no CAP_NET_RAW, a bad filter, location and device
  together: errors naming the cause and the remedy.

Usage: test_live_source.py GST_LAUNCH (run by meson as root; exits 77 when it
cannot create namespaces or lacks tcpreplay)."""
import os
import shutil
import subprocess
import sys
import tempfile
import time

import livenet

MARGIN_MS = 25  # scheduling slack allowed beyond batch-timeout
failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
        failures.append(name)


def wait_stat(element, field, at_least, seconds=5):
    """Waits until `element`'s stats hold `field` >= `at_least`; whether they do."""
    deadline = time.monotonic() + seconds
    while element.get_property("stats").get_uint64(field)[1] < at_least:
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.01)
    return True


def launch_error(gst_launch, pipeline, prefix=()):
    proc = subprocess.run([*prefix, gst_launch, "-q", *pipeline.split()],
                          capture_output=True, text=True, timeout=30)
    return proc.returncode, proc.stdout + proc.stderr


def main(tx_ns, args):
    gst_launch = args[0]
    Gst = livenet.init_gst()
    tmp = tempfile.mkdtemp(prefix="gpp-live-source-")
    frames = [livenet.marker_frame(n) for n in range(4)]
    one = os.path.join(tmp, "one.pcap")
    four = os.path.join(tmp, "four.pcap")
    livenet.write_pcap(one, [(0, len(frames[0]), frames[0])])
    livenet.write_pcap(four, [(0, len(f), f) for f in frames])

    pipeline = Gst.parse_launch(
        f"pcapsrc name=src device={livenet.RX_IF} batch-size=1000 batch-timeout=50000 "
        f"stats-interval=100 ! gpupacketproc name=proc mode=cpu ! fakesink name=sink sync=true")
    src, proc = pipeline.get_by_name("src"), pipeline.get_by_name("proc")
    # A synchronising sink adds its processing deadline to the pipeline latency.
    sink_deadline = pipeline.get_by_name("sink").get_property("processing-deadline")
    recorder = livenet.BatchRecorder(Gst, proc.get_static_pad("sink"))
    check("live: no preroll",
          pipeline.set_state(Gst.State.PAUSED) == Gst.StateChangeReturn.NO_PREROLL)
    pipeline.set_state(Gst.State.PLAYING)

    def push_delay_ms(pcap, expect_batches):
        livenet.replay(tx_ns, pcap, "--topspeed")
        if not recorder.wait_for(lambda b: len(b) >= expect_batches, 10):
            return None
        pushed, packets = recorder.batches[expect_batches - 1]
        return (pushed - packets[0][0]) / 1e6, len(packets)

    # One packet waits batch-timeout (50 ms) from its capture, then leaves.
    delay, count = push_delay_ms(one, 1)
    check("one packet pushed batch-timeout after capture",
          count == 1 and 50 <= delay <= 50 + MARGIN_MS, f"({delay:.2f} ms, timeout 50 ms)")
    # The recorder sees a batch as it enters gpupacketproc, before its results
    # are counted: wait until the stats hold it.
    wait_stat(proc, "batches", 1)
    stats = proc.get_property("stats")
    capture_ms = stats.get_uint64("capture-latency-max-ns")[1] / 1e6
    check("gpupacketproc capture-latency sees the batch wait",
          50 <= capture_ms <= 50 + MARGIN_MS, f"({capture_ms:.2f} ms)")

    # The sink answers a latency query once it has prerolled, which ends the
    # pipeline's move to PLAYING: the stats count a batch just before its push.
    check("the pipeline reaches PLAYING with the first batch",
          pipeline.get_state(5 * Gst.SECOND)[0] == Gst.StateChangeReturn.SUCCESS)
    query = Gst.Query.new_latency()
    answered = pipeline.query(query)
    live, min_latency, _ = query.parse_latency()
    check("pipeline latency = batch-timeout + processing (default 2 ms before measurements)",
          answered and live and min_latency == 52 * Gst.MSECOND + sink_deadline,
          f"({(min_latency - sink_deadline) / 1e6} ms + sink deadline)")

    # batch-timeout changes while playing: a LATENCY message, then the new wait.
    src.set_property("batch-timeout", 10000)
    msg = livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.LATENCY
                           and m.src == src, 2)
    check("batch-timeout change posts LATENCY", msg is not None)
    delay, count = push_delay_ms(one, 2)
    check("new batch-timeout applies while playing",
          count == 1 and 10 <= delay <= 10 + MARGIN_MS, f"({delay:.2f} ms, timeout 10 ms)")
    pipeline.query(query)
    check("pipeline latency follows",
          query.parse_latency()[1] == 12 * Gst.MSECOND + sink_deadline)

    # A full batch leaves at once, long before the timeout.
    src.set_property("batch-size", 4)
    src.set_property("batch-timeout", 5000000)
    delay, count = push_delay_ms(four, 3)
    check("batch-size closes a batch before batch-timeout", count == 4 and delay < 1000,
          f"({count} packets after {delay:.2f} ms, timeout 5 s)")

    # A change while a batch waits applies to that batch: lowered from 5 s to
    # 10 ms 100 ms after the packet, it leaves right away, not after 5 s. The
    # wait is timed from the change, not from the packet: the replay tool's exit
    # and the sleep's own slack (tens of ms on a loaded 2-core machine) are not
    # the element's.
    livenet.replay(tx_ns, one, "--topspeed")
    time.sleep(0.1)
    lowered_ns = time.time_ns()
    src.set_property("batch-timeout", 10000)
    if not recorder.wait_for(lambda b: len(b) >= 4, 10):
        check("a lowered batch-timeout ends the batch being built", False, "(no batch)")
    else:
        pushed, packets = recorder.batches[3]
        waited = (lowered_ns - packets[0][0]) / 1e6
        after_change = (pushed - lowered_ns) / 1e6
        check("a lowered batch-timeout ends the batch being built",
              len(packets) == 1 and waited >= 100 and 0 <= after_change <= 10 + MARGIN_MS,
              f"(held {waited:.2f} ms until the change, pushed {after_change:.2f} ms after it)")
    src.set_property("batch-timeout", 5000000)

    proc.set_property("mode", "streams")
    proc.set_property("mode", "cpu")
    msg = livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.LATENCY
                           and m.src == proc, 2)
    check("mode change posts LATENCY", msg is not None)

    seen = []
    livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.ELEMENT
                     and m.get_structure().get_name() == "pcapsrc-stats"
                     and seen.append(m) is None and len(seen) >= 3, 5)
    check("periodic pcapsrc-stats messages", len(seen) >= 3 and
          seen[-1].get_structure().get_uint64("packets")[1] == 7)

    # PAUSED pauses the capture: a packet sent meanwhile is not delivered (it
    # is counted as discarded once PLAYING again) and capture resumes at once.
    src.set_property("batch-size", 1)
    before = len(recorder.batches)
    pipeline.set_state(Gst.State.PAUSED)
    pipeline.get_state(Gst.CLOCK_TIME_NONE)
    livenet.replay(tx_ns, one, "--topspeed")
    time.sleep(0.3)
    check("nothing delivered while PAUSED", len(recorder.batches) == before)
    pipeline.set_state(Gst.State.PLAYING)
    # The packet that arrived while PAUSED is thrown away as the capture
    # resumes; one sent before that would go with it.
    discarded = wait_stat(src, "discarded", 1)
    check("the packet sent while PAUSED is discarded as capture resumes", discarded,
          "" if discarded else "(not within 5 s)")
    resumed = push_delay_ms(one, before + 1)
    check("capture resumes after PAUSED", resumed is not None and resumed[1] == 1
          and resumed[0] < MARGIN_MS, f"({resumed})")
    check("the packet sent while PAUSED is counted as discarded",
          src.get_property("stats").get_uint64("discarded")[1] == 1,
          src.get_property("stats").to_string())
    src.set_property("batch-size", 1000)

    # Stop with one packet waiting in a batch (timeout 5 s) and no traffic.
    livenet.replay(tx_ns, one, "--topspeed")
    while src.get_property("stats").get_uint64("received")[1] < 10:
        livenet.wait_bus(pipeline, Gst, lambda m: False, 0.02)
    start = time.monotonic()
    pipeline.set_state(Gst.State.NULL)
    stop_s = time.monotonic() - start
    check("stops at once with no traffic", stop_s < 1, f"({stop_s * 1000:.1f} ms)")
    stats = src.get_property("stats")
    check("an unfinished batch is counted as discarded",
          stats.get_uint64("discarded")[1] == 2 and stats.get_uint64("packets")[1] == 8,
          stats.to_string())

    # Errors say what is wrong and what to do.
    rc, out = launch_error(gst_launch, "pcapsrc device=gppnosuch0 ! fakesink")
    check("missing interface", rc != 0 and "No network interface \"gppnosuch0\"" in out
          and "ip link" in out)
    rc, out = launch_error(gst_launch, f"pcapsrc device={livenet.RX_IF} "
                           "filter=\"tcp port\" ! fakesink")
    check("bad filter", rc != 0 and "Invalid packet filter" in out)
    rc, out = launch_error(gst_launch, f"pcapsrc device={livenet.RX_IF} location={one} ! "
                           "fakesink")
    check("location and device together", rc != 0 and "not both" in out)
    if shutil.which("setpriv"):
        rc, out = launch_error(gst_launch, f"pcapsrc device={livenet.RX_IF} ! fakesink",
                               ("setpriv", "--bounding-set=-net_raw,-net_admin",
                                "--inh-caps=-net_raw,-net_admin"))
        check("no CAP_NET_RAW", rc != 0 and "No permission" in out and "setcap" in out,
              out.strip().splitlines()[0] if out.strip() else "")
    else:
        print("skip no-CAP_NET_RAW check: setpriv (util-linux) is missing")

    print("FAIL: " + ", ".join(failures) if failures else "PASS")
    return 1 if failures else 0


if __name__ == "__main__":
    livenet.run(main)
