// Hostile and broken input: tiny captures, lying length fields, endless IPv6
// extension chains, impossible L4 headers.  Besides the flags, parse() checks
// that nothing is read past caplen (exact-size buffers; run the suite with
// -Db_sanitize=address,undefined) at every truncated length.
#include <gtest/gtest.h>

#include <random>

#include "core_harness.h"

using namespace gpptest;

namespace {

Bytes syn(uint16_t sport = 1025, uint16_t dport = 25) {
  TcpSpec t;
  t.sport = sport;
  t.dport = dport;
  return tcp(t);
}

Bytes cut(Bytes b, size_t n) {
  b.resize(n);
  return b;
}

} // namespace

// ---- Tiny captures -----------------------------------------------------------

TEST(TinyCapture, EthernetShorterThanItsHeader) {
  const Bytes frame = ethernet(kEthIpv4, ipv4(Ipv4Spec{}, syn()));
  for (uint32_t caplen : {0u, 1u, 13u}) {
    const std::string n = std::to_string(caplen);
    // The wire packet was that short too: malformed link layer.
    GppResult r = parse("ethernet " + n + " bytes", GPP_LINKTYPE_ETHERNET, cut(frame, caplen), 0);
    EXPECT_EQ(GPP_STATUS_BAD_L2, r.status) << caplen;
    EXPECT_EQ(0, r.ip_version);
    EXPECT_EQ(0, r.ethertype);
    EXPECT_EQ(0u, r.rss_hash);
    // Cut by the snap length of a 60-byte frame: truncated.
    Crafted c{"ethernet " + n + " of 60 bytes", GPP_LINKTYPE_ETHERNET, cut(frame, caplen), 60, 0};
    r = parse(c);
    EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status) << caplen;
    EXPECT_EQ(0u, r.rss_hash);
  }
}

TEST(TinyCapture, OtherLinkTypesShorterThanTheirHeader) {
  const Bytes ip = ipv4(Ipv4Spec{}, syn());
  struct Case {
    const char *name;
    uint32_t linktype;
    Bytes bytes;
  };
  const Case cases[] = {
      {"sll 15 bytes", GPP_LINKTYPE_LINUX_SLL, cut(linux_sll(kEthIpv4, ip), 15)},
      {"sll2 19 bytes", GPP_LINKTYPE_LINUX_SLL2, cut(linux_sll2(kEthIpv4, ip), 19)},
      {"null 3 bytes", GPP_LINKTYPE_NULL, cut(loopback(2, true, ip), 3)},
      {"loop 1 byte", GPP_LINKTYPE_LOOP, cut(loopback(2, false, ip), 1)},
  };
  for (const Case &c : cases) {
    GppResult r = parse(c.name, c.linktype, c.bytes, 0);
    EXPECT_EQ(GPP_STATUS_BAD_L2, r.status) << c.name;
    Crafted snap{std::string(c.name) + " snapped", c.linktype, c.bytes, 100, 0};
    r = parse(snap);
    EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status) << c.name;
  }
}

TEST(TinyCapture, RawIpOfZeroAndOneByte) {
  GppResult r = parse("raw 0 bytes", GPP_LINKTYPE_RAW, {}, 0);
  EXPECT_NE(0u, r.status);
  EXPECT_EQ(0, r.status & GPP_STATUS_TRUNCATED);
  EXPECT_EQ(0, r.ip_version);
  Crafted snapped{"raw 0 of 40 bytes", GPP_LINKTYPE_RAW, {}, 40, 0};
  r = parse(snapped);
  EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status);
  // One byte: the version nibble says 4, the rest is missing.
  r = parse("raw 1 byte", GPP_LINKTYPE_RAW, {0x45}, 1);
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status);
  EXPECT_EQ(4, r.ip_version);
  EXPECT_EQ(0, r.ip_flags & GPP_IP_HEADER_PARSED);
  EXPECT_EQ(0u, r.rss_hash);
}

