#!/usr/bin/env python3
"""Live capture on a veth pair: pcapsrc against afxdpsrc, what each captures,
drops and costs in CPU a packet, and the highest drop-free rate.

  live-capture-bench.py [--duration S] [--packets N] [--quick] [--queues LIST]
                        [--sender xdp|tcpreplay] [--senders N] [--steps N]
                        [--proc ['MODE [PROP=VALUE...]']] [--in-place] [--xdp-frames]
                        [--frame-size N] [--oversubscribe]
                        [--build DIR] [--out DIR]

Two network namespaces joined by a veth pair (made again for each receiver,
with as many queues as the receiver captures; always removed at the end).
The senders (--senders, default: the cores the largest receiver leaves free),
each pinned to a core of its own, send a generated capture of 60-byte UDP
frames (64 on the wire; --frame-size sets another size) in a loop: --sender xdp, threads of one
gpupacket-xdp-send (bench/xdp_send.cpp: AF_XDP transmit, spread over the
veth's queues), or --sender tcpreplay, tcpreplay processes (--preload-pcap,
one sendto a packet).  The default is xdp where the build has the program
and a probe sends with it, tcpreplay otherwise; the report says which ran
and why.
First the sender alone (nothing attached to the receiving end: the kernel
drops the frames, which are for another host), then each receiver pinned to
its own cores and running gst-launch-1.0 ... ! fakesink:
  pcapsrc device=RX immediate-mode=true / immediate-mode=false,
  with --pcap-fanout N pcapsrc immediate-mode=false fanout=N (N sockets of
  a PACKET_FANOUT group, a thread and a core each) on a veth of N queues,
  beside one socket on that veth,
  afxdpsrc device=RX queues=N for each N of --queues (skipped where the
  machine lacks N receiver cores + 1 sender core, unless --oversubscribe),
  and with --in-place each again with frames-in-place=true;
with --xdp-frames each afxdpsrc row again with the frames delivered as XDP
frames: the xdp senders transmit on a second veth pair (as many queues as
senders, its NAPI threaded on the senders' cores) whose far end redirects
every frame (gpupacket-xdp-forward) into the receiving pair, so that the
receiver's XDP program gets the frame as a NIC driver hands it over, where a
frame sent to the veth directly arrives as a socket buffer that veth first
copies into a page of its own; pcapsrc keeps the direct delivery, its
cheapest (veth hands the sender's socket buffer on, which a NIC driver would
have to build);
with --proc MODE (MODE cpu where not given) each receiver runs again as
... ! gpupacketproc mode=MODE ! fakesink, and the ratios compare the two;
each receiver alone also runs again at its drop-free rate, as long as the
run through the element at that rate.
Per receiver: one run at the senders' top speed (captured, dropped as the
source counts it, missing = sent - captured, CPU time a captured packet), then
--steps runs at set rates (the senders' --pps, split over them), bisecting
for the highest rate whose loss (missing or source-dropped, whichever is
larger) is at most 0.1%.
Exit 0 when every receiver that could run ran, 1 when one failed (or --sender
xdp cannot send, or --xdp-frames cannot forward), 2 bad usage, 77 (SKIP) without root, ip, a sender,
gst-launch-1.0, the plugin, network namespaces or AF_XDP (bench/README.md).
"""
import argparse
import csv
import datetime
import math
import os
import platform
import re
import resource
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.dirname(HERE)
LOSS_LIMIT = 0.001          # drop-free: loss at most 0.1%
PCAP_NAME = "udp.pcap"      # the generated capture, in --out while the bench runs
STATS_INTERVAL_MS = 100
XDP_FRAMES = " (XDP frames)"  # a row whose frames came through the forwarding veth
START = time.monotonic()
CLK_TCK = os.sysconf("SC_CLK_TCK")


def log(text):
    sys.stderr.write("[%7.1f s] %s\n" % (time.monotonic() - START, text))
    sys.stderr.flush()


def skip(why):
    print("SKIP: " + why)
    sys.exit(77)


def quote(argv):
    return " ".join(shlex.quote(a) for a in argv)


def proc_cpu_seconds(pid):
    """user + system seconds of every thread of PID (from /proc/PID/stat)."""
    try:
        with open("/proc/%d/stat" % pid) as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLK_TCK


def softirq_seconds():
    """Softirq seconds of the whole machine (/proc/stat, every CPU)."""
    with open("/proc/stat") as f:
        fields = f.readline().split()
    return int(fields[7]) / CLK_TCK


STATS_LINE = re.compile(r'from element "[^"]*" \(element\): (pcapsrc|afxdpsrc)-stats, (.*);\s*$')
FIELD = re.compile(r'([\w-]+)=\((\w+)\)("(?:[^"\\]|\\.)*"|[^,]+)')


def parse_stats(text):
    out = {}
    for name, kind, value in FIELD.findall(text):
        if kind in ("guint64", "uint", "int", "guint", "gint64"):
            out[name] = int(value)
        else:
            out[name] = value.strip('"')
    return out


class Receiver:
    """gst-launch-1.0 -m running the receiver's pipeline; keeps the latest
    stats message."""

    def __init__(self, argv, log_path):
        self.argv = argv
        self.log = open(log_path, "w")
        self.lock = threading.Lock()
        self.stats = None
        self.count = 0
        self.errors = []
        self.proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     text=True, bufsize=1)
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            self.log.write(line)
            m = STATS_LINE.search(line)
            with self.lock:
                if m:
                    self.stats = parse_stats(m.group(2))
                    self.count += 1
                elif "ERROR" in line or "WARNING" in line:
                    self.errors.append(line.strip())

    def latest(self):
        with self.lock:
            return (dict(self.stats) if self.stats else None), self.count

    def wait_ready(self, timeout):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.proc.poll() is not None:
                return False
            if self.latest()[0] is not None:
                return True
            time.sleep(0.05)
        return False

    def wait_settled(self, timeout=3.0):
        """Waits until the packet count stays put over three stats messages."""
        end = time.monotonic() + timeout
        last, same, seen = None, 0, self.latest()[1]
        while time.monotonic() < end and same < 3:
            time.sleep(0.02)
            stats, count = self.latest()
            if count == seen:
                continue
            seen = count
            packets = stats.get("packets") if stats else None
            same = same + 1 if packets == last else 0
            last = packets
        return self.latest()[0]

    def stop(self):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.thread.join(5)
        self.log.close()


def with_proc(name, proc):
    """The row of receiver NAME run through gpupacketproc mode=PROC (None: without)."""
    return name + " ! gpupacketproc mode=" + proc if proc else name


def add_note(row, text):
    """Appends TEXT to ROW's note ("; " between notes)."""
    row["note"] = (row["note"] + "; " if row["note"] else "") + text


def where_lost(m):
    """Where a run's frames went: the source's own drops (its rings) or
    missing (lost before it, e.g. in veth's queue)."""
    return "the source dropped %d, %d missing" % (m["src_dropped"], m["missing"])


def drops_of(kind, stats):
    if kind == "pcapsrc":
        return stats.get("dropped", 0) + stats.get("if-dropped", 0)
    return stats.get("dropped", 0)


