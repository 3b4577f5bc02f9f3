"""Shared by the live-capture tests: a veth pair between two network
namespaces of the test's own, tcpreplay into one end, pcap files, and the
packet-batch format, read in Python.

A test script calls run(main): as root with `ip` and `tcpreplay` present it
creates namespaces <tag>-tx and <tag>-rx joined by a veth pair (MTU 65535,
IPv6 off so the kernel sends nothing of its own, the receiving end's
offloads off), runs itself again inside
the rx namespace (`ip netns exec`, which also mounts that namespace's /sys,
where libpcap reads interface counters) and removes both namespaces at the
end.  Where any of that is impossible it exits 77 (skip).
"""
import collections
import errno
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import threading
import time

SKIP = 77
MTU = 65535  # of both veth ends; run(mtu=) sets another
# The largest MTU native XDP accepts on a veth is a page less headroom and
# skb overhead (3506 with 4 KiB pages): AF_XDP tests use a little less.
XDP_MTU = 3500
AF_XDP = 44
TX_IF, RX_IF = "gpptx", "gpprx"
ETH_HLEN, VLAN_HLEN = 14, 4
LINKTYPE_ETHERNET = 1


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(SKIP)


def _ip(*args, check=True):
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def _set_up_pair(tx_ns, rx_ns, queues):
    _ip("netns", "add", tx_ns)
    _ip("netns", "add", rx_ns)
    # With several queues a veth hands each packet to the peer's receive
    # queue of the transmit queue the sender's flow hash chose.
    q = ["numtxqueues", str(queues), "numrxqueues", str(queues)] if queues > 1 else []
    _ip("link", "add", TX_IF, "netns", tx_ns, *q, "type", "veth", "peer", "name", RX_IF,
        "netns", rx_ns, *q)
    for ns, ifname in ((tx_ns, TX_IF), (rx_ns, RX_IF)):
        subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                        "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"], check=True,
                       capture_output=True)
        _ip("-n", ns, "link", "set", ifname, "mtu", str(MTU), "up")


# ethtool's legacy set commands (linux/ethtool.h): the offloads libpcap
# looks at before it sizes an immediate-mode ring slot (64 KiB while one is
# on, else by the MTU); veth turns TSO and GSO on.
_ETHTOOL_SET = {"tso": 0x1f, "gso": 0x24, "gro": 0x2c}
_SIOCETHTOOL = 0x8946


def set_offloads(ifname, on):
    """Turns TSO, GSO and GRO of `ifname` (in this namespace) on or off, as
    "ethtool -K IF tso on|off gso on|off gro on|off" does."""
    import array
    import fcntl
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        for command in _ETHTOOL_SET.values():
            value = array.array("I", [command, int(on)])
            address, _ = value.buffer_info()
            fcntl.ioctl(s, _SIOCETHTOOL, struct.pack("16sP", ifname.encode(), address))


def require_af_xdp():
    """Exits 77 where this kernel or this process cannot open AF_XDP sockets."""
    try:
        socket.socket(AF_XDP, socket.SOCK_RAW).close()
    except OSError as e:
        if e.errno in (errno.EAFNOSUPPORT, errno.EPERM, errno.EACCES):
            skip(f"AF_XDP sockets are not available here: {e.strerror}")
        raise


def run(main, mtu=None, queues=1, af_xdp=False):
    """Entry point of a test script (see the module doc): the veth pair has
    `queues` receive and transmit queues on each end and MTU `mtu` (default
    MTU); af_xdp: skip where AF_XDP sockets cannot be opened.  The receiving
    end's offloads are off (set_offloads), as pcapsrc asks of its users."""
    global MTU
    if mtu:
        MTU = mtu
    sys.stdout.reconfigure(line_buffering=True)
    if len(sys.argv) > 1 and sys.argv[1] == "--inner":
        set_offloads(RX_IF, False)
        sys.exit(main(sys.argv[2], sys.argv[3:]))
    if os.geteuid() != 0:
        skip("needs root to create network namespaces and capture")
    for tool in ("ip", "tcpreplay"):
        if not shutil.which(tool):
            skip(f"{tool} is not installed (scripts/install-deps.sh installs it)")
    if af_xdp:
        require_af_xdp()
    tag = f"gpp{os.getpid()}"
    tx_ns, rx_ns = f"{tag}-tx", f"{tag}-rx"
    # meson's timeout sends SIGTERM: leave through the cleanup below.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))
    try:
        try:
            _set_up_pair(tx_ns, rx_ns, queues)
        except subprocess.CalledProcessError as e:
            skip(f"cannot create network namespaces and a veth pair: {e.stderr or e}")
        env = dict(os.environ)
        if env.get("GPP_SANITIZER_PRELOAD"):
            env["LD_PRELOAD"] = env["GPP_SANITIZER_PRELOAD"]
        rc = subprocess.run(["ip", "netns", "exec", rx_ns, sys.executable, sys.argv[0],
                             "--inner", tx_ns, *sys.argv[1:]], env=env).returncode
    finally:
        for ns in (tx_ns, rx_ns):
            _ip("netns", "del", ns, check=False)
    sys.exit(rc)