TEST(TinyCapture, EthernetHeaderWithoutIpHeader) {
  const Bytes frame = ethernet(kEthIpv4, {});
  GppResult r = parse("ethernet header only", GPP_LINKTYPE_ETHERNET, frame, 14);
  EXPECT_EQ(kEthIpv4, r.ethertype);
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status);
  Crafted c{"ethernet header only, snapped", GPP_LINKTYPE_ETHERNET, frame, 60, 14};
  r = parse(c);
  EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status);
}

// ---- IPv4 lengths ----------------------------------------------------------------

TEST(HostileIpv4, IhlBelowFive) {
  for (int ihl : {0, 1, 4}) {
    Ipv4Spec ip;
    ip.ihl_words = ihl;
    const GppResult r = parse("IHL " + std::to_string(ihl), GPP_LINKTYPE_ETHERNET,
                              eth_ipv4(ip, syn()), 34);
    EXPECT_EQ(GPP_STATUS_BAD_IHL, r.status) << ihl;
    EXPECT_EQ(4, r.ip_version);
    EXPECT_EQ(0, r.ip_flags & GPP_IP_L4_PARSED);
    EXPECT_EQ(0, r.sport);
  }
}

TEST(HostileIpv4, TotalLengthPastTheFrame) {
  Ipv4Spec ip;
  ip.total_length = 20 + 20 + 100; // 100 bytes more than the packet had
  const GppResult r = parse("total length past frame", GPP_LINKTYPE_ETHERNET,
                            eth_ipv4(ip, syn()), 54);
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.ipv4_checksum);
  EXPECT_EQ(GPP_CHECKSUM_UNVERIFIED, r.l4_checksum);
  EXPECT_EQ(1025, r.sport); // the TCP header itself is all there
}

TEST(HostileIpv4, CutBySnaplenInsideTcpHeaderIsTruncatedOnly) {
  const Bytes full = eth_ipv4(Ipv4Spec{}, syn());
  Crafted c{"snapped in TCP header", GPP_LINKTYPE_ETHERNET, cut(full, 44),
            static_cast<uint32_t>(full.size()), 44};
  GppResult r = parse(c);
  EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status);
  EXPECT_EQ(4, r.ip_version);
  // The ports were captured (as tcpdump and Wireshark show them), the flags were not.
  EXPECT_EQ(GPP_IP_L4_PARSED, r.ip_flags & GPP_IP_L4_PARSED);
  EXPECT_EQ(1025, r.sport);
  EXPECT_EQ(25, r.dport);
  EXPECT_EQ(0, r.tcp_flags);
  EXPECT_EQ(0u, r.payload_offset);
  EXPECT_EQ(0u, r.payload_length);
  // Cut inside the ports: nothing of TCP.
  c.bytes = cut(full, 36);
  c.header_bytes = 36;
  r = parse(c);
  EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status);
  EXPECT_EQ(0, r.ip_flags & GPP_IP_L4_PARSED);
  EXPECT_EQ(0, r.sport);
}

TEST(HostileIpv4, CutBySnaplenInsideTcpOptionsIsTruncated) {
  // 40-byte TCP header (data offset 10); the capture ends after 8 option bytes.
  TcpSpec t;
  t.sport = 1025;
  t.dport = 25;
  t.options = {2, 4, 0x05, 0xb4, 1, 3, 3, 7, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0};
  const Bytes full = eth_ipv4(Ipv4Spec{}, tcp(t));
  ASSERT_EQ(14u + 20 + 40, full.size());
  Crafted c{"snapped in TCP options", GPP_LINKTYPE_ETHERNET, cut(full, 62),
            static_cast<uint32_t>(full.size()), 62};
  const GppResult r = parse(c);
  // "truncated: the capture ends inside a header" -- the options are part of the TCP header.
  EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status);
  EXPECT_EQ(1025, r.sport);
  EXPECT_EQ(0u, r.payload_length);
}