class Bench:
    def __init__(self, args):
        self.args = args
        self.ns_tx = "gpp-lcb-tx-%d" % os.getpid()
        self.ns_rx = "gpp-lcb-rx-%d" % os.getpid()
        self.tx, self.rx = "lcb-tx", "lcb-rx"
        # --xdp-frames: the senders' pair, lcb-s0 -> lcb-s1, and lcb-s1's
        # XDP program redirecting into lcb-tx.
        self.fwd_tx, self.fwd_rx = "lcb-s0", "lcb-s1"
        self.delivery = "skb"   # how the next send reaches RX: "skb" or "frames"
        self.namespaces = []
        self.children = []
        self.commands = []      # (what, command) for the report
        self.rows = []
        self.failed = []
        self.queues = None
        self.napi_pids = []     # the receiving veth's NAPI threads (--napi-cores)
        self.drop_free = {}     # receiver (without --proc) -> its drop-free pps
        self.sender = args.sender       # "xdp" or "tcpreplay" once chosen
        self.sender_why = ""
        self.xdp_send = os.path.abspath(os.path.join(args.build, "bench", "gpupacket-xdp-send"))
        self.xdp_forward = os.path.abspath(os.path.join(args.build, "bench",
                                                        "gpupacket-xdp-forward"))

    # ---- set-up ----------------------------------------------------------
    def sh(self, argv, check=True, record=None):
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        if record:
            self.commands.append((record, quote(argv)))
        if check and r.returncode != 0:
            raise RuntimeError("%s: %s" % (quote(argv), r.stdout.strip()))
        return r

    def make_namespaces(self):
        for ns in (self.ns_tx, self.ns_rx):
            if self.sh(["ip", "netns", "add", ns], check=False).returncode != 0:
                skip("cannot create a network namespace (ip netns add)")
            self.namespaces.append(ns)
            if self.sh(["ip", "netns", "exec", ns, "true"], check=False).returncode != 0:
                skip("cannot use a network namespace here (a chroot or container?)")

    def make_veth(self, queues):
        """The veth pair again, with QUEUES receive and transmit queues each side."""
        if self.queues == queues:
            return
        self.sh(["ip", "-n", self.ns_tx, "link", "del", self.tx], check=False)
        q = ["numtxqueues", str(queues), "numrxqueues", str(queues)]
        argv = ["ip", "link", "add", self.tx] + q + ["netns", self.ns_tx, "type", "veth", "peer",
                                                     "name", self.rx] + q + ["netns", self.ns_rx]
        r = self.sh(argv, check=False, record="veth pair, %d queue(s)" % queues)
        if r.returncode != 0:
            skip("cannot create a veth pair in a namespace: " + r.stdout.strip())
        for ns, ifc in ((self.ns_tx, self.tx), (self.ns_rx, self.rx)):
            self.bring_up(ns, ifc)
        self.set_offloads(self.ns_rx, self.rx, self.args.offloads == "on")
        self.queues = queues
        if self.args.xdp_frames:
            self.make_forwarding()
        time.sleep(0.2)

    def set_offloads(self, ns, ifc, on):
        """TSO, GSO and GRO of IFC in NS (tests/live/livenet.py's set_offloads,
        as "ethtool -K IFC tso off gso off gro off"): with one on, pcapsrc's
        immediate mode gets 64 KiB ring slots (256 in its default ring)."""
        code = ("import sys; sys.path.insert(0, %r); import livenet; livenet.set_offloads(%r, %r)"
                % (os.path.join(SOURCE, "tests", "live"), ifc, on))
        self.sh(["ip", "netns", "exec", ns, sys.executable, "-c", code],
                record="receiving veth's offloads %s" % ("on" if on else "off"))

    def bring_up(self, ns, ifc):
        """IFC in NS up, without IPv6 (router solicitations would be captured)."""
        self.sh(["ip", "netns", "exec", ns, "sh", "-c",
                 "echo 1 > /proc/sys/net/ipv6/conf/%s/disable_ipv6" % ifc], check=False)
        self.sh(["ip", "-n", ns, "link", "set", ifc, "up"])

    def make_forwarding(self):
        """--xdp-frames: the senders' veth pair again, a queue a sender, its far
        end redirecting every frame into TX (a new TX each make_veth), and its
        NAPI threaded on the senders' cores (kernel threads: the forwarding is
        the sender's work, outside the softirq time charged to the receiver)."""
        n = len(self.sender_cores)
        self.sh(["ip", "-n", self.ns_tx, "link", "del", self.fwd_tx], check=False)
        q = ["numtxqueues", str(n), "numrxqueues", str(n)]
        self.sh(["ip", "link", "add", self.fwd_tx] + q + ["netns", self.ns_tx, "type", "veth",
                 "peer", "name", self.fwd_rx] + q + ["netns", self.ns_tx],
                record="forwarding veth pair, %d queue(s)" % n)
        for ifc in (self.fwd_tx, self.fwd_rx):
            self.bring_up(self.ns_tx, ifc)
        r = self.sh(["ip", "netns", "exec", self.ns_tx, self.xdp_forward, self.fwd_rx, self.tx],
                    check=False, record="forwarding (XDP redirect %s -> %s)" % (self.fwd_rx, self.tx))
        if r.returncode != 0:
            raise SystemExit("--xdp-frames: " + r.stdout.strip())
        pids = self.thread_napi(self.ns_tx, self.fwd_rx)
        for i, pid in enumerate(pids):
            self.sh(["taskset", "-pc", str(self.sender_cores[i % n]), str(pid)], check=False)

    def pin_napi(self, first_core, queues):
        """Puts the receiving veth's NAPI (one a queue while an XDP program is
        attached: the receiver's) in kernel threads, napi/RX-ID, and pins them
        to cores of their own from FIRST_CORE on; the cores used."""
        pids = self.thread_napi(self.ns_rx, self.rx)
        self.napi_pids = pids
        cores = []
        for i, pid in enumerate(pids):
            core = (first_core + i % max(1, queues)) % (os.cpu_count() or 1)
            self.sh(["taskset", "-pc", str(core), str(pid)], check=False)
            cores.append(core)
        return ",".join(map(str, sorted(set(cores))))

    def thread_napi(self, ns, ifc):
        """Puts IFC's NAPI (which veth has while an XDP program is attached) in
        kernel threads, napi/IFC-ID; their pids."""
        r = self.sh(["ip", "netns", "exec", ns, "sh", "-c",
                     "echo 1 > /sys/class/net/%s/threaded" % ifc], check=False)
        if r.returncode != 0:
            raise RuntimeError("threaded NAPI refused on %s: %s" % (ifc, r.stdout.strip()))
        time.sleep(0.2)
        out = subprocess.run(["ps", "-e", "-o", "pid=,comm="], stdout=subprocess.PIPE,
                             text=True).stdout
        prefix = ("napi/" + ifc + "-")[:15]
        # In pid order (names, cut to 15 characters, may lose the NAPI id's
        # last digits); callers put them a core each, whichever queue each serves.
        return sorted(int(line.split()[0]) for line in out.splitlines()
                      if len(line.split()) == 2 and line.split()[1].startswith(prefix))

    def napi_seconds(self):
        """CPU seconds of the NAPI threads pin_napi() pinned (kernel receive
        work outside softirq accounting); 0 without them."""
        return sum(proc_cpu_seconds(pid) or 0.0 for pid in self.napi_pids)

    def steer_rps(self, core):
        """Steers the receiving veth's receive processing (for pcapsrc: the
        packet socket's copy) to CORE with RPS, as a NIC queue's interrupt
        core would run it; without it that work runs on every sending core.
        CORE None turns RPS off again (the veth may serve the next receiver)."""
        ncpu = os.cpu_count() or 1
        if core is not None:
            core %= ncpu # --oversubscribe on a small machine: wrap around
        bits = 0 if core is None else 1 << core
        # rps_cpus: 32-bit groups in hex, most significant first, comma-separated.
        groups = ["%08x" % ((bits >> (32 * i)) & 0xffffffff)
                  for i in reversed(range(max(1, (ncpu + 31) // 32)))]
        mask = ",".join(groups)
        r = self.sh(["ip", "netns", "exec", self.ns_rx, "sh", "-c",
                     "echo %s > /sys/class/net/%s/queues/rx-0/rps_cpus" % (mask, self.rx)],
                    check=False)
        if r.returncode != 0 and core is not None:
            raise RuntimeError("--napi-cores: RPS refused: " + r.stdout.strip())
        return str(core)

    def cleanup(self):
        for p in self.children:
            if p.poll() is None:
                p.kill()
                p.wait()
        for ns in self.namespaces:
            subprocess.run(["ip", "netns", "del", ns], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        self.namespaces = []

    # ---- the sender ------------------------------------------------------
    def sender_argv(self, core, pps, duration):
        """tcpreplay: one process on CORE at PPS (None = top speed)."""
        rate = ["--pps=%d" % max(1, int(pps))] if pps else ["--topspeed"]
        return ["ip", "netns", "exec", self.ns_tx, "taskset", "-c", str(core), "tcpreplay",
                "-q", "--preload-pcap", "--loop=0", "--duration=%d" % max(1, round(duration))] + \
            rate + ["-i", self.tx, self.pcap]

    def xdp_argv(self, cores, pps, duration=None, count=None):
        """gpupacket-xdp-send: a thread on each of CORES over the veth's
        queues (its peer then keeps native XDP: veth refuses it where the
        sending side has more transmit queues than the peer receive queues),
        PPS in all (None = top speed)."""
        # At least a thread a queue (--oversubscribe: the cores taken again).
        # XDP frames: a queue of the forwarding pair a thread, whose NAPI
        # thread runs on that thread's core.
        frames = self.delivery == "frames"
        queues = len(self.sender_cores) if frames else self.queues
        threads = [cores[i % len(cores)] for i in range(max(len(cores), queues))]
        length = ["--count", str(count)] if count else ["--duration", "%g" % duration]
        rate = ["--pps", "%d" % max(1, int(pps))] if pps else []
        return ["ip", "netns", "exec", self.ns_tx, "taskset", "-c", ",".join(map(str, cores)),
                self.xdp_send, "--interface", self.fwd_tx if frames else self.tx, "--queues",
                str(queues), "--threads", str(len(threads)), "--cores",
                ",".join(map(str, threads))] + length + rate + [self.pcap]

    def send_xdp(self, pps, duration):
        argv = self.xdp_argv(self.sender_cores, pps, duration)
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.children.append(p)
        out, err = p.communicate()
        self.children.remove(p)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        got = dict(re.findall(r"(\w+)=(\S+)", out))
        if p.returncode != 0 or "sent" not in got:
            raise RuntimeError("%s: exit %d: %s" % (quote(argv), p.returncode,
                                                    (err or out).strip()[-400:]))
        cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
        # The sender's sent leaves out the frames the veth dropped: the
        # receiving queue was full (the receiver's kernel path did not keep
        # up, as a NIC's full RX ring), so here they count as sent and, not
        # captured, as missing.  Unfinished ones are lost to the count: both
        # said in the row's note.
        extra = {k: int(got[k]) for k in ("dropped", "unfinished") if k in got}
        return int(got["sent"]) + extra.get("dropped", 0), float(got["seconds"]), cpu, extra

    def send(self, pps, duration):
        """Runs the senders (total rate PPS, None = top speed); returns
        (packets sent, seconds, sender CPU seconds, the sender's other counts)."""
        if self.sender == "xdp":
            return self.send_xdp(pps, duration)
        per = pps / len(self.sender_cores) if pps else None
        procs = []
        ru0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.monotonic()
        for core in self.sender_cores:
            argv = self.sender_argv(core, per, duration)
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            self.children.append(p)
            procs.append((p, argv))
        sent = 0
        for p, argv in procs:
            out, _ = p.communicate()
            m = re.search(r"Actual: (\d+) packets", out)
            if not m:
                raise RuntimeError("%s: %s" % (quote(argv), out.strip()[-400:]))
            sent += int(m.group(1))
            self.children.remove(p)
        ru1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = ru1.ru_utime + ru1.ru_stime - ru0.ru_utime - ru0.ru_stime
        return sent, time.monotonic() - t0, cpu, {}

    def sender_note(self, extra):
        """What the xdp sender counted beside sent, where it matters."""
        notes = []
        if extra.get("dropped"):
            notes.append("veth dropped %d frames, its receiving queue full (counted as missing)"
                         % extra["dropped"] if self.delivery == "skb" else
                         "the forwarding veth dropped %d frames, its queue full (counted as "
                         "missing)" % extra["dropped"])
        if extra.get("unfinished"):
            notes.append("%d frames not completed at the end" % extra["unfinished"])
        return "; ".join(notes)

    def choose_sender(self):
        """xdp where gpupacket-xdp-send exists and sends here, else tcpreplay."""
        if self.args.sender == "tcpreplay":
            self.sender, self.sender_why = "tcpreplay", "chosen by --sender tcpreplay"
            return
        why = None
        if not os.access(self.xdp_send, os.X_OK):
            why = "no %s (built only where libxdp and libbpf are)" % self.xdp_send
        else:
            self.make_veth(1)
            argv = self.xdp_argv(self.sender_cores[:1], None, count=1000)
            r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            # Sent or dropped by the veth (nothing captures yet): every frame went out.
            got = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", r.stdout)}
            if r.returncode != 0 or got.get("sent", 0) + got.get("dropped", 0) != 1000:
                why = "gpupacket-xdp-send could not send here (exit %d): %s" % \
                    (r.returncode, (r.stderr or r.stdout).strip()[-300:])
        if why is None:
            self.sender = "xdp"
            self.sender_why = "chosen by --sender xdp" if self.args.sender == "xdp" else \
                "the default: gpupacket-xdp-send is built and sent 1000 frames in a probe"
            return
        if self.args.sender == "xdp" or self.args.xdp_frames:
            raise SystemExit("%s: %s" % ("--sender xdp" if self.args.sender == "xdp" else
                                         "--xdp-frames (needs the xdp sender)", why))
        if not shutil.which("tcpreplay"):
            skip("no sender: %s, and no tcpreplay on PATH" % why)
        self.sender, self.sender_why = "tcpreplay", "the fallback: " + why

    # ---- one receiver ----------------------------------------------------
    def receiver_argv(self, kind, props, cores, proc=None):
        # PROC: the mode, then any further properties ("persistent low-latency=true").
        chain = ["!", "gpupacketproc", "mode=" + proc.split()[0]] + proc.split()[1:] if proc else []
        return ["ip", "netns", "exec", self.ns_rx, "taskset", "-c", cores, self.gst_launch, "-m",
                kind, "device=" + self.rx] + props + ["stats-interval=%d" % STATS_INTERVAL_MS] + \
            chain + ["!", "fakesink"]

    def measure(self, stats0, receiver, kind, pps, duration):
        """One sending run with the receiver running: deltas of its stats."""
        cpu0 = proc_cpu_seconds(receiver.proc.pid)
        sirq0 = softirq_seconds() + self.napi_seconds()
        sent, seconds, sender_cpu, extra = self.send(pps, duration)
        stats = receiver.wait_settled()
        cpu1 = proc_cpu_seconds(receiver.proc.pid)
        sirq1 = softirq_seconds() + self.napi_seconds()
        captured = stats["packets"] - stats0["packets"]
        dropped = drops_of(kind, stats) - drops_of(kind, stats0)
        missing = max(0, sent - captured)
        loss = max(missing, dropped) / sent if sent else 0.0
        rx_cpu = (cpu1 - cpu0) if cpu0 is not None and cpu1 is not None else float("nan")
        sirq = sirq1 - sirq0
        per = lambda s: s / captured * 1e9 if captured else float("nan")
        return {"target_pps": pps or 0, "sent": sent, "seconds": seconds,
                "sent_pps": sent / seconds, "captured": captured,
                "captured_pps": captured / seconds, "src_dropped": dropped, "missing": missing,
                "loss": loss, "rx_cpu_s": rx_cpu, "softirq_s": sirq, "sender_cpu_s": sender_cpu,
                "ns_rx": per(rx_cpu), "ns_total": per(rx_cpu + sirq), "stats": stats,
                "sender_note": self.sender_note(extra)}, stats

    def runs_at(self, stats0, receiver, kind, pps, row, name, what, key):
        """--keep-runs runs at `pps`, each as long as a top-speed run, each
        noted in `row`; of those the senders reached (within 5 %: short of it
        there is no answer either way) the median loss goes to row[key], every
        loss to row[key + "es"] (report() reads both)."""
        losses = []
        for _ in range(self.args.keep_runs):
            m, stats0 = self.measure(stats0, receiver, kind, pps, self.args.duration)
            reached = m["sent_pps"] >= 0.95 * pps
            if reached:
                losses.append(m["loss"])
                add_note(row, "%s: loss %.3f %% (%s)" % (what, 100 * m["loss"], where_lost(m)))
            else:
                add_note(row, "a run %s not counted (the senders sent %.0f pps; loss %.3f %%)" %
                         (what, m["sent_pps"], 100 * m["loss"]))
            log("%s %s, %.0f pps (sent %.0f pps): loss %.4f%% (%s) %s" %
                (name, what, pps, m["sent_pps"], 100 * m["loss"], where_lost(m),
                 ("kept" if m["loss"] <= LOSS_LIMIT else "not kept") if reached else
                 "(the senders fell short: not counted)"))
        if losses:
            row[key] = statistics.median(losses)
            row[key + "es"] = losses
        return stats0

    def run_receiver(self, name, kind, props, queues, rx_cores, proc=None, delivery="skb"):
        alone = name
        name = with_proc(name, proc)
        self.make_veth(queues)
        self.delivery = delivery
        self.napi_pids = []
        argv = self.receiver_argv(kind, props, rx_cores, proc)
        self.commands.append(("receiver " + name, quote(argv)))
        receiver = Receiver(argv, os.path.join(self.out, "receiver-%s.log" % re.sub(r"\W+", "-", name)))
        self.children.append(receiver.proc)
        row = {"section": "measure", "receiver": name, "queues": queues, "status": "ok", "note": ""}
        try:
            if not receiver.wait_ready(15):
                raise RuntimeError("no stats from the receiver within 15 s: %s" %
                                   " | ".join(receiver.errors[-3:]) or "see receiver log")
            if self.args.napi_cores:
                # The kernel's receive work from the core after the receiver's.
                first = max(int(c) for c in re.split(r"[-,]", rx_cores)) + 1
                if kind == "afxdpsrc":
                    self.steer_rps(None) # a pcapsrc row before may have set it on this veth
                    pinned = self.pin_napi(first, queues)
                    if not pinned:
                        raise RuntimeError("--napi-cores: no NAPI thread of %s found" % self.rx)
                    add_note(row, "NAPI threads on core(s) %s" % pinned)
                else:
                    add_note(row, "receive path (RPS) on core %s" % self.steer_rps(first))
            stats0 = receiver.wait_settled(1.0)
            # Through gpupacketproc: first the rate the receiver alone held
            # without loss, as long as a top-speed run: does the pipeline keep it?
            alone_pps = self.drop_free.get(alone) if proc else None
            if alone_pps:
                stats0 = self.runs_at(stats0, receiver, kind, alone_pps, row, name,
                                      "at %s's drop-free rate" % alone, "alone_rate_loss")
            top, stats0 = self.measure(stats0, receiver, kind, None, self.args.duration)
            row.update(top)
            log("%s at top speed: sent %d, captured %d, dropped %d, missing %d" %
                (name, top["sent"], top["captured"], top["src_dropped"], top["missing"]))
            # Drop-free rate: bisect on a log scale between 0 and the top speed.
            best, lo, hi = None, None, top["sent_pps"]
            if top["loss"] <= LOSS_LIMIT:
                best = top["sent_pps"]
                add_note(row, "drop-free at the senders' top speed (bounded by the sender)")
            else:
                for step in range(self.args.steps):
                    if lo is None and step == 0:
                        target = min(hi * 0.9, max(top["captured_pps"] * 0.8, hi / 64))
                    elif lo is None:
                        target = hi / 2
                    else:
                        target = math.sqrt(lo * hi)
                    m, stats0 = self.measure(stats0, receiver, kind, target,
                                             self.args.step_duration)
                    ok = m["loss"] <= LOSS_LIMIT
                    log("%s at %.0f pps (sent %.0f pps): loss %.4f%% %s" %
                        (name, target, m["sent_pps"], 100 * m["loss"], "ok" if ok else "drops"))
                    self.rows.append(dict(m, section="step", receiver=name, queues=queues,
                                          status="ok" if ok else "drops", note=""))
                    if ok:
                        lo = target
                        best = max(best or 0, m["sent_pps"])
                    else:
                        hi = target
                        if lo is None and step == self.args.steps - 1:
                            add_note(row, "drops at every rate tried (lowest %.0f pps)" % target)
                    if lo is None and hi < 1000:
                        break
            row["drop_free_pps"] = best
            if not proc and best:
                self.drop_free[name] = best
                if self.args.proc:
                    # The same run the pipeline through the proc gets, alone:
                    # is the bisected rate itself held in a second, longer run?
                    stats0 = self.runs_at(stats0, receiver, kind, best, row, name,
                                          "again at its drop-free rate", "own_rate_again_loss")
            if top["sender_note"]:
                add_note(row, top["sender_note"])
            if top.get("stats", {}).get("xdp-mode"):
                s = top["stats"]
                add_note(row, "xdp-mode=%s zero-copy=%s queues=%s" %
                         (s["xdp-mode"], s["zero-copy"], s["queues"]))
        except (RuntimeError, KeyError, TypeError) as e:
            row["status"] = "failed"
            row["note"] = str(e)[:300]
            self.failed.append("%s: %s" % (name, e))
            log("%s failed: %s" % (name, e))
        finally:
            receiver.stop()
            self.children.remove(receiver.proc)
        self.rows.append(row)
        return row

    # ---- the whole run ---------------------------------------------------
    def probe_afxdp(self):
        self.make_veth(1)
        argv = self.receiver_argv("afxdpsrc", ["queues=1"], "0")
        receiver = Receiver(argv, os.path.join(self.out, "probe-afxdpsrc.log"))
        self.children.append(receiver.proc)
        try:
            ok = receiver.wait_ready(15)
        finally:
            receiver.stop()
            self.children.remove(receiver.proc)
        if not ok:
            skip("afxdpsrc cannot capture on a veth here (AF_XDP not permitted?): %s" %
                 (" | ".join(receiver.errors[-2:]) or "no stats message"))

    def run_receivers(self, proc=None):
        # Through gpupacketproc the receiver gets a core more for the
        # element's own threads (persistent's host thread polls a core).
        extra = 1 if proc else 0
        cores = lambda n: "0" if n == 1 else "0-%d" % (n - 1)
        self.run_receiver("pcapsrc immediate", "pcapsrc", ["immediate-mode=true"], 1,
                          cores(1 + extra), proc)
        self.run_receiver("pcapsrc buffered", "pcapsrc", ["immediate-mode=false"], 1,
                          cores(1 + extra), proc)
        ncpu = os.cpu_count() or 1
        for n in self.args.pcap_fanout:
            name = "pcapsrc buffered fanout=%d" % n
            if n + extra + 1 > ncpu and not self.args.oversubscribe:
                why = "%d receiver cores + 1 sender core > %d cores" % (n + extra, ncpu)
                self.rows.append({"section": "measure", "receiver": with_proc(name, proc),
                                  "queues": n, "status": "skipped", "note": why})
                log("%s %s" % (with_proc(name, proc), why))
                continue
            # A veth queue a socket, so the senders are not what bounds the
            # row; one socket on as many queues beside it.
            self.run_receiver("pcapsrc buffered, %d veth queues" % n, "pcapsrc",
                              ["immediate-mode=false"], n, cores(1 + extra), proc)
            self.run_receiver(name, "pcapsrc", ["immediate-mode=false", "fanout=%d" % n], n,
                              cores(n + extra), proc)
        for q in self.args.queues:
            if q not in self.runnable[extra]:
                name = with_proc("afxdpsrc queues=%d" % q, proc)
                napi = q if self.args.napi_cores else 0
                why = "%d receiver cores + 1 sender core > %d cores" % (q + extra + napi, ncpu)
                self.rows.append({"section": "measure", "receiver": name, "queues": q,
                                  "status": "skipped", "note": why})
                log("%s %s" % (name, why))
                continue
            for delivery in ("skb", "frames") if self.args.xdp_frames else ("skb",):
                how = XDP_FRAMES if delivery == "frames" else ""
                self.run_receiver("afxdpsrc queues=%d%s" % (q, how), "afxdpsrc",
                                  ["queues=%d" % q], q, cores(q + extra), proc, delivery)
                if self.args.in_place:
                    self.run_receiver("afxdpsrc queues=%d in place%s" % (q, how), "afxdpsrc",
                                      ["queues=%d" % q, "frames-in-place=true"], q,
                                      cores(q + extra), proc, delivery)

    def run(self):
        a = self.args
        ncpu = os.cpu_count() or 1
        qlist = a.queues
        extra = 1 if a.proc else 0 # a core for gpupacketproc's threads (run_receivers)
        napi = 2 if a.napi_cores else 1 # afxdpsrc's NAPI threads: a core per queue
        fits = lambda q, more: a.oversubscribe or napi * q + more + 1 <= ncpu
        self.runnable = {more: [q for q in qlist if fits(q, more)] for more in (0, extra)}
        runnable = self.runnable[0]
        rx_max = max([1] + [napi * q + extra for q in self.runnable[extra]] +
                     [napi * q for q in runnable] +
                     [n + extra for n in a.pcap_fanout if a.oversubscribe or n + extra + 1 <= ncpu])
        nsend = a.senders or max(1, ncpu - rx_max)
        if nsend + 1 > ncpu and not a.oversubscribe:
            nsend = max(1, ncpu - 1)
        # Senders on the last cores, receivers on the first.
        self.sender_cores = [(ncpu - 1 - i) % ncpu for i in range(nsend)]
        self.pcap = os.path.join(self.out, PCAP_NAME)
        gen = [sys.executable, os.path.join(SOURCE, "examples", "make-sample-pcap.py"),
               "--frame-size", str(a.frame_size), "--snaplen", str(max(1024, a.frame_size)),
               "--distinct", str(min(65536, a.packets)), "--packets", str(a.packets), self.pcap]
        self.sh(gen, record="capture")
        self.make_namespaces()
        self.probe_afxdp()
        self.choose_sender()
        log("sender: %s, %d on core(s) %s (%s)" % (self.sender, nsend,
                                                   ",".join(map(str, self.sender_cores)),
                                                   self.sender_why))

        # The sender alone, on each veth layout used.
        layouts = sorted({1} | set(runnable) |
                         {n for n in a.pcap_fanout if a.oversubscribe or n + extra + 1 <= ncpu})
        deliveries = ("skb", "frames") if a.xdp_frames else ("skb",)
        for q, delivery in [(q, d) for q in layouts for d in deliveries]:
            self.make_veth(q)
            self.delivery = delivery
            sirq0 = softirq_seconds()
            sent, seconds, cpu, extra = self.send(None, a.duration)
            sirq = softirq_seconds() - sirq0
            if self.sender == "xdp":
                self.commands.append(("sender (threads on cores %s%s)" %
                                      (",".join(map(str, self.sender_cores)),
                                       ", XDP frames" if delivery == "frames" else ""),
                                      quote(self.xdp_argv(self.sender_cores, None, a.duration))))
                note = "%d xdp thread(s) on %d queue(s)" % (max(nsend, q), q) \
                    if delivery == "skb" else \
                    "%d xdp thread(s) through the forwarding veth (%d queue(s)): XDP frames" % \
                    (nsend, nsend)
            else:
                self.commands.append(("sender (one per core in %s)" % ",".join(map(str, self.sender_cores)),
                                      quote(self.sender_argv(self.sender_cores[0], None, a.duration))))
                note = "%d tcpreplay sender(s)" % nsend
            if self.sender_note(extra):
                note += "; " + self.sender_note(extra)
            self.rows.append({"section": "sender", "receiver": "none (kernel drops)", "queues": q,
                              "sent": sent, "seconds": seconds, "sent_pps": sent / seconds,
                              "softirq_s": sirq, "sender_cpu_s": cpu, "status": "ok",
                              "note": note})
            log("sender alone, %d queue(s): %d packets in %.2f s, %.0f pps" %
                (q, sent, seconds, sent / seconds))

        self.run_receivers()
        if a.proc:
            self.run_receivers(a.proc)


# ---- the report ----------------------------------------------------------
def fmt(v, spec="%.0f"):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return spec % v


def ratio(a, b):
    if a is None or b is None or not b or (isinstance(a, float) and math.isnan(a)) or \
            (isinstance(b, float) and math.isnan(b)):
        return None
    return a / b


def report(bench, args):
    rows = bench.rows
    meas = {r["receiver"]: r for r in rows if r["section"] == "measure"}
    head = ["receiver", "queues", "sent", "sent kpps", "captured", "capt kpps", "src dropped",
            "missing", "loss %", "rx CPU ns/pkt", "rx+softirq ns/pkt", "drop-free kpps", "note"]
    table = []
    for r in rows:
        if r["section"] == "sender":
            table.append(["sender alone", str(r["queues"]), fmt(r["sent"]),
                          fmt(r["sent_pps"] / 1e3, "%.1f"), "-", "-", "-", "-", "-", "-", "-", "-",
                          r["note"]])
    for r in rows:
        if r["section"] != "measure":
            continue
        if r["status"] != "ok":
            table.append([r["receiver"], str(r["queues"])] + ["-"] * 10 +
                         ["%s: %s" % (r["status"], r["note"])])
            continue
        table.append([r["receiver"], str(r["queues"]), fmt(r["sent"]), fmt(r["sent_pps"] / 1e3, "%.1f"),
                      fmt(r["captured"]), fmt(r["captured_pps"] / 1e3, "%.1f"), fmt(r["src_dropped"]),
                      fmt(r["missing"]), fmt(100 * r["loss"], "%.2f"), fmt(r["ns_rx"]),
                      fmt(r["ns_total"]),
                      fmt(r["drop_free_pps"] / 1e3 if r.get("drop_free_pps") else None, "%.1f"),
                      r["note"]])

    def get(name, key):
        r = meas.get(name)
        return r.get(key) if r and r["status"] == "ok" else None

    pcap_best = max([v for v in (get("pcapsrc immediate", "drop_free_pps"),
                                 get("pcapsrc buffered", "drop_free_pps")) if v] or [None],
                    key=lambda v: v or 0)
    ratios = [
        ("CPU/packet, receiver only: afxdpsrc queues=1 / pcapsrc immediate",
         ratio(get("afxdpsrc queues=1", "ns_rx"), get("pcapsrc immediate", "ns_rx"))),
        ("CPU/packet, receiver + softirq: afxdpsrc queues=1 / pcapsrc immediate",
         ratio(get("afxdpsrc queues=1", "ns_total"), get("pcapsrc immediate", "ns_total"))),
        ("CPU/packet, receiver only: afxdpsrc queues=1 / pcapsrc buffered",
         ratio(get("afxdpsrc queues=1", "ns_rx"), get("pcapsrc buffered", "ns_rx"))),
        ("drop-free rate: afxdpsrc queues=1 / pcapsrc best",
         ratio(get("afxdpsrc queues=1", "drop_free_pps"), pcap_best)),
    ]
    if args.xdp_frames:
        one = "afxdpsrc queues=1" + XDP_FRAMES
        ratios += [
            ("CPU/packet, receiver only: %s / pcapsrc immediate" % one,
             ratio(get(one, "ns_rx"), get("pcapsrc immediate", "ns_rx"))),
            ("CPU/packet, receiver + softirq: %s / pcapsrc immediate" % one,
             ratio(get(one, "ns_total"), get("pcapsrc immediate", "ns_total"))),
            ("CPU/packet, receiver + softirq: %s / afxdpsrc queues=1" % one,
             ratio(get(one, "ns_total"), get("afxdpsrc queues=1", "ns_total"))),
            ("drop-free rate: %s / pcapsrc best" % one,
             ratio(get(one, "drop_free_pps"), pcap_best)),
        ]
    for n in args.pcap_fanout:
        f = "pcapsrc buffered fanout=%d" % n
        one = "pcapsrc buffered, %d veth queues" % n
        ratios.append(("drop-free rate: pcapsrc fanout=%d / one socket, %d veth queues" % (n, n),
                       ratio(get(f, "drop_free_pps"), get(one, "drop_free_pps"))))
        ratios.append(("CPU/packet, receiver + softirq: pcapsrc fanout=%d / one socket, %d veth "
                       "queues" % (n, n), ratio(get(f, "ns_total"), get(one, "ns_total"))))
        ratios.append(("drop-free rate: afxdpsrc %d queues / pcapsrc fanout=%d" % (n, n),
                       ratio(get("afxdpsrc queues=%d" % n, "drop_free_pps"),
                             get(f, "drop_free_pps"))))
    for q in args.queues:
        if q == 1:
            continue
        n = "afxdpsrc queues=%d" % q
        ratios.append(("drop-free rate: afxdpsrc %d queues / 1 queue" % q,
                       ratio(get(n, "drop_free_pps"), get("afxdpsrc queues=1", "drop_free_pps"))))
        ratios.append(("captured at top speed: afxdpsrc %d queues / 1 queue" % q,
                       ratio(get(n, "captured_pps"), get("afxdpsrc queues=1", "captured_pps"))))
        ratios.append(("CPU/packet, receiver + softirq: afxdpsrc %d queues / 1 queue" % q,
                       ratio(get(n, "ns_total"), get("afxdpsrc queues=1", "ns_total"))))
    if args.proc:
        for name in [r["receiver"] for r in rows if r["section"] == "measure"]:
            if with_proc(name, args.proc) in meas:
                ratios.append(("drop-free rate: %s / without the proc" % with_proc(name, args.proc),
                               ratio(get(with_proc(name, args.proc), "drop_free_pps"),
                                     get(name, "drop_free_pps"))))
                # One run each: its loss; several (--keep-runs): the median,
                # then how many runs kept the rate.
                # Runs where the senders fell short are not counted: the
                # label says how many of the N were.
                n = args.keep_runs
                for what, who, key in (("through the proc", with_proc(name, args.proc),
                                        "alone_rate_loss"),
                                       ("alone, run again as long", name, "own_rate_again_loss")):
                    loss = get(who, key)
                    runs = get(who, key + "es") or []
                    counted = ("" if n == 1 else
                               ", median of %d counted run(s) of %d" % (len(runs), n) if runs else
                               ", none of %d runs counted" % n)
                    ratios.append(("loss %% at %s's own drop-free rate, %s%s%s"
                                   % (name, what, counted,
                                      " (kept: <= %g)" % (100 * LOSS_LIMIT) if n == 1 and
                                      what[0] == "t" else ""),
                                   None if loss is None else 100 * loss, "%.3f"))
                    if n > 1 and runs:
                        ratios.append(("runs keeping it (loss <= %g %%), %s, %s"
                                       % (100 * LOSS_LIMIT, name, what),
                                       sum(l <= LOSS_LIMIT for l in runs),
                                       "%%d of %d counted" % len(runs)))

    widths = [max(len(h), *(len(t[i]) for t in table)) for i, h in enumerate(head[:-1])]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head[:-1], widths)) + "  note"]
    for t in table:
        lines.append("  ".join(c.rjust(w) if i > 1 else c.ljust(w)
                               for i, (c, w) in enumerate(zip(t[:-1], widths))) + "  " + t[-1])
    print("\n".join(lines))
    print()
    # (what, value[, format]): ratios in 2 decimals, losses in 3.
    ratios = [r if len(r) == 3 else (r[0], r[1], "%.2f") for r in ratios]
    width = max(len(what) for what, _, _ in ratios)
    for what, v, how in ratios:
        print("%-*s  %s" % (width, what, fmt(v, how) if v is not None else "n/a"))
    sys.stdout.flush()

    uname = platform.uname()
    cpu_model = ""
    try:
        with open("/proc/cpuinfo") as f:
            cpu_model = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
    except OSError:
        pass
    md = ["# Live capture: pcapsrc and afxdpsrc on a veth pair", "",
          "- **date**: %s" % datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
          "- **machine**: %s, %d cores (%s), kernel %s" % (uname.node, os.cpu_count() or 0,
                                                           cpu_model, uname.release),
          "- **command**: `%s`" % quote([sys.argv[0]] + sys.argv[1:]),
          "- **senders**: %s on core(s) %s (%s); receivers from core 0; "
          "%d-packet capture of %d-byte UDP frames; %g s at top speed, %g s a step, %d steps"
          % ("gpupacket-xdp-send (AF_XDP, copy mode), a thread on each of %d core(s) and at "
             "least one a queue (each layout's count in its sender-alone row)"
             % len(bench.sender_cores) if bench.sender == "xdp" else
             "%d tcpreplay process(es)" % len(bench.sender_cores),
             ",".join(map(str, bench.sender_cores)), bench.sender_why, args.packets,
             args.frame_size,
             args.duration, args.step_duration, args.steps),
          "- **kernel receive work**: " + (
              "afxdpsrc's NAPI threaded (`/sys/class/net/RX/threaded`), a core per queue after "
              "the receiver's; pcapsrc's receive path steered by RPS to the core after the "
              "receiver's (--napi-cores: each as a NIC queue's interrupt core)"
              if args.napi_cores else
              "in the softirq of the sending cores (veth's default), for both sources"),
          "- **delivery**: " + (
              "pcapsrc and the afxdpsrc rows without a mark: frames sent to the receiving "
              "veth (socket buffers, which veth copies into pages of its own before XDP); "
              "rows marked%s: the senders transmit on a forwarding veth pair (a queue and a "
              "NAPI thread a sender, on its core) whose far end redirects every frame into the "
              "receiving veth (gpupacket-xdp-forward), which then hands XDP the frame as a NIC "
              "driver does; drops there count as missing" % XDP_FRAMES
              if args.xdp_frames else
              "frames sent to the receiving veth (socket buffers, which veth copies into pages "
              "of its own before XDP)"),
          "- **pipeline**: `... ! fakesink`" + (
              "; then each receiver again as `... ! gpupacketproc mode=%s ! fakesink` (the rows "
              "that name it)" % args.proc if args.proc else ""),
          "",
          "| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    md += ["| " + " | ".join(t) + " |" for t in table]
    md += ["", "| ratio | value |", "|---|---|"]
    md += ["| %s | %s |" % (w, fmt(v, how) if v is not None else "n/a") for w, v, how in ratios]
    md += ["", "How to read it:", "",
           "- *sent*: the senders' own count (gpupacket-xdp-send's completed transmissions, "
           "with those the veth dropped because the receiving queue was full: they count as "
           "missing, as a NIC's full RX ring would; tcpreplay's `Actual:`); *sender alone* is their "
           "rate with nothing capturing (the kernel drops the frames): where a receiver's sent "
           "rate is near it, the sender, not the receiver, is the limit.",
           "- *src dropped*: the source's own count (pcapsrc: dropped + if-dropped; afxdpsrc: "
           "dropped, i.e. rx-dropped + rx-ring-full); *missing*: sent - captured (also "
           "what the kernel dropped before the socket, e.g. a full backlog); loss = the larger of "
           "the two over sent.",
           "- *rx CPU ns/pkt*: user + system time of the receiving process (/proc/PID/stat, all "
           "its threads) over the run, a captured packet. *rx+softirq*: plus the machine's "
           "softirq time (/proc/stat) over the run, and with --napi-cores the NAPI threads' "
           "time (/proc/PID/stat; a kernel without CONFIG_IRQ_TIME_ACCOUNTING may count "
           "softirq work done in those threads in both). On veth the receive softirq runs on the "
           "sender's core and the figure includes the sender's own transmit softirq too: it "
           "bounds the kernel's part from above.",
           "- *drop-free kpps*: the highest rate the senders achieved (their --pps, split "
           "over them) with loss <= 0.1%, bisected on a log scale; bounded by the sender's "
           "top speed and by the steps tried.",
           "", "Commands:", ""]
    seen = set()
    for what, cmd in bench.commands:
        if (what, cmd) in seen:
            continue
        seen.add((what, cmd))
        md.append("- %s: `%s`" % (what, cmd))
    if bench.failed:
        md += ["", "## Errors", ""] + ["- " + f for f in bench.failed]
    with open(os.path.join(bench.out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")

    keys = ["section", "receiver", "queues", "target_pps", "sent", "seconds", "sent_pps",
            "captured", "captured_pps", "src_dropped", "missing", "loss", "rx_cpu_s", "softirq_s",
            "sender_cpu_s", "ns_rx", "ns_total", "drop_free_pps", "status", "value", "note", "sender"]
    with open(os.path.join(bench.out, "report.csv"), "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(keys)
        for r in rows:
            w.writerow(["" if r.get(k) is None else (("%.6g" % r[k]) if isinstance(r[k], float)
                                                      else r[k]) for k in keys[:-1]] + [bench.sender])
        for what, v, _ in ratios:
            w.writerow(["ratio", what] + [""] * (len(keys) - 6) +
                       ["ok" if v is not None else "n/a", "" if v is None else "%.4g" % v, "",
                        bench.sender])
    print("\nreport: %s" % os.path.join(bench.out, "report.md"))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--duration", type=float, default=None,
                   help="seconds of each top-speed run (default 5; --quick 1)")
    p.add_argument("--packets", type=int, default=65536,
                   help="packets in the replayed capture (looped for the duration)")
    p.add_argument("--quick", action="store_true",
                   help="seconds-long runs and 2 bisection steps (a smoke run)")
    p.add_argument("--queues", default="1,2,4",
                   help="afxdpsrc queue counts, comma-separated (default 1,2,4)")
    p.add_argument("--pcap-fanout", default="", metavar="N[,N]",
                   help="pcapsrc immediate-mode=false fanout=N rows too (N sockets of a "
                   "PACKET_FANOUT group, a thread and a core each), comma-separated counts "
                   "(default: none). With --napi-cores their receive path is on one core too")
    p.add_argument("--sender", choices=("xdp", "tcpreplay"),
                   help="xdp: gpupacket-xdp-send (AF_XDP); tcpreplay: tcpreplay processes "
                   "(default: xdp where it is built and can send here, else tcpreplay)")
    p.add_argument("--senders", type=int, default=0,
                   help="sender threads (xdp) or processes (tcpreplay), a core each "
                   "(default: the cores left by the largest receiver)")
    p.add_argument("--steps", type=int, default=None,
                   help="bisection steps of the drop-free search (default 6; --quick 2)")
    p.add_argument("--proc", nargs="?", const="cpu", metavar="MODE",
                   help="each receiver also as ... ! gpupacketproc mode=MODE ! fakesink "
                   "(MODE cpu where not given), with ratios to the runs without it; MODE "
                   "may be followed by the element's properties, in one argument: "
                   "--proc 'persistent low-latency=true'")
    p.add_argument("--frame-size", type=int, default=60,
                   help="bytes of each UDP frame sent, without the FCS (60-1514; default 60: "
                   "64 on the wire)")
    p.add_argument("--keep-runs", type=int, default=1, metavar="N",
                   help="with --proc: N runs (as long as a top-speed run) of each receiver "
                   "through the proc at the rate it held alone, and N of it alone again at "
                   "that rate, so that the proc's loss is read against the source's own "
                   "(default 1)")
    p.add_argument("--in-place", action="store_true",
                   help="each afxdpsrc row again with frames-in-place=true (batches point "
                   "at the frames in the UMEM instead of copying them)")
    p.add_argument("--xdp-frames", action="store_true",
                   help="each afxdpsrc row again with the frames delivered as XDP frames, "
                   "redirected from a second veth pair (gpupacket-xdp-forward), as a NIC driver "
                   "hands frames to XDP (needs the xdp sender)")
    p.add_argument("--napi-cores", action="store_true",
                   help="the kernel's receive work on cores of its own after the receiver's, "
                   "as a NIC queue's interrupt core: afxdpsrc's veth NAPI (the XDP program and "
                   "the copy into the UMEM) in kernel threads, one core a queue; pcapsrc's "
                   "receive path (the packet socket's copy) steered to one core by RPS "
                   "(default: both in the senders' softirq)")
    p.add_argument("--offloads", choices=("off", "on"), default="off",
                   help="the receiving veth's TSO, GSO and GRO (default off, as pcapsrc asks: "
                   "with them on its immediate mode's ring has 64 KiB slots, 256 of them)")
    p.add_argument("--oversubscribe", action="store_true",
                   help="run afxdpsrc queue counts that leave no core for the sender")
    p.add_argument("--build", default=os.path.join(SOURCE, "build"),
                   help="the build folder (its gst-plugin/ when GST_PLUGIN_PATH_1_0 is unset)")
    p.add_argument("--out", help="where report.md and report.csv go (default: a temp folder)")
    args = p.parse_args()
    if args.keep_runs < 1:
        p.error("--keep-runs: a count >= 1")
    try:
        args.queues = sorted({int(q) for q in args.queues.split(",")})
        if not args.queues or min(args.queues) < 1:
            raise ValueError
    except ValueError:
        p.error("--queues: a comma-separated list of counts >= 1")
    try:
        args.pcap_fanout = sorted({int(n) for n in args.pcap_fanout.split(",") if n.strip()})
        if args.pcap_fanout and min(args.pcap_fanout) < 2:
            raise ValueError
    except ValueError:
        p.error("--pcap-fanout: a comma-separated list of counts >= 2")
    if args.proc is not None and not args.proc.split():
        p.error("--proc: a mode, then any properties ('persistent low-latency=true')")
    if args.duration is None:
        args.duration = 1.0 if args.quick else 5.0
    if args.steps is None:
        args.steps = 2 if args.quick else 6
    args.step_duration = max(1.0, args.duration / 2 if not args.quick else 1.0)
    if args.duration < 1 or args.packets < 1 or args.steps < 0 or args.senders < 0:
        p.error("--duration >= 1, --packets >= 1, --steps >= 0, --senders >= 0")
    if not 60 <= args.frame_size <= 1514:
        p.error("--frame-size: 60 to 1514 bytes (an Ethernet frame without its FCS on a "
                "1500-byte MTU)")

    if os.geteuid() != 0:
        skip("needs root (network namespaces, veth, AF_XDP)")
    for tool in ("ip", "taskset", "gst-launch-1.0", "gst-inspect-1.0") + \
            (("tcpreplay",) if args.sender == "tcpreplay" else ()):
        if not shutil.which(tool):
            skip("no %s on PATH" % tool)
    os.environ.setdefault("GST_PLUGIN_PATH_1_0", os.path.join(args.build, "gst-plugin"))
    for element in ("pcapsrc", "afxdpsrc") + (("gpupacketproc",) if args.proc else ()):
        r = subprocess.run(["gst-inspect-1.0", element], stdout=subprocess.DEVNULL,
                           stderr=subprocess.DEVNULL)
        if r.returncode != 0:
            skip("gst-inspect-1.0 finds no %s (GST_PLUGIN_PATH_1_0=%s)" %
                 (element, os.environ["GST_PLUGIN_PATH_1_0"]))

    if args.xdp_frames:
        forward = os.path.join(args.build, "bench", "gpupacket-xdp-forward")
        if args.sender == "tcpreplay":
            p.error("--xdp-frames needs the xdp sender")
        if not os.access(forward, os.X_OK):
            skip("--xdp-frames: no %s (built only where libxdp and libbpf are)" % forward)
    out = args.out or tempfile.mkdtemp(prefix="live-capture-bench-")
    os.makedirs(out, exist_ok=True)
    bench = Bench(args)
    bench.out = out
    bench.gst_launch = shutil.which("gst-launch-1.0")

    def on_term(signum, frame):
        raise KeyboardInterrupt
    signal.signal(signal.SIGTERM, on_term)
    try:
        bench.run()
    except KeyboardInterrupt:
        bench.cleanup()
        sys.exit(130)
    finally:
        bench.cleanup()
        try:
            os.unlink(os.path.join(out, PCAP_NAME))
        except OSError:
            pass
    report(bench, args)
    if bench.failed:
        sys.stderr.write("failed: %s\n" % "; ".join(bench.failed))
        sys.exit(1)


if __name__ == "__main__":
    main()