def tool_env():
    """The environment for helper programs: without the sanitizer runtime."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    return env


def replay(tx_ns, path, *options, cpu=None):
    """Sends a capture into the tx end; returns (sent, failed) packet counts.
    cpu: run tcpreplay on that CPU only."""
    pin = ["taskset", "-c", str(cpu)] if cpu is not None else []
    proc = subprocess.run(["ip", "netns", "exec", tx_ns, *pin, "tcpreplay", "-i", TX_IF,
                           *options, path], capture_output=True, text=True, env=tool_env())
    if proc.returncode != 0:
        raise RuntimeError(f"tcpreplay {path}: {proc.stderr.strip()}")
    counts = {}
    for line in proc.stdout.splitlines():
        for key in ("Successful packets:", "Failed packets:"):
            if line.strip().startswith(key):
                counts[key] = int(line.split(":")[1])
    return counts["Successful packets:"], counts["Failed packets:"]


def xdp_attached(ifname):
    """What `ip -d link show` says of an XDP program on an interface of this
    namespace: "" where none is attached."""
    out = subprocess.run(["ip", "-d", "link", "show", "dev", ifname], capture_output=True,
                         text=True, check=True, env=tool_env()).stdout
    lines = out.splitlines()
    found = [w for w in (lines[0].split() if lines else []) if re.fullmatch(r"xdp\w*", w)]
    found += [line.strip() for line in lines if line.strip().startswith("prog/xdp")]
    return "; ".join(found)


def veth_counter(ns, ifname, name):
    """An interface counter (e.g. tx_dropped) of a namespace's interface."""
    proc = subprocess.run(["ip", "netns", "exec", ns, "cat",
                           f"/sys/class/net/{ifname}/statistics/{name}"],
                          capture_output=True, text=True, check=True, env=tool_env())
    return int(proc.stdout)


# --- pcap files ---------------------------------------------------------------

def read_pcap(path):
    """(linktype, [(ts_ns, wirelen, data)]) of a classic pcap file."""
    with open(path, "rb") as fh:
        raw = fh.read()
    magic = raw[:4]
    for endian in "<>":
        (m,) = struct.unpack(endian + "I", magic)
        if m in (0xA1B2C3D4, 0xA1B23C4D):
            break
    else:
        raise ValueError(f"{path}: not a classic pcap file")
    nano = m == 0xA1B23C4D
    linktype = struct.unpack(endian + "I", raw[20:24])[0] & 0x0FFFFFFF
    packets, pos = [], 24
    while pos + 16 <= len(raw):
        sec, frac, caplen, wirelen = struct.unpack(endian + "IIII", raw[pos:pos + 16])
        ts = sec * 10**9 + frac * (1 if nano else 1000)
        packets.append((ts, wirelen, raw[pos + 16:pos + 16 + caplen]))
        pos += 16 + caplen
    return linktype, packets


