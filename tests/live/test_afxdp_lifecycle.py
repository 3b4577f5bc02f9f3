#!/usr/bin/env python3
"""afxdpsrc's life cycle, errors and stats messages, on a veth pair of one
queue (MTU livenet.XDP_MTU).

(a) 200 PLAYING->NULL cycles (every tenth with traffic), PAUSED<->PLAYING
    (nothing delivered while PAUSED, what arrived then counted as discarded,
    capture resuming), EOS sent with send_event and busy-poll=true runs (a
    batch leaving at its timeout, NULL while the streaming thread spins on
    an open batch) and frames-in-place=true runs (a batch held past NULL
    still reads its frame; the UMEM goes with the last batch) leave nothing
    behind: the
    process's open fds and threads return to their count before, and `ip -d
    link show` shows no XDP program on the interface after NULL (and one
    while PLAYING).
(b) Errors name the fix (the GError message from the bus): no device, no
    such interface, a queue the interface lacks, bad `queues` text, another
    XDP program attached, no CAP_NET_ADMIN / CAP_BPF (a child with the
    capabilities dropped), xdp-mode=native and generic (stats say which),
    auto falling back to generic where native is refused (a peer MTU too
    large for native XDP) and native then naming the MTU.
(c) A pipeline (GST_LAUNCH) killed with SIGKILL leaves no XDP program on the
    interface, and afxdpsrc starts there again.
(d) stats-interval posts "afxdpsrc-stats" element messages with every field.

Usage: test_afxdp_lifecycle.py GST_LAUNCH (run by meson as root; exits 77
where namespaces, tcpreplay or AF_XDP are not available)."""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import livenet

CYCLES = 200
FIELDS = ("packets", "batches", "bytes", "discarded", "dropped", "rx-dropped", "rx-invalid-descs",
          "rx-ring-full", "rx-fill-ring-empty")
failures = []


def check(name, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {name} {detail}")
    if not ok:
        failures.append(name)


def vm_size_kib():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmSize:"))


poll = livenet.poll
resources = livenet.resources
settle_resources = livenet.settle_resources


def bus_error(Gst, description, timeout=10):
    """The GError message (and warnings) of a pipeline expected to fail."""
    pipeline = Gst.parse_launch(description)
    warnings = []
    try:
        pipeline.set_state(Gst.State.PLAYING)
        bus = pipeline.get_bus()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            msg = bus.timed_pop(50 * Gst.MSECOND)
            if msg is None:
                continue
            if msg.type == Gst.MessageType.WARNING:
                warnings.append(msg.parse_warning()[0].message)
            if msg.type == Gst.MessageType.ERROR:
                return msg.parse_error()[0].message, warnings
        return None, warnings
    finally:
        pipeline.set_state(Gst.State.NULL)


def started(Gst, pipeline, timeout=10):
    """Waits for the first afxdpsrc-stats message: the queues capture."""
    return livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.ELEMENT and
                            m.get_structure().get_name() == "afxdpsrc-stats", timeout)


def playing_stats(Gst, description):
    """Starts a pipeline whose source is named src; its stats while capturing
    and the warnings; (None, error) where it fails."""
    pipeline = Gst.parse_launch(description)
    warnings = []

    def note(m):
        if m.type == Gst.MessageType.WARNING:
            warnings.append(m.parse_warning()[0].message)
        return m.type == Gst.MessageType.ELEMENT and \
            m.get_structure().get_name() == "afxdpsrc-stats"
    try:
        pipeline.set_state(Gst.State.PLAYING)
        try:
            ok = livenet.wait_bus(pipeline, Gst, note, 10)
        except RuntimeError as e:
            return None, str(e), warnings
        return (pipeline.get_by_name("src").get_property("stats") if ok else None), \
            livenet.xdp_attached(livenet.RX_IF), warnings
    finally:
        pipeline.set_state(Gst.State.NULL)


def child_error(argv_prefix, description):
    """The bus error of a pipeline run by a child of this script (under
    argv_prefix, e.g. setpriv dropping capabilities)."""
    proc = subprocess.run([*argv_prefix, sys.executable, sys.argv[0], "--error-of",
                           description], capture_output=True, text=True, timeout=60)
    return proc.returncode, proc.stdout.strip() + proc.stderr.strip()