TEST(HostileIpv4, CutBySnaplenInsideIpOptions) {
  Ipv4Spec ip;
  ip.options = Bytes(12, 1);
  const Bytes full = eth_ipv4(ip, syn());
  Crafted c{"snapped in IPv4 options", GPP_LINKTYPE_ETHERNET, cut(full, 40),
            static_cast<uint32_t>(full.size()), 40};
  GppResult r = parse(c);
  EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status);
  EXPECT_EQ(GPP_CHECKSUM_UNVERIFIED, r.ipv4_checksum);
  // Same cut where the wire packet ended there too: malformed, not truncated.
  r = parse("IPv4 options past the packet", GPP_LINKTYPE_ETHERNET, cut(full, 40), 34);
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status);
}

TEST(HostileIpv4, TotalLengthBelowHeaderLength) {
  for (int total : {0, 16, 19}) {
    Ipv4Spec ip;
    ip.total_length = total;
    const GppResult r = parse("total length " + std::to_string(total), GPP_LINKTYPE_ETHERNET,
                              eth_ipv4(ip, syn()), 34);
    EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status) << total;
    EXPECT_EQ(0, r.ip_flags & GPP_IP_L4_PARSED);
  }
  Ipv4Spec ip;
  ip.options = {1, 1, 1, 1};
  ip.total_length = 20; // shorter than its own 24-byte header
  const GppResult r = parse("total length 20 with IHL 6", GPP_LINKTYPE_ETHERNET,
                            eth_ipv4(ip, syn()), 38);
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status);
}

TEST(HostileIpv4, NoRoomForTheL4Header) {
  Ipv4Spec ip;
  ip.total_length = 20 + 10; // TCP needs 20
  // The ports fit in those 10 bytes and are reported; the rest of the header cannot be.
  GppResult r = parse("tcp in 10 bytes", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, syn()), 38);
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status);
  EXPECT_EQ(1025, r.sport);
  EXPECT_EQ(0, r.tcp_flags);
  EXPECT_EQ(0u, r.payload_length);
  ip.total_length = 20;
  r = parse("tcp in 0 bytes", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, syn()), 34);
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status);
  EXPECT_EQ(0, r.sport);
  Ipv4Spec icmp_ip;
  icmp_ip.proto = kIcmp;
  icmp_ip.total_length = 20 + 3;
  r = parse("icmp in 3 bytes", GPP_LINKTYPE_ETHERNET, eth_ipv4(icmp_ip, icmp(8, 0, {})), 36);
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status);
}

TEST(HostileIpv4, BadVersionNibble) {
  Ipv4Spec ip;
  ip.version = 6;
  GppResult r = parse("ethertype IPv4, version 6", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, syn()), 15);
  EXPECT_EQ(GPP_STATUS_BAD_IP_VERSION, r.status);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0u, r.rss_hash);
  r = parse("linktype 228, version 6", GPP_LINKTYPE_IPV4, ipv4(ip, syn()), 1);
  EXPECT_EQ(GPP_STATUS_BAD_IP_VERSION, r.status);
  ip.version = 5;
  r = parse("raw, version 5", GPP_LINKTYPE_RAW, ipv4(ip, syn()), 1);
  EXPECT_EQ(GPP_STATUS_BAD_IP_VERSION, r.status);
  EXPECT_EQ(0u, r.rss_hash);
  ip.version = 0;
  r = parse("null AF_INET, version 0", GPP_LINKTYPE_NULL, loopback(2, true, ipv4(ip, syn())), 5);
  EXPECT_EQ(GPP_STATUS_BAD_IP_VERSION, r.status);

  Ipv6Spec ip6;
  ip6.version = 4;
  r = parse("ethertype IPv6, version 4", GPP_LINKTYPE_ETHERNET, eth_ipv6(ip6, syn()), 15);
  EXPECT_EQ(GPP_STATUS_BAD_IP_VERSION, r.status);
  EXPECT_EQ(0, r.ip_version);
  r = parse("linktype 229, version 4", GPP_LINKTYPE_IPV6, ipv6(ip6, syn()), 1);
  EXPECT_EQ(GPP_STATUS_BAD_IP_VERSION, r.status);
}