def write_pcap(path, packets, linktype=LINKTYPE_ETHERNET):
    """Writes [(ts_ns, wirelen, data)] as a nanosecond pcap file."""
    with open(path, "wb") as fh:
        fh.write(struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, 262144, linktype))
        for ts, wirelen, data in packets:
            fh.write(struct.pack("<IIII", ts // 10**9, ts % 10**9, len(data), wirelen))
            fh.write(data)


def classic_copy(path, out):
    """A classic pcap copy of a pcap or pcapng file (tcpdump converts), or None
    where tcpdump cannot (several link types in one pcapng)."""
    proc = subprocess.run(["tcpdump", "-r", path, "-w", out], capture_output=True,
                          env=tool_env())
    return out if proc.returncode == 0 else None


def fits_veth(data):
    """Whether a frame can be sent on the veth: a whole Ethernet header, and no
    more than the MTU after it (plus one VLAN tag, which the kernel allows)."""
    if len(data) < ETH_HLEN:
        return False
    tagged = data[12:14] in (b"\x81\x00", b"\x88\xa8")
    return len(data) <= ETH_HLEN + MTU + (VLAN_HLEN if tagged else 0)


def marker_frame(n):
    """A frame no capture holds: local experimental ethertype 0x88b5."""
    body = b"gpupacket live-test marker %08d" % n
    return (b"\x02\x00\x00\x00\x00\x01" + b"\x02\x00\x00\x00\x00\x02" + b"\x88\xb5" +
            body).ljust(60, b"\0")


def generate(make_sample, out, *options):
    """A capture written by examples/make-sample-pcap.py with `options`."""
    subprocess.run([sys.executable, make_sample, *options, out], check=True,
                   capture_output=True, env=tool_env())
    return out


def sendable_copy(path, tmp, name):
    """(packets, sendable, sent.pcap) of an Ethernet capture, or None."""
    classic = classic_copy(path, os.path.join(tmp, name + ".classic.pcap"))
    if not classic:
        return None
    linktype, packets = read_pcap(classic)
    if linktype != LINKTYPE_ETHERNET:
        return None
    sendable = [p for p in packets if fits_veth(p[2])]
    if not sendable:
        return None
    sent = os.path.join(tmp, name + ".sent.pcap")
    write_pcap(sent, [(ts, len(d), d) for ts, _, d in sendable])
    return packets, sendable, sent


PACKETS_PER_SECOND = 20000  # replay_chunked's gentle rate: no kernel drops expected
CHUNK_PACKETS = 1000


def replay_chunked(tx_ns, tmp, name, sendable, counted, already, failures, cpu=None):
    """Sends `sendable` in parts, each waited for (counted() >= packets sent so
    far) before the next; returns (packets tcpreplay sent, lost).  Problems
    are appended to `failures`."""
    ok = 0
    for first in range(0, len(sendable), CHUNK_PACKETS):
        part = sendable[first:first + CHUNK_PACKETS]
        part_pcap = os.path.join(tmp, f"{name}.part{first}.pcap")
        write_pcap(part_pcap, [(ts, len(d), d) for ts, _, d in part])
        part_ok, part_failed = replay(tx_ns, part_pcap, f"--pps={PACKETS_PER_SECOND}", cpu=cpu)
        ok += part_ok
        if part_failed:
            failures.append(f"{name}: tcpreplay failed {part_failed} packets")
        if not counted(already + ok, 30):
            failures.append(f"{name}: {already + ok} packets sent so far, not all captured "
                            f"within 30 s")
            return ok, True
    return ok, False


def flow_key(frame):
    """Of an untagged, unfragmented IPv4 or IPv6 TCP or UDP frame: the fields
    the kernel's flow hash reads, or more, so equal keys land on one queue or
    socket; None for other frames (not followed per flow: the veth's queue
    choice for VLAN-tagged frames, for one, is seen to depend on their length)."""
    ethertype, ip = frame[12:14], 14
    if ethertype == b"\x08\x00" and len(frame) >= ip + 20:
        ihl = (frame[ip] & 15) * 4
        proto, frag = frame[ip + 9], struct.unpack("!H", frame[ip + 6:ip + 8])[0] & 0x3FFF
        if frag or proto not in (6, 17) or ihl < 20:
            return None
        return (4, frame[ip + 12:ip + 20], proto, frame[ip + ihl:ip + ihl + 4])
    if ethertype == b"\x86\xdd" and len(frame) >= ip + 44:
        proto = frame[ip + 6]
        if proto not in (6, 17):
            return None
        return (6, frame[ip:ip + 4], frame[ip + 8:ip + 40], proto, frame[ip + 40:ip + 44])
    return None


def poll(read, done, timeout):
    """read() every 50 ms until done(value) or `timeout` s; the last value."""
    deadline = time.monotonic() + timeout
    value = read()
    while not done(value) and time.monotonic() < deadline:
        time.sleep(0.05)
        value = read()
    return value


def resources():
    """(open fds, threads) of this process."""
    return len(os.listdir("/proc/self/fd")), len(os.listdir("/proc/self/task"))


def nothing_left(now, baseline):
    """Whether `now` (fds, threads) leaves nothing behind against `baseline`:
    the same fds, no more threads (a thread pool's idle threads end on their
    own time, also ones the baseline counted, on a slow machine)."""
    return now[0] == baseline[0] and now[1] <= baseline[1]


def settle_resources(baseline, timeout=10):
    """Waits until fds and threads are back at `baseline` (nothing_left);
    what they are."""
    return poll(resources, lambda now: nothing_left(now, baseline), timeout)


def flows_out_of_order(sent, captured):
    """(flows followed, flows whose captured packets are not in their sent
    order): of the flows (flow_key) with more than one packet sent."""
    flows, live_flows = collections.defaultdict(list), collections.defaultdict(list)
    for d in sent:
        flows[flow_key(d)].append(d)
    for d in captured:
        live_flows[flow_key(d)].append(d)
    followed = [k for k in flows if k is not None and len(flows[k]) > 1]
    return followed, [k for k in followed if live_flows.get(k) != flows[k]]


def records_match(sent, captured, rows, expected):
    """Whether the CSV `rows` of the `captured` frames equal the `expected`
    rows of offline processing of the `sent` frames, the k-th capture of a
    frame matched with its k-th sending (equal bytes, equal records)."""
    where = collections.defaultdict(collections.deque)
    for n, d in enumerate(sent):
        where[d].append(n)
    matched = [where[d].popleft() if where[d] else None for d in captured]
    return len(rows) == len(sent) and None not in matched and \
        all(compared(r) == compared(expected[n]) for r, n in zip(rows, matched))


def paused_rounds(Gst, desc, wait_started, tx_ns, one, rounds):
    """Plays `desc` (its source named src; wait_started(pipeline) returns
    once it captures), then PAUSED <-> PLAYING `rounds` times, a frame (the
    capture `one`) sent while PAUSED each time: it must be counted as
    discarded, not delivered, and capture must resume in PLAYING.  (problems
    seen, the source's stats before NULL, packets pushed)."""
    pipeline = Gst.parse_launch(desc)
    src = pipeline.get_by_name("src")
    recorder = BatchRecorder(Gst, src.get_static_pad("src"))
    pipeline.set_state(Gst.State.PLAYING)
    wait_started(pipeline)
    problems = []
    for i in range(rounds):
        pipeline.set_state(Gst.State.PAUSED)
        pipeline.get_state(Gst.CLOCK_TIME_NONE)
        before = recorder.packet_count
        # Counted from here: a frame of the round before (sent again until
        # one arrived) may have been discarded meanwhile.
        discarded = src.get_property("stats").get_uint64("discarded")[1]
        replay(tx_ns, one, "--topspeed")
        # The paused source takes the frame and counts it.
        deadline = time.monotonic() + 5
        while src.get_property("stats").get_uint64("discarded")[1] < discarded + 1 and \
                time.monotonic() < deadline:
            time.sleep(0.01)
        if src.get_property("stats").get_uint64("discarded")[1] < discarded + 1:
            problems.append(f"round {i}: discarded {src.get_property('stats').to_string()}")
        if recorder.packet_count != before:
            problems.append(f"round {i}: a packet delivered while PAUSED")
        pipeline.set_state(Gst.State.PLAYING)
        # PLAYING again: capture resumes (the first stats look after resuming
        # is not observable, so a packet is sent until one arrives).
        got = False
        for _ in range(20):
            replay(tx_ns, one, "--topspeed")
            if recorder.wait_for(lambda b: recorder.packet_count > before, 0.5):
                got = True
                break
        if not got:
            problems.append(f"round {i}: capture did not resume")
    stats = src.get_property("stats")
    pipeline.set_state(Gst.State.NULL)
    return problems, stats, recorder.packet_count


def marker_pcap(tmp, n, name):
    """A capture of marker_frame(n) alone, written to tmp/name: (frame, path)."""
    frame = marker_frame(n)
    path = os.path.join(tmp, name)
    write_pcap(path, [(0, len(frame), frame)])
    return frame, path


# --- packet batches (gpupacket/packet-batch.h) -------------------------------

BATCH_HEADER = struct.Struct("<IHHIIQQ")
PACKET_DESC = struct.Struct("<QQIIII")


def parse_batch(buf):
    """[(timestamp_ns, packet_number, wirelen, bytes)] of one batch buffer,
    read part by part: a batch of frames in place (afxdpsrc frames-in-place)
    runs to the end of its UMEM, tens of MiB of which only the packets count."""
    _, _, header_size, count, _, _, _ = BATCH_HEADER.unpack(
        buf.extract_dup(0, BATCH_HEADER.size))
    descs = buf.extract_dup(header_size, count * PACKET_DESC.size)
    out = []
    for i in range(count):
        ts, number, offset, caplen, wirelen, _ = PACKET_DESC.unpack_from(
            descs, i * PACKET_DESC.size)
        out.append((ts, number, wirelen, buf.extract_dup(offset, caplen)))
    return out


class BatchRecorder:
    """Records, from a pad probe, every packet of every batch that passes."""

    def __init__(self, Gst, pad):
        self.Gst = Gst
        self.lock = threading.Condition()
        self.batches = []       # (push wall time ns, [packets])
        self.packet_count = 0   # packets in them
        pad.add_probe(Gst.PadProbeType.BUFFER, self._probe)

    def _probe(self, pad, info):
        pushed = time.time_ns()  # before this probe's own work
        buf = info.get_buffer()
        packets = parse_batch(buf)
        with self.lock:
            self.batches.append((pushed, packets))
            self.packet_count += len(packets)
            self.lock.notify_all()
        return self.Gst.PadProbeReturn.OK

    def packets(self):
        with self.lock:
            return [p for _, batch in self.batches for p in batch]

    def wait_for(self, predicate, timeout):
        """Waits until predicate(batches) holds; False on timeout."""
        with self.lock:
            return self.lock.wait_for(lambda: predicate(self.batches), timeout)


def played_while_pushing(Gst, tx_ns, tmp, description):
    """PLAYING -> PAUSED -> PLAYING while the streaming thread is still pushing
    a batch from before the pause (held in a pad probe), and a frame sent after
    the second PLAYING, before the probe lets go: the source must deliver it
    once (its capture delivers from the state change, not from the source's
    next look).  `description` names its source `src`.  Returns the problems
    found ([] when none)."""
    first_frame, first_one = marker_pcap(tmp, 20, "before-pause.pcap")
    later_frame, later_one = marker_pcap(tmp, 21, "after-play.pcap")
    pipeline = Gst.parse_launch(description)
    src = pipeline.get_by_name("src")
    pad = src.get_static_pad("src")
    recorder = BatchRecorder(Gst, pad)
    holding, release = threading.Event(), threading.Event()

    def hold(pad, info):
        if not release.is_set():
            holding.set()
            release.wait(10)
        return Gst.PadProbeReturn.OK

    pad.add_probe(Gst.PadProbeType.BUFFER, hold)
    problems = []
    pipeline.set_state(Gst.State.PLAYING)
    src.get_state(5 * Gst.SECOND)
    time.sleep(0.1)
    replay(tx_ns, first_one, "--topspeed")
    if not holding.wait(5):
        problems.append("the first frame's batch never came")
    # Neither change waits for the streaming thread (a live source; the sink
    # prerolls later): the pipeline's get_state would.
    pipeline.set_state(Gst.State.PAUSED)
    pipeline.set_state(Gst.State.PLAYING)
    src.get_state(5 * Gst.SECOND)
    replay(tx_ns, later_one, "--topspeed")
    time.sleep(0.3)  # captured and waiting while the thread is still held
    release.set()
    if not recorder.wait_for(
            lambda b: later_frame in [p[3] for _, batch in b for p in batch], 5):
        problems.append("the frame sent after PLAYING, while the batch before the pause was "
                        "still being pushed, was not delivered")
    time.sleep(0.1)
    frames = [p[3] for p in recorder.packets()]
    pipeline.set_state(Gst.State.NULL)
    if frames.count(later_frame) > 1 or frames.count(first_frame) > 1:
        problems.append(f"a frame delivered twice ({len(frames)} frames)")
    return problems


def wait_bus(pipeline, Gst, accept, timeout):
    """Pops bus messages until accept(message) is true; raises on an error."""
    bus = pipeline.get_bus()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        msg = bus.timed_pop(50 * Gst.MSECOND)
        if msg is None:
            continue
        if msg.type == Gst.MessageType.ERROR:
            err, dbg = msg.parse_error()
            raise RuntimeError(f"pipeline error: {err.message} ({dbg})")
        if accept(msg):
            return msg
    return None


def offline_rows(Gst, path, out_csv):
    """The CSV records of `pcapsrc location=PATH ! gpupacketproc mode=cpu`."""
    import csv
    pipeline = Gst.parse_launch(
        f'pcapsrc location="{path}" ! gpupacketproc mode=cpu ! '
        f'packetresultenc format=csv ! filesink location="{out_csv}"')
    pipeline.set_state(Gst.State.PLAYING)
    try:
        if not wait_bus(pipeline, Gst, lambda m: m.type == Gst.MessageType.EOS, 60):
            raise RuntimeError(f"offline processing of {path} did not finish")
    finally:
        pipeline.set_state(Gst.State.NULL)
    with open(out_csv, newline="") as fh:
        return list(csv.DictReader(fh))


def compared(row):
    """A result row less what differs live: the packet number and timestamp."""
    return {k: v for k, v in row.items() if k not in ("packet", "timestamp")}


def init_gst():
    try:
        import gi
        gi.require_version("Gst", "1.0")
        from gi.repository import Gst
    except (ImportError, ValueError) as e:
        skip(f"PyGObject with GStreamer is missing: {e}")
    Gst.init(None)
    if not Gst.ElementFactory.find("pcapsrc"):
        raise RuntimeError("the gpupacket plugin (pcapsrc) is not on the plugin path")
    return Gst