def lifecycle(Gst, tx_ns, tmp):
    frame, one = livenet.marker_pcap(tmp, 1, "one.pcap")
    desc = (f"afxdpsrc name=src device={livenet.RX_IF} batch-size=1 batch-timeout=1000 "
            f"stats-interval=600000 ! fakesink")

    # Warm-up: GStreamer's own threads and fds of a first run stay.
    pipeline = Gst.parse_launch(desc)
    pipeline.set_state(Gst.State.PLAYING)
    started(Gst, pipeline)
    check("an XDP program is attached while PLAYING",
          livenet.xdp_attached(livenet.RX_IF) != "")
    pipeline.set_state(Gst.State.NULL)
    del pipeline
    baseline = resources()
    print(f"baseline: {baseline[0]} fds, {baseline[1]} threads")

    left_attached = []
    lost = 0
    for i in range(CYCLES):
        pipeline = Gst.parse_launch(desc)
        src = pipeline.get_by_name("src")
        if i % 10 == 0:
            recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
            pipeline.set_state(Gst.State.PLAYING)
            if not started(Gst, pipeline):
                lost += 1
            livenet.replay(tx_ns, one, "--topspeed")
            if not recorder.wait_for(lambda b: len(b) >= 1, 10):
                lost += 1
        else:
            pipeline.set_state(Gst.State.PLAYING)
            if i % 2:
                started(Gst, pipeline)
        pipeline.set_state(Gst.State.NULL)
        del pipeline, src
        if i % 20 == 19:
            attached = livenet.xdp_attached(livenet.RX_IF)
            if attached:
                left_attached.append((i, attached))
    check(f"{CYCLES} PLAYING->NULL cycles: every packet sent while PLAYING delivered",
          lost == 0, f"({lost} lost)")
    check("no XDP program attached after NULL", not left_attached, str(left_attached[:2]))
    now = settle_resources(baseline)
    check(f"{CYCLES} PLAYING->NULL cycles leave no fd or thread behind",
          livenet.nothing_left(now, baseline),
          f"(fds, threads: {baseline} before, {now} after)")

    # PAUSED <-> PLAYING: nothing delivered while PAUSED, counted as discarded.
    problems, stats, pushed = livenet.paused_rounds(
        Gst, desc, lambda pipeline: started(Gst, pipeline), tx_ns, one, 20)
    check("PAUSED<->PLAYING x20: nothing delivered while PAUSED, counted as discarded, "
          "capture resumes", not problems, "; ".join(problems[:3]))
    check("PAUSED<->PLAYING: stats packets == packets pushed",
          stats.get_uint64("packets")[1] == pushed,
          f"({stats.get_uint64('packets')[1]} vs {pushed})")
    now = settle_resources(baseline)
    check("PAUSED<->PLAYING runs leave no fd or thread behind",
          livenet.nothing_left(now, baseline),
          f"(fds, threads: {baseline} before, {now} after)")

    # PLAYING again while the streaming thread still pushes a batch from
    # before the pause: what arrives meanwhile is delivered.
    problems = livenet.played_while_pushing(Gst, tx_ns, tmp, desc)
    check("a frame captured after PLAYING while the batch from before the pause is still "
          "being pushed is delivered once", not problems, "; ".join(problems))

    # EOS sent into a live pipeline with no traffic ends it at once.
    slow = []
    for i in range(20):
        pipeline = Gst.parse_launch(desc)
        pipeline.set_state(Gst.State.PLAYING)
        started(Gst, pipeline)
        t0 = time.monotonic()
        pipeline.send_event(Gst.Event.new_eos())
        eos = livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.EOS, 5)
        if not eos:
            slow.append(i)
        elif time.monotonic() - t0 > 1:
            slow.append((i, round(time.monotonic() - t0, 2)))
        pipeline.set_state(Gst.State.NULL)
        del pipeline, eos  # the message holds its source, the pipeline
    check("EOS via send_event x20 with no traffic: EOS within 1 s", not slow, str(slow))
    check("no XDP program attached after the EOS runs",
          livenet.xdp_attached(livenet.RX_IF) == "")
    now = settle_resources(baseline)
    check("EOS runs leave no fd or thread behind",
          livenet.nothing_left(now, baseline),
          f"(fds, threads: {baseline} before, {now} after)")

    # busy-poll=true: the streaming thread spins while a batch is being built.
    # A batch leaves at its timeout (even rounds), and NULL while one is open
    # (odd rounds, the spin in progress) returns at once.
    busy = (f"afxdpsrc name=src device={livenet.RX_IF} batch-size=64 batch-timeout=300000 "
            f"busy-poll=true stats-interval=600000 ! fakesink")
    problems = []
    for i in range(10):
        pipeline = Gst.parse_launch(busy)
        src = pipeline.get_by_name("src")
        recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
        pipeline.set_state(Gst.State.PLAYING)
        started(Gst, pipeline)
        livenet.replay(tx_ns, one, "--topspeed")
        t0 = time.monotonic()  # the frame is out: its batch is due 0.3 s after it arrived
        if i % 2 == 0:
            if not recorder.wait_for(lambda b: len(b) >= 1, 5):
                problems.append(f"round {i}: the batch never left")
            elif time.monotonic() - t0 < 0.2:
                problems.append(f"round {i}: the batch left before its timeout")
        else:
            time.sleep(0.05)
        t0 = time.monotonic()
        pipeline.set_state(Gst.State.NULL)
        if time.monotonic() - t0 > 1:
            problems.append(f"round {i}: NULL took {time.monotonic() - t0:.2f} s")
        del pipeline, src, recorder
    check("busy-poll=true x10: a batch leaves at its timeout; NULL with a batch open "
          "returns at once", not problems, "; ".join(problems[:3]))
    now = settle_resources(baseline)
    check("busy-poll runs leave no fd or thread behind",
          livenet.nothing_left(now, baseline),
          f"(fds, threads: {baseline} before, {now} after)")

    # frames-in-place=true: batches point into the UMEM, which outlives the
    # element while downstream holds a batch.  Each round holds the batch
    # of the frame sent past NULL, reads it there, then lets it go: the
    # mapping goes with it (the process's address space shrinks back).
    in_place = (f"afxdpsrc name=src device={livenet.RX_IF} batch-size=1 frames-in-place=true "
                f"stats-interval=600000 ! fakesink")
    vm_before = vm_size_kib()
    problems = []
    for i in range(20):
        pipeline = Gst.parse_launch(in_place)
        src = pipeline.get_by_name("src")
        held = []
        src.get_static_pad("src").add_probe(
            Gst.PadProbeType.BUFFER, lambda pad, info: held.append(info.get_buffer().copy())
            or Gst.PadProbeReturn.OK)
        pipeline.set_state(Gst.State.PLAYING)
        started(Gst, pipeline)
        livenet.replay(tx_ns, one, "--topspeed")
        deadline = time.monotonic() + 5
        while not held and time.monotonic() < deadline:
            time.sleep(0.01)
        pipeline.set_state(Gst.State.NULL)
        del pipeline, src
        packets = [p[3] for b in held for p in livenet.parse_batch(b)]
        if packets != [frame]:
            problems.append(f"round {i}: after NULL the held batch reads {len(packets)} packets, "
                            f"not the frame sent")
        del held
    vm_after = vm_size_kib()
    check("frames-in-place x20: a batch held past NULL still reads its frame",
          not problems, "; ".join(problems[:3]))
    check("frames-in-place: the mappings go with their last batch",
          vm_after - vm_before < 16 * 1024, f"(VmSize {vm_before} -> {vm_after} KiB)")
    now = settle_resources(baseline)
    check("frames-in-place runs leave no fd or thread behind",
          livenet.nothing_left(now, baseline),
          f"(fds, threads: {baseline} before, {now} after)")