// ---- IPv6 lengths and chains ----------------------------------------------------------

TEST(HostileIpv6, PayloadLengthPastTheFrame) {
  Ipv6Spec ip;
  ip.payload_length = 20 + 500;
  const GppResult r = parse("ipv6 payload length past frame", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(ip, syn()), 74);
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status);
  EXPECT_EQ(6, r.ip_version);
}

TEST(HostileIpv6, HeaderCutShort) {
  const Bytes full = ipv6(Ipv6Spec{}, syn());
  GppResult r = parse("ipv6 header of 30 bytes", GPP_LINKTYPE_RAW, cut(full, 30), 1);
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status);
  EXPECT_EQ(6, r.ip_version);
  EXPECT_EQ(0, r.ip_flags & GPP_IP_HEADER_PARSED);
  EXPECT_EQ(0u, r.rss_hash);
  Crafted c{"ipv6 header snapped at 30 bytes", GPP_LINKTYPE_RAW, cut(full, 30),
            static_cast<uint32_t>(full.size()), 30};
  r = parse(c);
  EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status);
}

TEST(HostileIpv6, EndlessExtensionChainHitsTheLimit) {
  Ipv6Spec ip;
  ip.proto = kUdp;
  ip.exts.assign(300, dest_options(8));
  const Bytes pkt = eth_ipv6(ip, udp(1, 2, {}));
  ASSERT_EQ(14u + 40 + 300 * 8 + 8, pkt.size());
  // The walk stops before header 256, so 255 captured headers are enough to know.
  const GppResult r = parse("300 destination options", GPP_LINKTYPE_ETHERNET, pkt,
                            54 + GPP_MAX_IPV6_EXT_HEADERS * 8);
  EXPECT_EQ(GPP_STATUS_EXT_CHAIN_LIMIT, r.status);
  EXPECT_EQ(255, r.ipv6_ext_count);
  EXPECT_EQ(0, r.ip_flags & GPP_IP_L4_PARSED);
  EXPECT_EQ(0, r.sport);
}

TEST(HostileIpv6, OneHeaderPastTheLimit) {
  Ipv6Spec ip;
  ip.proto = kUdp;
  ip.exts.assign(GPP_MAX_IPV6_EXT_HEADERS + 1, hop_by_hop(8));
  const GppResult r = parse("256 hop-by-hop", GPP_LINKTYPE_RAW, ipv6(ip, udp(1, 2, {})),
                            40 + GPP_MAX_IPV6_EXT_HEADERS * 8);
  EXPECT_EQ(GPP_STATUS_EXT_CHAIN_LIMIT, r.status);
}

TEST(HostileIpv6, ExtensionHeaderPastTheCapture) {
  Ipv6Spec ip;
  ip.proto = kUdp;
  ip.exts = {hop_by_hop(8), dest_options(64)};
  const Bytes full = eth_ipv6(ip, udp(1, 2, pattern_bytes(20)));
  // The packet ends 16 bytes into the 64-byte destination options header.
  const Bytes short_pkt = cut(full, 54 + 8 + 16);
  GppResult r = parse("ext header past the packet", GPP_LINKTYPE_ETHERNET, short_pkt, 54 + 8 + 2);
  EXPECT_TRUE(r.status & GPP_STATUS_BAD_EXT_HEADER) << std::hex << r.status;
  EXPECT_EQ(0, r.status & GPP_STATUS_TRUNCATED);
  EXPECT_EQ(0, r.ip_flags & GPP_IP_L4_PARSED);
  // The same bytes cut by the snap length of the real packet: truncated.
  Crafted c{"ext header snapped", GPP_LINKTYPE_ETHERNET, short_pkt,
            static_cast<uint32_t>(full.size()), static_cast<uint32_t>(short_pkt.size())};
  r = parse(c);
  EXPECT_EQ(GPP_STATUS_TRUNCATED, r.status);
  EXPECT_EQ(1, r.ipv6_ext_count);
}

