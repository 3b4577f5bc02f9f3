#include "pcap_live.h"

#include <linux/ethtool.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "interface_ioctl.h"
#include "pcap_linktype.h"

namespace gpp::capture {
namespace {

// Packets taken from libpcap per call while a batch fills, so a batch's byte
// limit is overshot by at most this many packets.
constexpr int kDispatchChunk = 64;

void add_packet(u_char *user, const pcap_pkthdr *hdr, const u_char *data) {
  auto *b = reinterpret_cast<LiveBatch *>(user);
  const uint64_t ts_ns =
      uint64_t(hdr->ts.tv_sec) * 1000000000u + uint64_t(hdr->ts.tv_usec) * (b->nano ? 1 : 1000);
  if (b->skip_before_ns) {
    if (ts_ns < b->skip_before_ns && monotonic_clock_ns() < b->skip_until_mono_ns) {
      b->skipped++;
      return;
    }
    b->skip_before_ns = 0; // the ring hands packets over in capture order
  }
  if (b->builder.packet_count() == 0) {
    b->first_ts = ts_ns;
    b->first_arrival = monotonic_clock_ns();
  }
  b->last_ts = ts_ns;
  b->packets_read++;
  b->builder.add(data, hdr->caplen, hdr->len, ts_ns, b->packets_read);
  b->bytes += hdr->caplen;
}

void count_packet(u_char *user, const pcap_pkthdr *, const u_char *) {
  (*reinterpret_cast<uint64_t *>(user))++;
}

// Nanoseconds until the batch is due (0: due now): its timeout after its
// first packet's capture, and never later than its timeout after that
// packet was read, whatever the wall clock does meanwhile.
uint64_t due_in(const LiveBatch &b, uint64_t timeout_ns) {
  const uint64_t wall = wall_clock_ns(), mono = monotonic_clock_ns();
  const uint64_t by_capture = b.first_ts + timeout_ns;
  const uint64_t by_arrival = b.first_arrival + timeout_ns;
  const uint64_t left_capture = by_capture > wall ? by_capture - wall : 0;
  const uint64_t left_arrival = by_arrival > mono ? by_arrival - mono : 0;
  return std::min(left_capture, left_arrival);
}

PcapLiveError activate_error(pcap_t *pcap, int rc, const std::string &device) {
  const std::string dev = "\"" + device + "\"";
  const char *said = pcap_geterr(pcap);
  PcapLiveError e;
  e.detail = said;
  switch (rc) {
  case PCAP_ERROR_NO_SUCH_DEVICE:
    e.kind = PcapLiveError::Kind::NoSuchDevice;
    e.message = "No network interface " + dev + ". List the interfaces with \"ip link\" and "
                "set device to one of them.";
    break;
  case PCAP_ERROR_PERM_DENIED:
  case PCAP_ERROR_PROMISC_PERM_DENIED:
    e.kind = PcapLiveError::Kind::Permission;
    e.message = "No permission to capture on " + dev + " (capturing needs CAP_NET_RAW" +
                (rc == PCAP_ERROR_PROMISC_PERM_DENIED ? ", and CAP_NET_ADMIN for promiscuous mode"
                                                      : "") +
                "). Run as root, or grant the capabilities to the program, e.g. \"sudo setcap "
                "cap_net_raw,cap_net_admin+eip $(command -v gst-launch-1.0)\".";
    break;
  case PCAP_ERROR_IFACE_NOT_UP:
    e.kind = PcapLiveError::Kind::InterfaceDown;
    e.message = "Network interface " + dev + " is down. Bring it up with \"ip link set " +
                device + " up\".";
    break;
  default:
    e.message = "Could not capture on network interface " + dev + ": " +
                (*said ? said : pcap_statustostr(rc));
    e.detail = std::string("pcap_activate: ") + pcap_statustostr(rc);
    break;
  }
  return e;
}

// The offloads libpcap (1.10, pcap-linux.c) looks at before it sizes an
// immediate-mode ring slot, those on, e.g. "tso, gso"; "" when none is (or
// the interface cannot say).  With one on the kernel may hand over packets
// merged up to 64 KiB, so libpcap makes every slot that big.
std::string offloads_on(int fd, const std::string &interface) {
  struct Offload {
    uint32_t command;
    uint32_t flag; // in the answer's bits; 0: the answer is 0 or 1
    const char *name;
  };
  static constexpr Offload kOffloads[] = {{ETHTOOL_GTSO, 0, "tso"},
                                          {ETHTOOL_GUFO, 0, "ufo"},
                                          {ETHTOOL_GGSO, 0, "gso"},
                                          {ETHTOOL_GGRO, 0, "gro"},
                                          {ETHTOOL_GFLAGS, ETH_FLAG_LRO, "lro"}};
  std::string on;
  for (const Offload &o : kOffloads) {
    ethtool_value value{o.command, 0};
    if (!ethtool_ask(fd, interface, &value)) continue;
    if (o.flag ? (value.data & o.flag) != 0 : value.data != 0)
      on += (on.empty() ? "" : ", ") + std::string(o.name);
  }
  return on;
}

// libpcap's immediate-mode (TPACKET_V2) ring slot for an Ethernet packet of
// at most `frame` bytes kept: its header, the link header's room and the
// packet, 16-byte aligned (pcap-linux.c, create_ring).
uint64_t immediate_slot_bytes(uint64_t frame) { return (frame + 70 + 15) & ~uint64_t{15}; }

// Why an immediate-mode ring is small: an Ethernet interface with offloads
// on makes libpcap give every packet a 64 KiB slot, a few hundred of them
// in the default ring where its MTU would fit thousands.  "" otherwise.
std::string offload_warning(pcap_t *p, const PcapLiveSettings &s) {
  if (!s.immediate || pcap_datalink(p) != DLT_EN10MB) return "";
  const int fd = pcap_fileno(p);
  ifreq ifr = interface_request(s.interface);
  if (ioctl(fd, SIOCGIFMTU, &ifr) != 0) return "";
  const std::string on = offloads_on(fd, s.interface);
  if (on.empty()) return "";
  constexpr uint64_t kEthernetOverhead = 18; // header, a VLAN tag, FCS (libpcap's allowance)
  constexpr uint64_t kMergedPacket = 65535;
  const uint64_t mtu = static_cast<uint64_t>(ifr.ifr_mtu);
  const uint64_t by_mtu = immediate_slot_bytes(std::min<uint64_t>(s.snaplen, mtu + kEthernetOverhead));
  const uint64_t merged = immediate_slot_bytes(
      std::min<uint64_t>(s.snaplen, std::max(mtu, kMergedPacket) + kEthernetOverhead));
  if (merged < 2 * by_mtu) return ""; // a small snaplen or a large MTU: little lost
  const uint64_t ring = s.buffer_kib ? uint64_t{s.buffer_kib} * 1024 : uint64_t{2} << 20;
  const std::string ring_kib = std::to_string(ring / 1024);
  return "\"" + s.interface + "\" has offloads on (" + on + "): the kernel may hand over " +
         "packets merged up to 64 KiB, so libpcap's immediate mode gives every packet a " +
         std::to_string(merged / 1024) + " KiB ring slot and buffer-size=" + ring_kib +
         " (KiB) holds about " + std::to_string((ring + merged - 1) / merged) + " packets (about " +
         std::to_string((ring + by_mtu - 1) / by_mtu) + " with the offloads off); a burst " +
         "longer than that is dropped. Turn them off, which also captures packets as they " +
         "were on the wire (\"ethtool -K " + s.interface + " tso off gso off gro off lro " +
         "off\", as Suricata and Zeek ask), or set immediate-mode=false (its blocks pack " +
         "packets by their size) or a larger buffer-size";
}

} // namespace

bool LiveBatch::follow_start(uint64_t starts, uint64_t since_ns, const PcapSocket &socket) {
  if (starts == starts_seen) return false;
  starts_seen = starts;
  skip_before_ns = since_ns;
  skip_until_mono_ns = monotonic_clock_ns() + socket.stale_window_ns();
  return true;
}

void LiveBatch::drop() {
  packets_read -= builder.packet_count();
  builder.reset(linktype);
  bytes = 0;
}

std::unique_ptr<PcapSocket> PcapSocket::open(const PcapLiveSettings &s, PcapLiveError *error,
                                             std::string *warning) {
  const std::string dev = "\"" + s.interface + "\"";
  char errbuf[PCAP_ERRBUF_SIZE] = "";
  std::unique_ptr<PcapSocket> sock(new PcapSocket());
  sock->pcap_ = pcap_create(s.interface.c_str(), errbuf);
  if (!sock->pcap_) {
    *error = {PcapLiveError::Kind::Other,
              "Could not capture on network interface " + dev + ": " + errbuf, "pcap_create failed"};
    return nullptr;
  }
  pcap_t *p = sock->pcap_;
  pcap_set_snaplen(p, static_cast<int>(s.snaplen));
  pcap_set_promisc(p, s.promiscuous);
  if (s.buffer_kib) pcap_set_buffer_size(p, static_cast<int>(s.buffer_kib * 1024));
  pcap_set_immediate_mode(p, s.immediate);
  // Without immediate mode the kernel hands over blocks of packets when a
  // block fills or this timeout passes; keep it within one batch timeout.
  const unsigned block_timeout_ms = std::max(1u, (s.timeout_us + 999) / 1000);
  pcap_set_timeout(p, static_cast<int>(block_timeout_ms));
  sock->block_timeout_ns_ = s.immediate ? 0 : uint64_t{block_timeout_ms} * 1000000u;
  sock->nano_ = pcap_set_tstamp_precision(p, PCAP_TSTAMP_PRECISION_NANO) == 0;

  const int rc = pcap_activate(p);
  if (rc < 0) {
    *error = activate_error(p, rc, s.interface);
    return nullptr;
  }
  if (rc > 0)
    *warning = "Capturing on " + dev + " with a limitation: " + pcap_statustostr(rc) + " (" +
               pcap_geterr(p) + ")";
  if (const std::string small_ring = offload_warning(p, s); !small_ring.empty())
    *warning += (warning->empty() ? "" : ". ") + small_ring;
  if (!s.filter.empty()) {
    if (pcap_compile(p, &sock->program_, s.filter.c_str(), 1, PCAP_NETMASK_UNKNOWN) != 0) {
      *error = {PcapLiveError::Kind::Filter,
                "Invalid packet filter \"" + s.filter + "\": " + pcap_geterr(p) +
                    ". Check its syntax in man pcap-filter.",
                "pcap_compile failed for " + dev};
      return nullptr;
    }
    sock->have_program_ = true;
    if (pcap_setfilter(p, &sock->program_) != 0) {
      *error = {PcapLiveError::Kind::Filter,
                "Could not install packet filter \"" + s.filter + "\" on " + dev + ": " +
                    pcap_geterr(p),
                "pcap_setfilter failed"};
      return nullptr;
    }
  }
  if (pcap_setnonblock(p, 1, errbuf) != 0 || (sock->fd_ = pcap_get_selectable_fd(p)) < 0) {
    *error = {PcapLiveError::Kind::Other,
              "Network interface " + dev + " cannot be waited on without blocking: " + errbuf,
              "pcap_setnonblock / pcap_get_selectable_fd"};
    return nullptr;
  }
  return sock;
}

PcapSocket::~PcapSocket() {
  if (have_program_) pcap_freecode(&program_);
  if (pcap_) pcap_close(pcap_);
}

uint32_t PcapSocket::linktype() const { return gpp::linktype_of(pcap_); }

const char *PcapSocket::linktype_name() const {
  return pcap_datalink_val_to_name(pcap_datalink(pcap_));
}

bool PcapSocket::stats(pcap_stat *out) { return pcap_stats(pcap_, out) == 0; }

uint64_t PcapSocket::drain() {
  uint64_t queued = 0;
  while (pcap_dispatch(pcap_, -1, count_packet, reinterpret_cast<u_char *>(&queued)) > 0) {
  }
  return queued;
}

Fill PcapSocket::fill(LiveBatch &b, const FillControl &c, size_t max_bytes, std::string *error) {
  b.nano = nano_;
  while (b.builder.size() < max_bytes) {
    if (!c.proceed()) return Fill::Stopped;
    uint32_t batch_size;
    uint64_t timeout_ns;
    c.limits(&batch_size, &timeout_ns);
    if (b.packets() >= batch_size) break;
    const uint64_t limit_ns = c.wait_limit ? c.wait_limit() : UINT64_MAX;
    const int want = static_cast<int>(std::min<uint32_t>(batch_size - b.packets(), kDispatchChunk));
    const int n = pcap_dispatch(pcap_, want, add_packet, reinterpret_cast<u_char *>(&b));
    if (n < 0) {
      *error = pcap_geterr(pcap_);
      return Fill::Failed;
    }
    if (n > 0) {
      // Packets keep coming: the deadline still holds.
      if (b.packets() && due_in(b, timeout_ns) == 0) break;
      continue;
    }
    // Nothing ready: wait for packets, the batch deadline, the caller's
    // limit or a wake-up, whichever comes first.
    uint64_t wait_ns = limit_ns;
    if (b.packets()) {
      const uint64_t left = due_in(b, timeout_ns);
      if (left == 0) break;
      wait_ns = std::min(wait_ns, left);
    }
    const timespec ts = {time_t(wait_ns / 1000000000u), long(wait_ns % 1000000000u)};
    pollfd fds[2] = {{fd_, POLLIN, 0}, {c.wake_fd, POLLIN, 0}};
    const int rc = ppoll(fds, 2, wait_ns == UINT64_MAX ? nullptr : &ts, nullptr);
    if (rc < 0 && errno != EINTR) {
      *error = std::string("waiting for packets: ") + strerror(errno);
      return Fill::Failed;
    }
    if (fds[1].revents && !c.on_wake()) return Fill::Stopped;
  }
  return Fill::Ready;
}

} // namespace gpp::capture