def errors(Gst, tx_ns, tmp):
    rx = livenet.RX_IF
    msg, _ = bus_error(Gst, "afxdpsrc ! fakesink")
    check("no device: names the property", msg is not None and
          "No network interface" in msg and "device" in msg, repr(msg))
    msg, _ = bus_error(Gst, "afxdpsrc device=gppnosuch0 ! fakesink")
    check("no such interface", msg is not None and
          'No network interface "gppnosuch0"' in msg and "ip link" in msg, repr(msg))
    msg, _ = bus_error(Gst, f"afxdpsrc device={rx} queues=5 ! fakesink")
    check("queues=5 on a 1-queue veth names the count", msg is not None and
          "has 1 receive queue" in msg, repr(msg))
    msg, _ = bus_error(Gst, f"afxdpsrc device={rx} queues=3-3 ! fakesink")
    check("queues=3-3 on a 1-queue veth names the missing queue", msg is not None and
          "no queue 3" in msg, repr(msg))
    for text, says in (("x", 'queues "x"'), ("0,0", "named twice"), ("2-1", "range")):
        msg, _ = bus_error(Gst, f"afxdpsrc device={rx} queues={text} ! fakesink")
        check(f"queues={text}: bad text refused", msg is not None and says in msg, repr(msg))
    check("no XDP program left by the failed starts", livenet.xdp_attached(rx) == "")

    # Another XDP program attached first.
    loaded = None
    for obj in sorted(glob.glob("/usr/lib/*/bpf/xdpfilt_alw_all.o")) + \
            sorted(glob.glob("/usr/lib/*/bpf/*.o")):
        for sec in ("xdp", "xdp_filter", "xdp_prog"):
            if subprocess.run(["ip", "link", "set", "dev", rx, "xdpdrv", "obj", obj, "sec", sec],
                              capture_output=True, env=livenet.tool_env()).returncode == 0:
                loaded = f"{os.path.basename(obj)} sec {sec}"
                break
        if loaded:
            break
    if loaded:
        try:
            msg, _ = bus_error(Gst, f"afxdpsrc device={rx} ! fakesink")
            check(f"another XDP program attached ({loaded})", msg is not None and
                  "Another XDP program is attached" in msg and "xdp off" in msg, repr(msg))
            check("the other program is left in place", livenet.xdp_attached(rx) != "")
        finally:
            subprocess.run(["ip", "link", "set", "dev", rx, "xdpdrv", "off"],
                           capture_output=True, env=livenet.tool_env())
    else:
        print("skip another-program check: no XDP object under /usr/lib/*/bpf loads")

    # Without the capabilities (a child with them dropped).
    if shutil.which("setpriv"):
        for dropped in ("-all", "-net_admin,-bpf,-sys_admin"):
            rc, out = child_error(["setpriv", f"--inh-caps={dropped}",
                                   f"--bounding-set={dropped}"],
                                  f"afxdpsrc device={rx} ! fakesink")
            check(f"capabilities {dropped}: the error names CAP_NET_ADMIN",
                  rc == 0 and "No permission" in out and "CAP_NET_ADMIN" in out, out[:300])
        check("no XDP program left by the refused starts", livenet.xdp_attached(rx) == "")
    else:
        print("skip capability checks: setpriv (util-linux) is missing")

    # Attach modes: native and generic both work on a veth; stats say which.
    for mode in ("native", "generic"):
        stats, attached, _ = playing_stats(
            Gst, f"afxdpsrc name=src device={rx} xdp-mode={mode} ! fakesink")
        check(f"xdp-mode={mode} captures, stats xdp-mode={mode}",
              stats is not None and stats.get_string("xdp-mode") == mode,
              f"({attached}; {stats.to_string() if stats else ''})")
        check(f"xdp-mode={mode}: `ip link` shows the program while PLAYING, none after",
              (("xdpgeneric" in attached) if mode == "generic" else ("xdp " in attached + " "
                                                                      and "xdpgeneric" not in
                                                                      attached)) and
              livenet.xdp_attached(rx) == "", f"({attached})")

    # A veth refuses native XDP where its peer's MTU is above a page: auto
    # falls back to generic with a warning, native says what to change.
    subprocess.run(["ip", "-n", tx_ns, "link", "set", livenet.TX_IF, "mtu", "9000"], check=True,
                   env=livenet.tool_env())
    try:
        stats, attached, warnings = playing_stats(
            Gst, f"afxdpsrc name=src device={rx} xdp-mode=auto ! fakesink")
        check("xdp-mode=auto falls back to generic where native is refused",
              stats is not None and stats.get_string("xdp-mode") == "generic" and
              any("generic" in w for w in warnings), f"({attached}; {warnings})")
        msg, _ = bus_error(Gst, f"afxdpsrc device={rx} xdp-mode=native ! fakesink")
        check("xdp-mode=native refused: the error names the MTU", msg is not None and
              "MTU" in msg, repr(msg))
    finally:
        subprocess.run(["ip", "-n", tx_ns, "link", "set", livenet.TX_IF, "mtu",
                        str(livenet.MTU)], check=True, env=livenet.tool_env())
    check("no XDP program left after the mode checks", livenet.xdp_attached(rx) == "")


