"""A real IPFIX collector for the tests: nfdump's nfcapd on 127.0.0.1."""
import signal
import socket
import subprocess
import time


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_collector(store, port, nfcapd="nfcapd"):
    """nfcapd storing into `store`, once it holds 127.0.0.1:`port` (a probe
    exporter such as softflowd retries for ever while nobody listens)."""
    collector = subprocess.Popen([nfcapd, "-w", store, "-p", str(port), "-b", "127.0.0.1"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 10
    while time.time() < deadline:
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                return collector
        time.sleep(0.05)
    collector.kill()
    raise RuntimeError("nfcapd did not bind 127.0.0.1:%d" % port)


def stop_collector(collector):
    """SIGTERM: nfcapd writes out what it holds and exits."""
    collector.send_signal(signal.SIGTERM)
    collector.wait(timeout=30)
