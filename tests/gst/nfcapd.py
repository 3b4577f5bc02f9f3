"""A real IPFIX collector for the tests: nfdump's nfcapd on 127.0.0.1."""
import os
import signal
import socket
import subprocess
import tempfile
import time


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_collector(store, port, nfcapd="nfcapd"):
    """nfcapd storing into `store`, once it holds 127.0.0.1:`port` (a probe
    exporter such as softflowd retries for ever while nobody listens).
    Raises PortTaken when another process holds the port (free_udp_port's
    answer can be any test's ephemeral source port a moment later)."""
    # Its log goes to a file, not a pipe nobody reads while it runs (a pipe
    # that fills, e.g. with a line per malformed packet, would stop it).
    log = tempfile.TemporaryFile()
    collector = subprocess.Popen([nfcapd, "-w", store, "-p", str(port), "-b", "127.0.0.1"],
                                 stdout=subprocess.DEVNULL, stderr=log)
    collector.gpp_log = log
    collector.gpp_port = port
    deadline = time.monotonic() + 30
    bound = None
    while time.monotonic() < deadline:
        if collector.poll() is not None:
            log.seek(0)
            err = log.read().decode(errors="replace")
            log.close()
            if "Address already in use" in err:
                raise PortTaken(port)
            raise RuntimeError("nfcapd on 127.0.0.1:%d exited (%d): %s" % (port, collector.returncode, err))
        # Bound, and past its start-up ("Startup nfcapd."; 2 s at most for a
        # version that does not say so): a stop right away then does not
        # land in the middle of it.
        if _holds_udp_port(collector.pid, port):
            bound = bound or time.monotonic()
            if _started(log) or time.monotonic() > bound + 2:
                return collector
        time.sleep(0.05)
    collector.kill()
    collector.wait()
    log.close()
    raise RuntimeError("nfcapd did not bind 127.0.0.1:%d in 30 s" % port)


def _started(log):
    """Whether nfcapd's log (its stderr) says its start-up is done.  pread:
    the file offset is nfcapd's too, and it is still writing."""
    return b"Startup nfcapd" in os.pread(log.fileno(), 1 << 16, 0)


def _udp_sockets(port):
    """The /proc/net/udp rows (split into fields) of sockets bound to `port`."""
    with open("/proc/net/udp") as table:
        next(table)
        for line in table:
            fields = line.split()
            if int(fields[1].split(":")[1], 16) == port:
                yield fields


def _holds_udp_port(pid, port):
    """Whether process `pid` has a UDP socket bound to `port` (its socket
    inode in /proc/net/udp among its own descriptors)."""
    inodes = {"socket:[%s]" % fields[9] for fields in _udp_sockets(port)}
    if not inodes:
        return False
    fd_dir = "/proc/%d/fd" % pid
    try:
        for fd in os.listdir(fd_dir):
            try:
                if os.readlink(os.path.join(fd_dir, fd)) in inodes:
                    return True
            except OSError:
                pass
    except OSError:
        pass
    return False


class PortTaken(RuntimeError):
    pass


def start_collector_on_free_port(store, nfcapd="nfcapd", attempts=5):
    """(collector, port): start_collector on a fresh port, again on another
    while the chosen one turns out taken."""
    for _ in range(attempts - 1):
        port = free_udp_port()
        try:
            return start_collector(store, port, nfcapd), port
        except PortTaken:
            pass
    port = free_udp_port()
    return start_collector(store, port, nfcapd), port


def _udp_queued(port):
    """Bytes waiting in the receive queues of UDP sockets bound to `port`."""
    return sum(int(fields[4].split(":")[1], 16) for fields in _udp_sockets(port))


def stop_collector(collector, drain_s=10):
    """SIGTERM: nfcapd writes out what it holds and exits.  First, up to
    `drain_s`, until it has read every datagram waiting for it (on a loaded
    machine it may lag the exporter; what it never read would count as lost)."""
    deadline = time.monotonic() + drain_s
    while (collector.poll() is None and _udp_queued(collector.gpp_port)
           and time.monotonic() < deadline):
        time.sleep(0.02)
    # Again every 2 s while it runs: a SIGTERM that lands between nfcapd's
    # check of its stop flag and its next blocking receive is only seen at
    # the next datagram (one such stop hung for 30 s in a fresh Debian root
    # on a loaded machine); the next signal interrupts that receive.
    try:
        for _ in range(15):
            collector.send_signal(signal.SIGTERM)
            try:
                collector.wait(timeout=2)
                break
            except subprocess.TimeoutExpired:
                pass
        else:
            collector.kill()
            collector.wait()
            raise RuntimeError("nfcapd on port %d did not stop within 30 s of SIGTERM"
                               % collector.gpp_port)
    finally:
        collector.gpp_log.close()