TEST(HostileIpv6, ExtensionHeaderPastThePayloadLength) {
  Ipv6Spec ip;
  ip.proto = kTcp;
  ip.exts = {dest_options(16)};
  ip.payload_length = 8; // the 16-byte header does not fit
  const GppResult r = parse("ext header past payload length", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(ip, syn()), 54 + 16);
  EXPECT_EQ(GPP_STATUS_BAD_EXT_HEADER, r.status);
  EXPECT_EQ(0, r.ip_flags & GPP_IP_L4_PARSED);
}

TEST(HostileIpv6, AuthHeaderLengthPastThePacket) {
  Ipv6Spec ip;
  ip.proto = kTcp;
  Ext ah = auth_header(12);
  ah.bytes[1] = 200; // claims (200 + 2) * 4 bytes
  ip.exts = {ah};
  const GppResult r = parse("AH length 808", GPP_LINKTYPE_RAW, ipv6(ip, syn()), 42);
  EXPECT_TRUE(r.status & GPP_STATUS_BAD_EXT_HEADER) << std::hex << r.status;
}

// ---- L4 headers ------------------------------------------------------------------

TEST(HostileL4, TcpDataOffsetBelowFive) {
  for (int words : {0, 4}) {
    TcpSpec t;
    t.data_offset_words = words;
    t.payload = pattern_bytes(8);
    GppResult r = parse("tcp data offset " + std::to_string(words), GPP_LINKTYPE_ETHERNET,
                        eth_ipv4(Ipv4Spec{}, tcp(t)), 54);
    EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status) << words;
    EXPECT_EQ(0u, r.payload_length);
    Ipv6Spec ip6;
    r = parse("tcp6 data offset " + std::to_string(words), GPP_LINKTYPE_ETHERNET,
              eth_ipv6(ip6, tcp(t)), 74);
    EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status) << words;
  }
}

TEST(HostileL4, TcpDataOffsetPastTheSegment) {
  TcpSpec t;
  t.data_offset_words = 15; // 60 bytes in a 28-byte segment
  t.payload = pattern_bytes(8);
  const GppResult r = parse("tcp data offset 15", GPP_LINKTYPE_ETHERNET,
                            eth_ipv4(Ipv4Spec{}, tcp(t)), 54);
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status);
  EXPECT_EQ(0u, r.payload_length);
}

TEST(HostileL4, UdpLengthFieldBelowEight) {
  for (int len : {0, 7}) {
    Ipv4Spec ip;
    ip.proto = kUdp;
    const GppResult r = parse("udp length " + std::to_string(len), GPP_LINKTYPE_ETHERNET,
                              eth_ipv4(ip, udp(1, 2, pattern_bytes(10), len)), 42);
    EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status) << len;
  }
}

TEST(HostileL4, UdpLengthFieldPastTheIpPayload) {
  Ipv4Spec ip;
  ip.proto = kUdp;
  GppResult r = parse("udp length 19 in 18 bytes", GPP_LINKTYPE_ETHERNET,
                      eth_ipv4(ip, udp(1, 2, pattern_bytes(10), 19)), 42);
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status);
  Ipv6Spec ip6;
  ip6.proto = kUdp;
  r = parse("udp6 length 4000", GPP_LINKTYPE_ETHERNET,
            eth_ipv6(ip6, udp(1, 2, pattern_bytes(10), 4000)), 62);
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status);
}