def killed(Gst, gst_launch):
    """A pipeline killed with SIGKILL takes its program with it: it is
    attached through a BPF link, which the kernel detaches when the last fd
    on it closes (XDP links: Linux 5.9)."""
    rx = livenet.RX_IF
    release = tuple(int(x) for x in re.findall(r"\d+", os.uname().release)[:2])
    if release < (5, 9):
        print(f"skip SIGKILL check: kernel {os.uname().release} has no XDP links")
        return
    child = subprocess.Popen([gst_launch, "afxdpsrc", f"device={rx}", "!", "fakesink"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    attached = poll(lambda: livenet.xdp_attached(rx),
                    lambda a: a != "" or child.poll() is not None, 20)
    child.kill()
    child.wait()
    left = poll(lambda: livenet.xdp_attached(rx), lambda a: a == "", 5)
    check("a pipeline killed with SIGKILL leaves no XDP program behind",
          attached != "" and left == "", f"(while it ran: {attached!r}; after: {left!r})")
    stats, _, _ = playing_stats(Gst, f"afxdpsrc name=src device={rx} ! fakesink")
    check("afxdpsrc starts again on the interface after it", stats is not None)


def stats_messages(Gst, tx_ns, tmp):
    frames = [livenet.marker_frame(n) for n in range(5)]
    five = os.path.join(tmp, "five.pcap")
    livenet.write_pcap(five, [(0, len(f), f) for f in frames])
    pipeline = Gst.parse_launch(f"afxdpsrc name=src device={livenet.RX_IF} batch-size=5 "
                                f"batch-timeout=1000 stats-interval=100 ! fakesink")
    src = pipeline.get_by_name("src")
    recorder = livenet.BatchRecorder(Gst, src.get_static_pad("src"))
    pipeline.set_state(Gst.State.PLAYING)
    try:
        started(Gst, pipeline)
        livenet.replay(tx_ns, five, "--topspeed")
        recorder.wait_for(lambda b: sum(len(x) for _, x in b) >= 5, 10)
        seen = []
        t0 = time.monotonic()
        livenet.wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.ELEMENT
                         and m.get_structure().get_name() == "afxdpsrc-stats"
                         and seen.append((time.monotonic(), m.get_structure().copy())) is None
                         and len(seen) >= 5, 10)
    finally:
        pipeline.set_state(Gst.State.NULL)
    last = seen[-1][1] if seen else None
    span = seen[-1][0] - t0 if seen else 0
    check("stats-interval=100 posts afxdpsrc-stats messages about every 100 ms",
          len(seen) >= 5 and 0.3 <= span <= 2, f"({len(seen)} in {span:.2f} s)")
    check("afxdpsrc-stats messages hold every field and count the packets",
          last is not None and all(last.has_field(f) for f in FIELDS + ("queues", "zero-copy",
                                                                        "xdp-mode")) and
          last.get_uint64("packets")[1] == 5 and last.get_uint("queues")[1] == 1,
          last.to_string() if last else "")


def main(tx_ns, args):
    Gst = livenet.init_gst()
    if not Gst.ElementFactory.find("afxdpsrc"):
        livenet.skip("this build has no afxdpsrc (libxdp missing at configure time)")
    tmp = tempfile.mkdtemp(prefix="gpp-afxdp-lifecycle-")
    lifecycle(Gst, tx_ns, tmp)
    errors(Gst, tx_ns, tmp)
    killed(Gst, args[0])
    stats_messages(Gst, tx_ns, tmp)
    print("FAIL: " + "; ".join(failures) if failures else "PASS")
    return 1 if failures else 0


def print_error_of(description):
    """Child mode: prints the bus error of a pipeline; 0 when there is one."""
    Gst = livenet.init_gst()
    msg, _ = bus_error(Gst, description)
    print(msg or "no error")
    return 0 if msg else 1


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "--error-of":
        sys.exit(print_error_of(sys.argv[2]))
    livenet.run(main, mtu=livenet.XDP_MTU, af_xdp=True)
