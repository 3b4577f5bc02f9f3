// Writes seed corpora for the fuzz harnesses from ../shared/data:
//   fuzz-seeds packets OUT CAPTURE...   the first 16 frames of each capture,
//                                       as packet-core inputs (fuzz_common.h),
//                                       half of them with the tunnel walk
//   fuzz-seeds tunnels OUT              crafted Ethernet frames of every
//                                       encapsulation the walk opens, nested
//                                       ones and refused ones, with the walk
//   fuzz-seeds lines OUT PREFIX LINES FILE...
//                                       each file cut into chunks of LINES
//                                       lines (at most 24 chunks a file), each
//                                       written after PREFIX (a byte, or "")
// One file per seed, named by its content's hash, so reruns add nothing new.
#include <pcap/pcap.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_common.h"
#include "packet_builder.h"
#include "pcap_linktype.h"

namespace {

int written = 0;

void write_seed(const std::string &dir, const std::string &bytes) {
  char name[32];
  std::snprintf(name, sizeof name, "/seed-%016zx", std::hash<std::string>()(bytes));
  std::ofstream(dir + name, std::ios::binary) << bytes;
  ++written;
}

void packets(const std::string &out, const char *capture) {
  char errbuf[PCAP_ERRBUF_SIZE];
  pcap_t *p = pcap_open_offline(capture, errbuf);
  if (!p) return; // some captures are meant to be unreadable
  const uint8_t linktype = gppfuzz::linktype_index(gpp::linktype_of(p));
  pcap_pkthdr *h;
  const u_char *bytes;
  for (int n = 0; n < 16 && pcap_next_ex(p, &h, &bytes) == 1; ++n) {
    std::string seed;
    seed += static_cast<char>(linktype);
    seed += static_cast<char>(n % 8); // the flags: L4 checksums, symmetric RSS, the walk
    seed.append(reinterpret_cast<const char *>(bytes), h->caplen);
    write_seed(out, seed);
  }
  pcap_close(p);
}

// Ethernet frames of every encapsulation, each around a TCP/IPv4, UDP/IPv6
// or ICMP packet, and nests of them.
std::vector<gpptest::Bytes> tunnel_frames() {
  using namespace gpptest;
  TcpSpec syn;
  syn.payload = pattern_bytes(12);
  Ipv4Spec v4;
  const Bytes tcp4 = ipv4(v4, tcp(syn));
  Ipv6Spec v6;
  v6.proto = kUdp;
  const Bytes udp6 = ipv6(v6, udp(5353, 53, pattern_bytes(9)));
  Ipv4Spec ping;
  ping.proto = kIcmp;
  const Bytes icmp4 = ipv4(ping, icmp(8, 0, pattern_bytes(8)));
  const Bytes frame = ethernet(kEthIpv4, tcp4, {{kEthVlan, 7}});
  const auto in_udp = [](uint16_t sport, uint16_t dport, const Bytes &payload) {
    Ipv4Spec s;
    s.proto = kUdp;
    return ipv4(s, udp(sport, dport, payload));
  };
  const auto in_ip = [](uint8_t proto, const Bytes &payload) {
    Ipv4Spec s;
    s.proto = proto;
    return ipv4(s, payload);
  };
  GreSpec gre_keyed;
  gre_keyed.checksum = gre_keyed.key = gre_keyed.sequence = true;
  GreSpec teb;
  teb.protocol = kEthTeb;
  teb.key = true;
  GreSpec erspan1;
  erspan1.protocol = kEthErspan;
  GreSpec erspan_2 = erspan1;
  erspan_2.sequence = true;
  GreSpec erspan_3 = erspan_2;
  erspan_3.protocol = kEthErspan3;
  GreSpec v6_gre;
  v6_gre.protocol = kEthIpv6;
  GeneveSpec geneve_eth;
  geneve_eth.option_words = 2;
  GeneveSpec geneve_ip;
  geneve_ip.protocol = kEthIpv4;
  GtpSpec gtp_ext;
  gtp_ext.extensions = {{0x85, {0x00, 0x09}}};
  TeredoSpec teredo_both;
  teredo_both.auth = teredo_both.origin = true;
  teredo_both.id_length = 2;
  // IP packets that carry `tcp4` through one level each.
  const Bytes vx = in_udp(1000, kPortVxlan, vxlan(42, ethernet(kEthIpv4, tcp4)));
  const Bytes ge = in_udp(1000, kPortGeneve, geneve(geneve_ip, vx));
  const Bytes gr = in_ip(kGre, gre(gre_keyed, ge));
  const Bytes ip = in_ip(kIpIp, gr);
  const Bytes gt = in_udp(kPortGtpU, kPortGtpU, gtp(gtp_ext, ip));
  return {
      ethernet(kEthIpv4, in_udp(1000, kPortVxlan, vxlan(42, frame))),
      ethernet(kEthIpv4, in_udp(1000, 8472, vxlan(42, frame))),
      ethernet(kEthIpv4, in_udp(1000, kPortGeneve, geneve(geneve_eth, frame))),
      ethernet(kEthIpv4, in_udp(1000, kPortGeneve, geneve(geneve_ip, icmp4))),
      ethernet(kEthIpv4, in_ip(kGre, gre(gre_keyed, tcp4))),
      ethernet(kEthIpv6, [&] { Ipv6Spec o; o.proto = kGre; return ipv6(o, gre(v6_gre, udp6)); }()),
      ethernet(kEthIpv4, in_ip(kGre, gre(teb, frame))),
      ethernet(kEthIpv4, in_udp(1000, kPortGreInUdp, gre(GreSpec{}, tcp4))),
      ethernet(kEthIpv4, in_ip(kGre, gre(erspan1, frame))),
      ethernet(kEthIpv4, in_ip(kGre, gre(erspan_2, erspan2(5, frame)))),
      ethernet(kEthIpv4, in_ip(kGre, gre(erspan_3, erspan3(5, frame, true)))),
      ethernet(kEthIpv4, in_udp(kPortGtpU, kPortGtpU, gtp(GtpSpec{}, tcp4))),
      ethernet(kEthIpv4, in_udp(40000, kPortGtpU, gtp(gtp_ext, udp6))),
      ethernet(kEthIpv4, in_ip(kIpIp, tcp4)),
      ethernet(kEthIpv4, in_ip(kIpv6InIp, udp6)),
      ethernet(kEthIpv6, [&] { Ipv6Spec o; o.proto = kIpIp; return ipv6(o, tcp4); }()),
      ethernet(kEthIpv4, in_udp(40000, kPortTeredo, teredo(TeredoSpec{}, udp6))),
      ethernet(kEthIpv4, in_udp(kPortTeredo, 40000, teredo(teredo_both, udp6))),
      ethernet(kEthPppoeSession, pppoe_session(1, 0x0021, tcp4)),
      ethernet(kEthPppoeSession, pppoe_session(1, 0x0057, udp6)),
      ethernet(kEthPbb, pbb_itag(0x123456, frame), {{kEthQinQ, 100}}),
      ethernet(kEthVnTag, vntag(9, kEthIpv4, tcp4)),
      ethernet(kEthETag, etag(9, 1, kEthIpv6, udp6)),
      ethernet(kEthIpv4, gt), // five levels: one past the walk's depth
      ethernet(kEthIpv4, ip), // four
      ethernet(kEthIpv4, in_udp(kPortGtpU, kPortGtpU, gtp(GtpSpec{}, frame))), // refused: Ethernet in GTP-U
  };
}

void tunnels(const std::string &out) {
  const std::vector<gpptest::Bytes> frames = tunnel_frames();
  for (size_t n = 0; n < frames.size(); ++n) {
    std::string seed;
    seed += static_cast<char>(gppfuzz::linktype_index(GPP_LINKTYPE_ETHERNET));
    seed += static_cast<char>(gppfuzz::kFlagDecap | gppfuzz::kFlagVxlanLinux | n % 4);
    seed.append(frames[n].begin(), frames[n].end());
    write_seed(out, seed);
  }
}

void lines(const std::string &out, const std::string &prefix, int per_chunk, const char *file) {
  std::ifstream in(file, std::ios::binary);
  std::string line, chunk = prefix;
  int in_chunk = 0, chunks = 0;
  while (chunks < 24 && std::getline(in, line)) {
    chunk += line + "\n";
    if (++in_chunk == per_chunk) {
      write_seed(out, chunk);
      chunk = prefix;
      in_chunk = 0;
      ++chunks;
    }
  }
  if (in_chunk && chunks < 24) write_seed(out, chunk);
}

} // namespace

int main(int argc, char **argv) {
  const std::string mode = argc > 2 ? argv[1] : "";
  if (mode == "packets") {
    for (int i = 3; i < argc; ++i) packets(argv[2], argv[i]);
  } else if (mode == "tunnels") {
    tunnels(argv[2]);
  } else if (mode == "lines" && argc > 5) {
    const int per_chunk = std::atoi(argv[4]);
    for (int i = 5; i < argc; ++i) lines(argv[2], argv[3], per_chunk > 0 ? per_chunk : 1, argv[i]);
  } else {
    std::fprintf(stderr,
                 "usage: %s packets OUT CAPTURE... | tunnels OUT | lines OUT PREFIX LINES FILE...\n",
                 argv[0]);
    return 2;
  }
  std::printf("%d seeds in %s\n", written, argv[2]);
  return written ? 0 : 1;
}