TEST(HostileL4, UdpInIpPayloadShorterThanEight) {
  Ipv4Spec ip;
  ip.proto = kUdp;
  ip.total_length = 20 + 6;
  const GppResult r = parse("udp in 6 bytes", GPP_LINKTYPE_ETHERNET,
                            eth_ipv4(ip, udp(1, 2, {})), 38);
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, r.status);
}

// ---- Random damage -------------------------------------------------------------------

// Random bytes flipped in valid packets of every link type, random capture and
// wire lengths: no crash, no read past caplen, every record keeps its promises.
TEST(Fuzz, RandomlyDamagedPacketsKeepRecordInvariants) {
  Ipv4Spec frag4;
  frag4.more_fragments = true;
  Ipv6Spec chain6;
  chain6.proto = kUdp;
  chain6.exts = {hop_by_hop(8), routing_header(0, 1, {ipv6_addr("2001:db8::5")}),
                 fragment_header(0, true), auth_header(12), dest_options(8)};
  Ipv6Spec jumbo6;
  jumbo6.proto = kUdp;
  jumbo6.payload_length = 0;
  jumbo6.exts = {hop_by_hop_jumbo(70000)};
  struct Seed {
    uint32_t linktype;
    Bytes bytes;
  };
  const std::vector<Seed> seeds = {
      {GPP_LINKTYPE_ETHERNET, eth_ipv4(Ipv4Spec{}, syn())},
      {GPP_LINKTYPE_ETHERNET,
       ethernet(kEthIpv4, ipv4(frag4, syn()), {{kEthQinQ, 5}, {kEthVlan, 6}})},
      {GPP_LINKTYPE_ETHERNET, eth_ipv6(chain6, udp(1, 2, pattern_bytes(30)))},
      {GPP_LINKTYPE_ETHERNET, mpls_ethernet({1, 2}, ipv6(Ipv6Spec{}, syn()))},
      {GPP_LINKTYPE_RAW, ipv6(jumbo6, udp(3, 4, pattern_bytes(16), 0))},
      {GPP_LINKTYPE_LINUX_SLL, linux_sll(kEthIpv6, ipv6(chain6, udp(5, 6, {})))},
      {GPP_LINKTYPE_LINUX_SLL2, linux_sll2(kEthIpv4, ipv4(Ipv4Spec{}, icmp(8, 0, {1, 2, 3, 4})))},
      {GPP_LINKTYPE_NULL, loopback(30, true, ipv6(Ipv6Spec{}, syn()))},
      {GPP_LINKTYPE_LOOP, loopback(2, false, ipv4(Ipv4Spec{}, syn()))},
      {GPP_LINKTYPE_IPV4, ipv4(Ipv4Spec{}, syn())},
      {GPP_LINKTYPE_IPV6, ipv6(chain6, udp(7, 8, pattern_bytes(3)))},
  };
  std::mt19937 rng(20240601);
  const gpp::CoreConfig configs[] = {make_config(true, false), make_config(false, true)};
  int iterations = 0;
  for (int round = 0; round < 1500; ++round) {
    for (const Seed &s : seeds) {
      Bytes b = s.bytes;
      const int flips = 1 + static_cast<int>(rng() % 6);
      for (int i = 0; i < flips; ++i) {
        const size_t at = rng() % b.size();
        b[at] = static_cast<uint8_t>(rng() % 3 == 0 ? rng() : b[at] ^ (1u << (rng() % 8)));
      }
      const uint32_t caplen = static_cast<uint32_t>(rng() % (b.size() + 1));
      const uint32_t wirelen = rng() % 2 ? static_cast<uint32_t>(b.size()) : caplen;
      const GppResult r = run_core(b, caplen, wirelen, s.linktype, configs[round % 2]);
      const std::string broken = record_violations(r, caplen, wirelen);
      ASSERT_EQ("", broken) << "round " << round << " linktype " << s.linktype << " caplen "
                            << caplen;
      ++iterations;
    }
  }
  EXPECT_EQ(1500 * static_cast<int>(seeds.size()), iterations);
}
