// Header paths of the packet core: link layers, VLAN / MPLS, IPv4, IPv6
// extension chains, TCP / UDP / ICMP, and L4 checksum verification.  Every
// packet goes through parse() (core_harness.h), which also runs it on an
// exact-size buffer and at every truncated length.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "core_harness.h"

using namespace gpptest;

namespace {

const Bytes kSrc4 = ipv4_addr("10.1.2.3");
const Bytes kDst4 = ipv4_addr("172.16.254.9");
const Bytes kSrc6 = ipv6_addr("2001:db8:1::10");
const Bytes kDst6 = ipv6_addr("2001:db8:2::20");

Ipv4Spec v4(uint8_t proto = kTcp) {
  Ipv4Spec s;
  s.src = kSrc4;
  s.dst = kDst4;
  s.proto = proto;
  return s;
}

Ipv6Spec v6(uint8_t proto = kTcp) {
  Ipv6Spec s;
  s.src = kSrc6;
  s.dst = kDst6;
  s.proto = proto;
  return s;
}

Bytes web_syn(uint16_t sport = 51000, uint16_t dport = 443, const Bytes &payload = {}) {
  TcpSpec t;
  t.sport = sport;
  t.dport = dport;
  t.flags = kSyn;
  t.payload = payload;
  return tcp(t);
}

// The fields every clean TCP/IPv4 packet of this file must show.
void expect_tcp_v4(const GppResult &r, uint16_t l3, uint16_t sport = 51000, uint16_t dport = 443) {
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(4, r.ip_version);
  EXPECT_EQ(l3, r.l3_offset);
  EXPECT_EQ(kTcp, r.l4_proto);
  EXPECT_EQ(l3 + 20u, r.l4_offset);
  EXPECT_EQ(sport, r.sport);
  EXPECT_EQ(dport, r.dport);
  EXPECT_EQ(kSrc4, addr_of(r.src, 4));
  EXPECT_EQ(kDst4, addr_of(r.dst, 4));
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.ipv4_checksum);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(expected_rss(kSrc4, kDst4, true, sport, dport), r.rss_hash);
}

void expect_tcp_v6(const GppResult &r, uint16_t l3, uint16_t sport = 51000, uint16_t dport = 443) {
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(6, r.ip_version);
  EXPECT_EQ(l3, r.l3_offset);
  EXPECT_EQ(kTcp, r.l4_proto);
  EXPECT_EQ(l3 + 40u, r.l4_offset);
  EXPECT_EQ(sport, r.sport);
  EXPECT_EQ(dport, r.dport);
  EXPECT_EQ(kSrc6, addr_of(r.src, 6));
  EXPECT_EQ(kDst6, addr_of(r.dst, 6));
  EXPECT_EQ(GPP_CHECKSUM_NONE, r.ipv4_checksum);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(expected_rss(kSrc6, kDst6, true, sport, dport), r.rss_hash);
}

} // namespace

// ---- Ethernet and VLAN tags ---------------------------------------------------

TEST(Ethernet, Ipv4TcpAllFields) {
  const Bytes payload = pattern_bytes(37);
  Ipv4Spec ip = v4();
  ip.ttl = 57;
  ip.id = 0x7777;
  TcpSpec t;
  t.sport = 51000;
  t.dport = 443;
  t.flags = kAck | kPsh;
  t.payload = payload;
  const Bytes pkt = eth_ipv4(ip, tcp(t));
  const GppResult r = parse("eth/ipv4/tcp", GPP_LINKTYPE_ETHERNET, pkt, 54);
  expect_tcp_v4(r, 14);
  EXPECT_EQ(kEthIpv4, r.ethertype);
  EXPECT_EQ(0, r.vlan_count);
  EXPECT_EQ(0, r.mpls_label_count);
  EXPECT_EQ(57, r.ttl);
  EXPECT_EQ(kAck | kPsh, r.tcp_flags);
  EXPECT_EQ(pkt.size() - 14, r.ip_length);
  EXPECT_EQ(GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED, r.ip_flags);
  EXPECT_EQ(0, r.frag_offset);
  EXPECT_EQ(54u, r.payload_offset);
  EXPECT_EQ(payload.size(), r.payload_length);
  EXPECT_EQ(1u, r.packet_number);
  EXPECT_EQ(1700000000123456789ull, r.timestamp_ns);
  EXPECT_EQ(pkt.size(), r.caplen);
  EXPECT_EQ(pkt.size(), r.wirelen);
}

TEST(Ethernet, PacketNumberAndTimestampCopied) {
  const Bytes pkt = eth_ipv4(v4(), web_syn());
  const GppResult r = run_core(pkt, static_cast<uint32_t>(pkt.size()), 1500,
                               GPP_LINKTYPE_ETHERNET, make_config(), 987654321ull, 42ull);
  EXPECT_EQ(987654321ull, r.packet_number);
  EXPECT_EQ(42ull, r.timestamp_ns);
  EXPECT_EQ(1500u, r.wirelen);
  EXPECT_EQ(pkt.size(), r.caplen);
}

TEST(Ethernet, Ipv6Tcp) {
  const GppResult r = parse("eth/ipv6/tcp", GPP_LINKTYPE_ETHERNET, eth_ipv6(v6(), web_syn()), 74);
  expect_tcp_v6(r, 14);
  EXPECT_EQ(kEthIpv6, r.ethertype);
  EXPECT_EQ(63, r.ttl);
  EXPECT_EQ(0, r.ipv6_ext_count);
}

TEST(Vlan, Single8021QTagMasksPriorityBits) {
  // TCI 0xa064: PCP 5, DEI 0, VID 100.
  const Bytes pkt = ethernet(kEthIpv4, ipv4(v4(), web_syn()), {{kEthVlan, 0xa064}});
  const GppResult r = parse("802.1Q", GPP_LINKTYPE_ETHERNET, pkt, 58);
  expect_tcp_v4(r, 18);
  EXPECT_EQ(kEthIpv4, r.ethertype);
  ASSERT_EQ(1, r.vlan_count);
  EXPECT_EQ(100, r.vlan_ids[0]);
  EXPECT_EQ(0, r.vlan_ids[1]);
}

TEST(Vlan, QinQ8021adOuter8021QInner) {
  const Bytes pkt =
      ethernet(kEthIpv4, ipv4(v4(), web_syn()), {{kEthQinQ, 0x10c8}, {kEthVlan, 0x312c}});
  const GppResult r = parse("802.1ad+802.1Q", GPP_LINKTYPE_ETHERNET, pkt, 62);
  expect_tcp_v4(r, 22);
  ASSERT_EQ(2, r.vlan_count);
  EXPECT_EQ(200, r.vlan_ids[0]); // outer S-tag
  EXPECT_EQ(300, r.vlan_ids[1]); // inner C-tag
}

TEST(Vlan, OldQinQTpid9100) {
  const Bytes pkt =
      ethernet(kEthIpv6, ipv6(v6(), web_syn()), {{kEthQinQOld, 0x0fff}, {kEthVlan, 0x0001}});
  const GppResult r = parse("0x9100+802.1Q", GPP_LINKTYPE_ETHERNET, pkt, 22 + 60);
  expect_tcp_v6(r, 22);
  ASSERT_EQ(2, r.vlan_count);
  EXPECT_EQ(4095, r.vlan_ids[0]);
  EXPECT_EQ(1, r.vlan_ids[1]);
}

TEST(Vlan, ThreeStackedTagsRecordedOuterFirst) {
  const Bytes pkt = ethernet(kEthIpv6, ipv6(v6(), web_syn()),
                             {{kEthQinQ, 10}, {kEthVlan, 20}, {kEthVlan, 30}});
  const GppResult r = parse("3 tags", GPP_LINKTYPE_ETHERNET, pkt, 26 + 60);
  expect_tcp_v6(r, 26);
  EXPECT_EQ(kEthIpv6, r.ethertype);
  ASSERT_EQ(3, r.vlan_count);
  EXPECT_EQ(10, r.vlan_ids[0]);
  EXPECT_EQ(20, r.vlan_ids[1]);
  EXPECT_EQ(30, r.vlan_ids[2]);
  EXPECT_EQ(0, r.vlan_ids[3]);
}

TEST(Vlan, FourTagsIsTheLimitAndParses) {
  const Bytes pkt = ethernet(kEthIpv4, ipv4(v4(), web_syn()),
                             {{kEthQinQ, 1}, {kEthVlan, 2}, {kEthVlan, 3}, {kEthVlan, 4}});
  const GppResult r = parse("4 tags", GPP_LINKTYPE_ETHERNET, pkt, 30 + 40);
  expect_tcp_v4(r, 30);
  ASSERT_EQ(4, r.vlan_count);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(i + 1, r.vlan_ids[i]);
}

TEST(Vlan, FiveTagsAreBadL2) {
  static_assert(GPP_MAX_VLANS == 4, "test written for 4 kept VLAN ids");
  const Bytes pkt = ethernet(kEthIpv4, ipv4(v4(), web_syn()),
                             {{kEthQinQ, 1}, {kEthVlan, 2}, {kEthVlan, 3}, {kEthVlan, 4},
                              {kEthVlan, 5}});
  // The fifth TPID (bytes 28..29) is what tells the parser there are too many.
  const GppResult r = parse("5 tags", GPP_LINKTYPE_ETHERNET, pkt, 30);
  EXPECT_EQ(GPP_STATUS_BAD_L2, r.status);
  EXPECT_EQ(4, r.vlan_count);
  EXPECT_EQ(4, r.vlan_ids[3]);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0u, r.rss_hash);
}

TEST(Vlan, TagFollowedBy8023LengthIsNotIp) {
  const Bytes llc = {0xaa, 0xaa, 0x03, 0, 0, 0, 0x08, 0x00, 1, 2, 3, 4};
  const Bytes pkt = ethernet(static_cast<uint16_t>(llc.size()), llc, {{kEthVlan, 7}});
  const GppResult r = parse("802.1Q + 802.3 length", GPP_LINKTYPE_ETHERNET, pkt, 18);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(1, r.vlan_count);
  EXPECT_EQ(7, r.vlan_ids[0]);
  EXPECT_EQ(0, r.ethertype);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0u, r.rss_hash);
}

TEST(Ethernet, Ieee8023LlcFrameIsNotIp) {
  const Bytes llc = {0x42, 0x42, 0x03, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
  const GppResult r = parse("802.3 LLC", GPP_LINKTYPE_ETHERNET,
                            ethernet(static_cast<uint16_t>(llc.size()), llc), 14);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(0, r.ethertype);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0u, r.rss_hash);
}

TEST(Ethernet, LengthFieldUpTo0x5ffIsNotAnEthertype) {
  // 1500 (0x05dc) is the largest 802.3 length; up to 0x05ff is undefined, 0x0600 starts ethertypes.
  for (uint16_t field : {uint16_t(0x05dc), uint16_t(0x05ff)}) {
    const GppResult r = parse("802.3 length " + std::to_string(field), GPP_LINKTYPE_ETHERNET,
                              ethernet(field, ipv4(v4(), web_syn())), 14);
    EXPECT_EQ(0, r.ethertype) << field;
    EXPECT_EQ(0, r.ip_version) << field;
  }
}

TEST(Ethernet, ArpIsNonIp) {
  Bytes arp = {0, 1, 8, 0, 6, 4, 0, 1};
  const Bytes tail = pattern_bytes(20);
  arp.insert(arp.end(), tail.begin(), tail.end());
  const GppResult r = parse("ARP", GPP_LINKTYPE_ETHERNET, ethernet(kEthArp, arp), 14);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(kEthArp, r.ethertype);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0, r.ip_flags);
  EXPECT_EQ(0u, r.rss_hash);
  EXPECT_EQ(0u, r.l4_offset);
  EXPECT_EQ(0u, r.payload_length);
}

// ---- MPLS --------------------------------------------------------------------

TEST(Mpls, LabelStackWithIpv4Inside) {
  const Bytes pkt = mpls_ethernet({100, 200, 300}, ipv4(v4(), web_syn()));
  const GppResult r = parse("MPLS x3 / IPv4", GPP_LINKTYPE_ETHERNET, pkt, 26 + 40);
  expect_tcp_v4(r, 26);
  EXPECT_EQ(kEthMpls, r.ethertype);
  EXPECT_EQ(3, r.mpls_label_count);
}

TEST(Mpls, SingleLabelWithIpv6Inside) {
  const Bytes pkt = mpls_ethernet({16}, ipv6(v6(), web_syn()));
  const GppResult r = parse("MPLS / IPv6", GPP_LINKTYPE_ETHERNET, pkt, 18 + 60);
  expect_tcp_v6(r, 18);
  EXPECT_EQ(1, r.mpls_label_count);
}

TEST(Mpls, PseudowirePayloadIsNotIp) {
  // Control word (first nibble 0) then an Ethernet frame: not taken as IP.
  const Bytes pw = concat({0, 0, 0, 0}, ethernet(kEthIpv4, ipv4(v4(), web_syn())));
  const GppResult r = parse("MPLS pseudowire", GPP_LINKTYPE_ETHERNET, mpls_ethernet({77}, pw), 19);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(1, r.mpls_label_count);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0u, r.rss_hash);
}

TEST(Mpls, SeventeenLabelsAreBadL2) {
  std::vector<uint32_t> labels(17);
  for (size_t i = 0; i < labels.size(); ++i) labels[i] = 1000 + static_cast<uint32_t>(i);
  const Bytes pkt = mpls_ethernet(labels, ipv4(v4(), web_syn()));
  // After 16 labels without bottom-of-stack the parser gives up (14 + 64 bytes read).
  const GppResult r = parse("MPLS x17", GPP_LINKTYPE_ETHERNET, pkt, 14 + 16 * 4);
  EXPECT_EQ(GPP_STATUS_BAD_L2, r.status);
  EXPECT_EQ(0, r.ip_version);
}

// ---- Other link types ----------------------------------------------------------

TEST(LinkType, LinuxSllIpv4Udp) {
  const Bytes pkt = linux_sll(kEthIpv4, ipv4(v4(kUdp), udp(5353, 5353, pattern_bytes(11))));
  const GppResult r = parse("SLL/ipv4/udp", GPP_LINKTYPE_LINUX_SLL, pkt, 16 + 28);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(kEthIpv4, r.ethertype);
  EXPECT_EQ(16, r.l3_offset);
  EXPECT_EQ(4, r.ip_version);
  EXPECT_EQ(kUdp, r.l4_proto);
  EXPECT_EQ(5353, r.sport);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(11u, r.payload_length);
}

TEST(LinkType, LinuxSll2Ipv6Tcp) {
  const Bytes pkt = linux_sll2(kEthIpv6, ipv6(v6(), web_syn()));
  const GppResult r = parse("SLL2/ipv6/tcp", GPP_LINKTYPE_LINUX_SLL2, pkt, 20 + 60);
  expect_tcp_v6(r, 20);
  EXPECT_EQ(kEthIpv6, r.ethertype);
}

TEST(LinkType, LinuxSll2VlanTagged) {
  Bytes inner;
  append16(inner, 42); // TCI
  append16(inner, kEthIpv4);
  const Bytes pkt = linux_sll2(kEthVlan, concat(inner, ipv4(v4(), web_syn())));
  const GppResult r = parse("SLL2/802.1Q/ipv4", GPP_LINKTYPE_LINUX_SLL2, pkt, 24 + 40);
  expect_tcp_v4(r, 24);
  ASSERT_EQ(1, r.vlan_count);
  EXPECT_EQ(42, r.vlan_ids[0]);
}

TEST(LinkType, Raw101Ipv4AndIpv6) {
  GppResult r = parse("raw/ipv4", GPP_LINKTYPE_RAW, ipv4(v4(), web_syn()), 40);
  expect_tcp_v4(r, 0);
  EXPECT_EQ(0, r.ethertype);
  r = parse("raw/ipv6", GPP_LINKTYPE_RAW, ipv6(v6(), web_syn()), 60);
  expect_tcp_v6(r, 0);
  EXPECT_EQ(0, r.ethertype);
}

TEST(LinkType, Ipv4Linktype228) {
  const GppResult r = parse("linktype 228", GPP_LINKTYPE_IPV4, ipv4(v4(), web_syn()), 40);
  expect_tcp_v4(r, 0);
}

TEST(LinkType, Ipv6Linktype229) {
  const GppResult r = parse("linktype 229", GPP_LINKTYPE_IPV6, ipv6(v6(), web_syn()), 60);
  expect_tcp_v6(r, 0);
}

TEST(LinkType, BsdLoopbackBothByteOrders) {
  struct Family {
    uint32_t value;
    int ip_version;
  };
  // AF_INET everywhere; AF_INET6 on Linux (10), OpenBSD/NetBSD (24), FreeBSD (28), macOS (30).
  const Family families[] = {{2, 4}, {10, 6}, {24, 6}, {28, 6}, {30, 6}};
  for (const Family &f : families) {
    for (bool little : {true, false}) {
      const Bytes ip = f.ip_version == 4 ? ipv4(v4(), web_syn()) : ipv6(v6(), web_syn());
      const std::string name = "null family " + std::to_string(f.value) + (little ? " LE" : " BE");
      const GppResult r = parse(name, GPP_LINKTYPE_NULL, loopback(f.value, little, ip),
                                4 + (f.ip_version == 4 ? 40 : 60));
      SCOPED_TRACE(name);
      if (f.ip_version == 4) expect_tcp_v4(r, 4);
      else expect_tcp_v6(r, 4);
      EXPECT_EQ(0, r.ethertype);
    }
  }
}

TEST(LinkType, BsdLoopbackUnknownFamilyIsNotIp) {
  const GppResult r = parse("null family 7", GPP_LINKTYPE_NULL,
                            loopback(7, true, ipv4(v4(), web_syn())), 4);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0u, r.rss_hash);
}

TEST(LinkType, OpenBsdLoopNetworkOrder) {
  GppResult r = parse("loop AF_INET", GPP_LINKTYPE_LOOP, loopback(2, false, ipv4(v4(), web_syn())),
                      44);
  expect_tcp_v4(r, 4);
  r = parse("loop AF_INET6", GPP_LINKTYPE_LOOP, loopback(24, false, ipv6(v6(), web_syn())), 64);
  expect_tcp_v6(r, 4);
  // LINKTYPE_LOOP is always network order: a little-endian 2 is family 0x02000000.
  r = parse("loop AF_INET little-endian", GPP_LINKTYPE_LOOP,
            loopback(2, true, ipv4(v4(), web_syn())), 4);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0u, r.status);
}

TEST(LinkType, UnsupportedLinkTypeGivesEmptyRecord) {
  EXPECT_FALSE(gpp::linktype_supported(105)); // 802.11
  EXPECT_FALSE(gpp::linktype_supported(127));
  for (uint32_t lt : {0u, 1u, 101u, 108u, 113u, 228u, 229u, 276u})
    EXPECT_TRUE(gpp::linktype_supported(lt)) << lt;
  const Bytes pkt = eth_ipv4(v4(), web_syn());
  const GppResult r = parse("linktype 105", 105, pkt, 0);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(0, r.ip_version);
  EXPECT_EQ(0, r.ethertype);
  EXPECT_EQ(0u, r.rss_hash);
  EXPECT_EQ(0, r.ip_flags);
}

// ---- IPv4 -----------------------------------------------------------------------

TEST(Ipv4, OptionsIhl6) {
  Ipv4Spec ip = v4();
  ip.options = {0x94, 0x04, 0x00, 0x00}; // Router Alert
  const GppResult r = parse("ipv4 IHL 6", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, web_syn()), 58);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(38u, r.l4_offset);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.ipv4_checksum);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(51000, r.sport);
  EXPECT_EQ(58u, r.payload_offset);
}

TEST(Ipv4, MaximumOptionsIhl15) {
  Ipv4Spec ip = v4();
  ip.options = Bytes(40, 1); // 40 NOPs
  const GppResult r = parse("ipv4 IHL 15", GPP_LINKTYPE_RAW, ipv4(ip, web_syn()), 80);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(60u, r.l4_offset);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.ipv4_checksum);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
}

TEST(Ipv4, MalformedOptionsAreBadIpOptions) {
  struct Case {
    const char *name;
    Bytes options;
  };
  const Case cases[] = {
      {"option length past the header", {0x07, 15, 4, 0}},       // record route claims 15 bytes
      {"option length below 2", {0x83, 1, 0, 0}},                // loose source route, length 1
      {"router alert of length 5", {0x94, 5, 0, 0, 0, 0, 0, 0}}, // RFC 2113: length is 4
      {"option cut by the header end", {1, 1, 1, 0x44}},         // timestamp type, no length byte
  };
  for (const Case &c : cases) {
    Ipv4Spec ip = v4();
    ip.options = c.options;
    const uint32_t header = 14 + 20 + static_cast<uint32_t>((c.options.size() + 3) / 4 * 4);
    const GppResult r = parse(c.name, GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, web_syn()), header);
    EXPECT_EQ(GPP_STATUS_BAD_IP_OPTIONS, r.status) << c.name;
    EXPECT_EQ(GPP_CHECKSUM_GOOD, r.ipv4_checksum) << c.name;
    EXPECT_EQ(0, r.ip_flags & GPP_IP_L4_PARSED) << c.name;
  }
  // After End of Option List the rest of the header is padding, whatever it holds.
  Ipv4Spec ip = v4();
  ip.options = {0x00, 0x07, 0xff, 0x01};
  const GppResult r = parse("EOL then junk", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, web_syn()), 58);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(51000, r.sport);
}

TEST(Ipv4, HeaderChecksumGoodAndBad) {
  Ipv4Spec ip = v4();
  GppResult r = parse("ipv4 cksum good", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, web_syn()), 54);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.ipv4_checksum);
  ip.corrupt_header_checksum = true;
  r = parse("ipv4 cksum bad", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, web_syn()), 54);
  EXPECT_EQ(GPP_CHECKSUM_BAD, r.ipv4_checksum);
  EXPECT_EQ(0u, r.status); // a bad checksum is a verdict, not a parse problem
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);

  ip.corrupt_header_checksum = false;
  ip.options = {0x94, 0x04, 0x00, 0x00};
  Bytes pkt = eth_ipv4(ip, web_syn());
  pkt[14 + 22] ^= 0x40; // flip a bit inside the options: the checksum covers them
  r = parse("ipv4 options corrupted", GPP_LINKTYPE_ETHERNET, pkt, 58);
  EXPECT_EQ(GPP_CHECKSUM_BAD, r.ipv4_checksum);
}

TEST(Ipv4, TtlAndDontFragment) {
  Ipv4Spec ip = v4();
  ip.dont_fragment = true;
  ip.ttl = 1;
  const GppResult r = parse("ipv4 DF", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, web_syn()), 54);
  expect_tcp_v4(r, 14); // DF alone is not a fragment: ports stay in the hash
  EXPECT_EQ(GPP_IP_DONT_FRAGMENT | GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED, r.ip_flags);
  EXPECT_EQ(0, r.frag_offset);
  EXPECT_EQ(1, r.ttl);
}

TEST(Ipv4, FirstFragmentParsesPortsButHashesAddressesOnly) {
  Ipv4Spec ip = v4(kUdp);
  ip.more_fragments = true;
  const GppResult r =
      parse("ipv4 first fragment", GPP_LINKTYPE_ETHERNET,
            eth_ipv4(ip, udp(4000, 53, pattern_bytes(64))), 42);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(GPP_IP_MORE_FRAGMENTS | GPP_IP_FRAGMENT | GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED,
            r.ip_flags);
  EXPECT_EQ(0, r.frag_offset);
  EXPECT_EQ(4000, r.sport);
  EXPECT_EQ(53, r.dport);
  EXPECT_EQ(34u, r.l4_offset);
  EXPECT_EQ(GPP_CHECKSUM_UNVERIFIED, r.l4_checksum); // the datagram is not all here
  EXPECT_EQ(expected_rss(kSrc4, kDst4, false), r.rss_hash);
}

TEST(Ipv4, NonFirstFragmentHasNoPorts) {
  Ipv4Spec ip = v4(kTcp);
  ip.more_fragments = true;
  ip.frag_offset_bytes = 1480;
  ip.l4_checksum = L4Checksum::Keep;
  const GppResult r = parse("ipv4 middle fragment", GPP_LINKTYPE_ETHERNET,
                            eth_ipv4(ip, pattern_bytes(80)), 34);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(1480, r.frag_offset);
  EXPECT_EQ(GPP_IP_MORE_FRAGMENTS | GPP_IP_FRAGMENT | GPP_IP_HEADER_PARSED, r.ip_flags);
  EXPECT_EQ(kTcp, r.l4_proto);
  EXPECT_EQ(0, r.sport);
  EXPECT_EQ(0, r.dport);
  EXPECT_EQ(0u, r.l4_offset);
  EXPECT_EQ(GPP_CHECKSUM_NONE, r.l4_checksum);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.ipv4_checksum);
  EXPECT_EQ(expected_rss(kSrc4, kDst4, false), r.rss_hash);
}

TEST(Ipv4, LastFragmentWithoutMoreFragments) {
  Ipv4Spec ip = v4(kUdp);
  ip.frag_offset_bytes = 8 * 0x1234;
  ip.dont_fragment = false;
  ip.l4_checksum = L4Checksum::Keep;
  const GppResult r =
      parse("ipv4 last fragment", GPP_LINKTYPE_RAW, ipv4(ip, pattern_bytes(24)), 20);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(8 * 0x1234, r.frag_offset);
  EXPECT_EQ(GPP_IP_FRAGMENT | GPP_IP_HEADER_PARSED, r.ip_flags);
}

TEST(Ipv4, FragmentEndingAt65535IsFineOnePastIsBad) {
  Ipv4Spec ip = v4(kUdp);
  ip.l4_checksum = L4Checksum::Keep;
  ip.frag_offset_bytes = 65520;
  GppResult r = parse("fragment ends at 65535", GPP_LINKTYPE_RAW, ipv4(ip, pattern_bytes(15)), 20);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(65520, r.frag_offset);
  r = parse("fragment ends at 65536", GPP_LINKTYPE_RAW, ipv4(ip, pattern_bytes(16)), 20);
  EXPECT_EQ(GPP_STATUS_BAD_FRAGMENT, r.status);
}

TEST(Ipv4, FirstFragmentMayEndInsideTheL4Header) {
  // A first fragment of 12 L4 bytes: ports are there, the rest of TCP is in
  // the next fragment.  Not malformed.
  Ipv4Spec ip = v4(kTcp);
  ip.more_fragments = true;
  Bytes seg = web_syn(4321, 80);
  seg.resize(12);
  ip.l4_checksum = L4Checksum::Keep;
  const GppResult r = parse("tiny first fragment", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, seg), 38);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(4321, r.sport);
  EXPECT_EQ(80, r.dport);
  EXPECT_TRUE(r.l4_checksum == GPP_CHECKSUM_NONE || r.l4_checksum == GPP_CHECKSUM_UNVERIFIED);
}

TEST(Ipv4, FirstFragmentUdpLengthCoversTheWholeDatagram) {
  Ipv4Spec ip = v4(kUdp);
  ip.more_fragments = true;
  ip.l4_checksum = L4Checksum::Keep;
  const GppResult r = parse("udp first fragment", GPP_LINKTYPE_ETHERNET,
                            eth_ipv4(ip, udp(500, 4500, pattern_bytes(56), 3000)), 42);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(4500, r.dport);
  EXPECT_EQ(56u, r.payload_length);
}

TEST(Ipv4, UnparsedUpperLayerKeepsAddressesOnly) {
  const GppResult r = parse("ipv4 GRE", GPP_LINKTYPE_ETHERNET,
                            eth_ipv4(v4(kGre), pattern_bytes(24)), 34);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(kGre, r.l4_proto);
  EXPECT_EQ(GPP_IP_HEADER_PARSED, r.ip_flags);
  EXPECT_EQ(GPP_CHECKSUM_NONE, r.l4_checksum);
  EXPECT_EQ(expected_rss(kSrc4, kDst4, false), r.rss_hash);
}

TEST(Ipv4, EthernetTrailerPaddingIsNotPayload) {
  // 28-byte IPv4/UDP datagram with 3 payload bytes in a 60-byte minimum frame
  // whose padding is not zero (some NICs pad with garbage).
  Bytes pkt = eth_ipv4(v4(kUdp), udp(1111, 2222, {0xde, 0xad, 0xbe}));
  const size_t ip_end = pkt.size();
  pkt.resize(60, 0xee);
  const GppResult r = parse("ethernet padding", GPP_LINKTYPE_ETHERNET, pkt, 42);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(42u, r.payload_offset);
  EXPECT_EQ(ip_end - 42, r.payload_length);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
}

// ---- IPv6 -----------------------------------------------------------------------

TEST(Ipv6, ExtensionChainWithoutFragment) {
  Ipv6Spec ip = v6(kUdp);
  ip.exts = {hop_by_hop(8), dest_options(16), routing_header(0, 0, {ipv6_addr("2001:db8::99")}),
             auth_header(12), dest_options(8)};
  const uint32_t chain = 8 + 16 + 24 + 24 + 8;
  const Bytes pkt = eth_ipv6(ip, udp(7000, 7001, pattern_bytes(21)));
  const GppResult r = parse("ipv6 HBH/DO/RH/AH/DO/UDP", GPP_LINKTYPE_ETHERNET, pkt,
                            54 + chain + 8);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(5, r.ipv6_ext_count);
  EXPECT_EQ(kUdp, r.l4_proto);
  EXPECT_EQ(54u + chain, r.l4_offset);
  EXPECT_EQ(7000, r.sport);
  EXPECT_EQ(7001, r.dport);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(54u + chain + 8, r.payload_offset);
  EXPECT_EQ(21u, r.payload_length);
  EXPECT_EQ(0, r.ip_flags & GPP_IP_FRAGMENT);
  EXPECT_EQ(expected_rss(kSrc6, kDst6, true, 7000, 7001), r.rss_hash);
}

TEST(Ipv6, ExtensionChainWithFirstFragment) {
  Ipv6Spec ip = v6(kTcp);
  ip.exts = {hop_by_hop(8), routing_header(0, 0, {ipv6_addr("2001:db8::99")}),
             fragment_header(0, true), auth_header(20), dest_options(8)};
  const uint32_t chain = 8 + 24 + 8 + 32 + 8;
  const Bytes pkt = eth_ipv6(ip, web_syn(1234, 22, pattern_bytes(100)));
  const GppResult r = parse("ipv6 HBH/RH/FH/AH/DO/TCP", GPP_LINKTYPE_ETHERNET, pkt,
                            54 + chain + 20);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(5, r.ipv6_ext_count);
  EXPECT_EQ(kTcp, r.l4_proto);
  EXPECT_EQ(54u + chain, r.l4_offset);
  EXPECT_EQ(1234, r.sport);
  EXPECT_EQ(22, r.dport);
  EXPECT_EQ(GPP_IP_FRAGMENT | GPP_IP_MORE_FRAGMENTS | GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED,
            r.ip_flags);
  EXPECT_EQ(0, r.frag_offset);
  EXPECT_EQ(GPP_CHECKSUM_UNVERIFIED, r.l4_checksum);
  EXPECT_EQ(expected_rss(kSrc6, kDst6, false), r.rss_hash);
}

TEST(Ipv6, NonFirstFragmentStopsTheWalk) {
  Ipv6Spec ip = v6(kUdp);
  ip.exts = {hop_by_hop(8), fragment_header(2960, true)};
  ip.l4_checksum = L4Checksum::Keep;
  const Bytes pkt = eth_ipv6(ip, pattern_bytes(64));
  const GppResult r = parse("ipv6 non-first fragment", GPP_LINKTYPE_ETHERNET, pkt, 54 + 16);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(2, r.ipv6_ext_count);
  EXPECT_EQ(kUdp, r.l4_proto);
  EXPECT_EQ(2960, r.frag_offset);
  EXPECT_EQ(GPP_IP_FRAGMENT | GPP_IP_MORE_FRAGMENTS | GPP_IP_HEADER_PARSED, r.ip_flags);
  EXPECT_EQ(0u, r.l4_offset);
  EXPECT_EQ(0, r.sport);
  EXPECT_EQ(expected_rss(kSrc6, kDst6, false), r.rss_hash);
}

TEST(Ipv6, LastFragmentHasNoMoreFragmentsFlag) {
  Ipv6Spec ip = v6(kTcp);
  ip.exts = {fragment_header(65528, false)};
  ip.l4_checksum = L4Checksum::Keep;
  const GppResult r = parse("ipv6 last fragment", GPP_LINKTYPE_RAW, ipv6(ip, pattern_bytes(7)), 48);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(65528, r.frag_offset);
  EXPECT_EQ(GPP_IP_FRAGMENT | GPP_IP_HEADER_PARSED, r.ip_flags);
  const GppResult bad = parse("ipv6 fragment past 65535", GPP_LINKTYPE_RAW,
                              ipv6(ip, pattern_bytes(8)), 48);
  EXPECT_EQ(GPP_STATUS_BAD_FRAGMENT, bad.status);
}

TEST(Ipv6, AtomicFragmentIsAWholeDatagram) {
  // RFC 6946: offset 0 and M=0 -- the checksum can be verified.
  Ipv6Spec ip = v6(kTcp);
  ip.exts = {fragment_header(0, false)};
  const GppResult r = parse("ipv6 atomic fragment", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(ip, web_syn()), 54 + 8 + 20);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(GPP_IP_FRAGMENT, r.ip_flags & (GPP_IP_FRAGMENT | GPP_IP_MORE_FRAGMENTS));
  EXPECT_EQ(51000, r.sport);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  ip.l4_checksum = L4Checksum::Corrupt;
  EXPECT_EQ(GPP_CHECKSUM_BAD, parse("ipv6 atomic fragment, bad checksum", GPP_LINKTYPE_ETHERNET,
                                    eth_ipv6(ip, web_syn()), 54 + 8 + 20)
                                  .l4_checksum);
}

TEST(Ipv6, OptionOverrunningItsHeaderIsBadExtHeader) {
  Ipv6Spec ip = v6(kUdp);
  Ext bad = hop_by_hop(8);
  bad.bytes[3] = 9; // PadN claims 9 bytes where 4 remain
  ip.exts = {bad};
  const GppResult r = parse("HBH option overrun", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(ip, udp(1, 2, {})), 54 + 8);
  EXPECT_EQ(GPP_STATUS_BAD_EXT_HEADER, r.status);
  EXPECT_EQ(0, r.ip_flags & GPP_IP_L4_PARSED);
}

TEST(Ipv6, NoNextHeader) {
  Ipv6Spec ip = v6(kNoNextHeader);
  ip.exts = {dest_options(8)};
  const GppResult r = parse("ipv6 no next header", GPP_LINKTYPE_RAW, ipv6(ip, {}), 48);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(kNoNextHeader, r.l4_proto);
  EXPECT_EQ(1, r.ipv6_ext_count);
  EXPECT_EQ(expected_rss(kSrc6, kDst6, false), r.rss_hash);
}

TEST(Ipv6, ExactlyMaxExtensionHeadersStillParse) {
  static_assert(GPP_MAX_IPV6_EXT_HEADERS == 255, "test written for a 255-header walk");
  Ipv6Spec ip = v6(kUdp);
  ip.exts.assign(255, dest_options(8));
  const Bytes pkt = eth_ipv6(ip, udp(1, 2, {}));
  const GppResult r = parse("ipv6 255 ext headers", GPP_LINKTYPE_ETHERNET, pkt, 54 + 255 * 8 + 8);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(255, r.ipv6_ext_count);
  EXPECT_EQ(kUdp, r.l4_proto);
  EXPECT_EQ(2, r.dport);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
}

TEST(Ipv6, JumbogramTakesLengthFromHopByHop) {
  // RFC 2675: payload length 0, Jumbo Payload option, UDP length 0.  Only the
  // first 156 bytes of a 70056-byte packet were captured.
  const uint32_t jumbo = 8 + 8 + 70000;
  Ipv6Spec ip = v6(kUdp);
  ip.payload_length = 0;
  ip.exts = {hop_by_hop_jumbo(jumbo)};
  ip.l4_checksum = L4Checksum::Keep;
  const Bytes pkt = ipv6(ip, udp(9000, 9001, pattern_bytes(100), 0));
  Crafted c{"ipv6 jumbogram", GPP_LINKTYPE_RAW, pkt, 40 + jumbo, 56};
  const GppResult r = parse(c);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(40 + jumbo, r.ip_length);
  EXPECT_EQ(kUdp, r.l4_proto);
  EXPECT_EQ(9001, r.dport);
  EXPECT_EQ(56u, r.payload_offset);
  EXPECT_EQ(100u, r.payload_length);
  EXPECT_EQ(GPP_CHECKSUM_UNVERIFIED, r.l4_checksum);
}

TEST(Ipv6, FullyCapturedJumbogramVerifies) {
  // 70000 bytes after the IPv6 header: the 32-bit length reaches the
  // pseudo-header.  Too big for the every-length sweep, which the snapped
  // jumbogram above covers; this one checks lengths and the checksum.
  const uint32_t jumbo = 70000;
  Ipv6Spec ip = v6(kUdp);
  ip.payload_length = 0;
  ip.exts = {hop_by_hop_jumbo(jumbo)};
  const Bytes pkt = ipv6(ip, udp(9000, 9001, pattern_bytes(jumbo - 16), 0));
  ASSERT_EQ(40u + jumbo, pkt.size());
  const uint32_t size = static_cast<uint32_t>(pkt.size());
  GppResult r = run_core(pkt, size, size, GPP_LINKTYPE_RAW, make_config());
  EXPECT_EQ("", record_violations(r, size, size));
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(56u, r.payload_offset);
  EXPECT_EQ(jumbo - 16, r.payload_length);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  // One byte less on the wire than the Jumbo Payload option says: bad length.
  r = run_core(pkt, size - 1, size - 1, GPP_LINKTYPE_RAW, make_config());
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, r.status);
}

// ---- TCP / UDP / ICMP -------------------------------------------------------------

TEST(Tcp, FlagsAndPorts) {
  for (uint8_t flags : {uint8_t(kSyn), uint8_t(kSyn | kAck), uint8_t(kFin | kAck),
                        uint8_t(kRst), uint8_t(kFin | kPsh | kUrg),
                        uint8_t(kCwr | kEce | kUrg | kAck | kPsh | kRst | kSyn | kFin)}) {
    TcpSpec t;
    t.sport = 65535;
    t.dport = 1;
    t.flags = flags;
    const GppResult r = parse("tcp flags " + std::to_string(flags), GPP_LINKTYPE_ETHERNET,
                              eth_ipv4(v4(), tcp(t)), 54);
    EXPECT_EQ(0u, r.status);
    EXPECT_EQ(flags, r.tcp_flags);
    EXPECT_EQ(65535, r.sport);
    EXPECT_EQ(1, r.dport);
    EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  }
}

TEST(Tcp, OptionsMoveThePayload) {
  TcpSpec t;
  t.options = {2, 4, 0x05, 0xb4, 4, 2, 8, 10, 0, 0, 0, 1, 0, 0, 0, 0}; // MSS, SACKOK, TS
  t.payload = pattern_bytes(30);
  const Bytes pkt = eth_ipv4(v4(), tcp(t));
  // The TCP header is 36 bytes (data offset 9): options are part of it.
  const GppResult r = parse("tcp with options", GPP_LINKTYPE_ETHERNET, pkt, 34 + 36);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(70u, r.payload_offset);
  EXPECT_EQ(30u, r.payload_length);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
}

TEST(Udp, PortsAndPayload) {
  const GppResult r = parse("ipv6 udp", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(v6(kUdp), udp(53, 33333, pattern_bytes(40))), 62);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(kUdp, r.l4_proto);
  EXPECT_EQ(53, r.sport);
  EXPECT_EQ(33333, r.dport);
  EXPECT_EQ(40u + 8 + 40, r.ip_length);
  EXPECT_EQ(0, r.tcp_flags);
  EXPECT_EQ(62u, r.payload_offset);
  EXPECT_EQ(40u, r.payload_length);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(expected_rss(kSrc6, kDst6, true, 53, 33333), r.rss_hash);
}

// SCTP: the ports only (flows and Community ID key on them); the CRC32c and
// the chunks are not read, and neither RSS nor ACL use SCTP ports.
TEST(Sctp, PortsOnly) {
  Ipv4Spec ip = v4(132);
  ip.l4_checksum = L4Checksum::Keep;
  Bytes sctp;
  append16(sctp, 36412);
  append16(sctp, 2905);
  append32(sctp, 0x01020304); // verification tag
  append32(sctp, 0xdeadbeef); // CRC32c, not checked
  sctp = concat(sctp, pattern_bytes(20));
  const GppResult r = parse("ipv4 sctp", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, sctp), 38);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(132, r.l4_proto);
  EXPECT_EQ(36412, r.sport);
  EXPECT_EQ(20u + 32, r.ip_length);
  EXPECT_EQ(2905, r.dport);
  EXPECT_EQ(34u, r.l4_offset);
  EXPECT_EQ(GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED, r.ip_flags);
  EXPECT_EQ(GPP_CHECKSUM_NONE, r.l4_checksum);
  EXPECT_EQ(0u, r.payload_offset);
  EXPECT_EQ(0u, r.payload_length);
  EXPECT_EQ(expected_rss(kSrc4, kDst4, false), r.rss_hash);

  // Fewer than 4 bytes of SCTP in the datagram: a malformed header, no ports.
  const GppResult cut = parse("ipv4 sctp, 3 bytes", GPP_LINKTYPE_ETHERNET,
                              eth_ipv4(ip, Bytes(sctp.begin(), sctp.begin() + 3)), 34);
  EXPECT_EQ(uint32_t(GPP_STATUS_BAD_L4_HEADER), cut.status);
  EXPECT_EQ(0, cut.ip_flags & GPP_IP_L4_PARSED);
  EXPECT_EQ(0, cut.sport);
}

TEST(Icmp, TypeAndCode) {
  GppResult r = parse("icmp echo", GPP_LINKTYPE_ETHERNET,
                      eth_ipv4(v4(kIcmp), icmp(8, 0, pattern_bytes(36))), 38);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(kIcmp, r.l4_proto);
  EXPECT_EQ(8, r.icmp_type);
  EXPECT_EQ(0, r.icmp_code);
  EXPECT_EQ(0, r.sport);
  EXPECT_EQ(34u, r.l4_offset);
  EXPECT_EQ(GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED, r.ip_flags);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(0u, r.payload_length);
  EXPECT_EQ(expected_rss(kSrc4, kDst4, false), r.rss_hash);

  r = parse("icmp port unreachable", GPP_LINKTYPE_ETHERNET,
            eth_ipv4(v4(kIcmp), icmp(3, 3, pattern_bytes(32))), 38);
  EXPECT_EQ(3, r.icmp_type);
  EXPECT_EQ(3, r.icmp_code);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
}

TEST(Icmpv6, TypeAndCode) {
  const GppResult r = parse("icmpv6 neighbour solicitation", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(v6(kIcmpv6), icmp(135, 0, pattern_bytes(20))), 58);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(kIcmpv6, r.l4_proto);
  EXPECT_EQ(135, r.icmp_type);
  EXPECT_EQ(0, r.icmp_code);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(expected_rss(kSrc6, kDst6, false), r.rss_hash);
}

// ---- L4 checksums --------------------------------------------------------------------

// The word-wide sum against RFC 1071's definition (big-endian 16-bit words,
// a last odd byte as a word's high byte, carries folded back) at every
// length and start offset: all-0xff bytes carry out of every add, random
// bytes check the byte order, and a running sum passed in is kept.
TEST(OnesSum, MatchesTheByteWiseDefinitionAtEveryLengthAndOffset) {
  // The definition itself: the core's word-at-a-time sum (its fallback off little-endian hosts).
  auto reference = [](const uint8_t *p, uint32_t n, uint32_t sum) {
    return gpp::detail::fold_sum(gpp::detail::ones_sum_by_halfwords(p, n, sum));
  };
  uint32_t state = 12345;
  for (int fill = 0; fill < 3; ++fill) {
    Bytes buffer(200);
    for (auto &b : buffer) {
      state = state * 1103515245u + 12345u;
      b = fill == 0 ? 0xff : fill == 1 ? static_cast<uint8_t>(state >> 16) : 0x80;
    }
    for (uint32_t offset = 0; offset < 8; ++offset)
      for (uint32_t n = 0; n + offset <= buffer.size(); ++n)
        for (uint32_t sum : {0u, 0x1fffeu}) {
          const uint8_t *p = buffer.data() + offset;
          ASSERT_EQ(reference(p, n, sum), gpp::detail::fold_sum(gpp::detail::ones_sum(p, n, sum)))
              << "fill " << fill << ", offset " << offset << ", " << n << " bytes, sum " << sum;
        }
  }
}

struct ChecksumCase {
  const char *name;
  int ip_version;
  uint8_t proto;
};

class L4ChecksumTest : public ::testing::TestWithParam<ChecksumCase> {
protected:
  // Odd payload length on purpose: the last byte is padded with zero.
  Bytes segment() const {
    const ChecksumCase &c = GetParam();
    if (c.proto == kTcp) return web_syn(40001, 8080, pattern_bytes(33, 9));
    if (c.proto == kUdp) return udp(40001, 8080, pattern_bytes(33, 9));
    return icmp(c.proto == kIcmp ? 8 : 128, 0, pattern_bytes(33, 9));
  }
  Bytes packet(L4Checksum mode) const {
    const ChecksumCase &c = GetParam();
    if (c.ip_version == 4) {
      Ipv4Spec ip = v4(c.proto);
      ip.l4_checksum = mode;
      return eth_ipv4(ip, segment());
    }
    Ipv6Spec ip = v6(c.proto);
    ip.l4_checksum = mode;
    return eth_ipv6(ip, segment());
  }
  uint32_t header_bytes() const {
    const ChecksumCase &c = GetParam();
    return (c.ip_version == 4 ? 34 : 54) + (c.proto == kTcp ? 20 : c.proto == kUdp ? 8 : 4);
  }
};

TEST_P(L4ChecksumTest, GoodChecksumVerifies) {
  const GppResult r = parse(std::string(GetParam().name) + " good", GPP_LINKTYPE_ETHERNET,
                            packet(L4Checksum::Fill), header_bytes());
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(GetParam().proto, r.l4_proto);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
}

TEST_P(L4ChecksumTest, CorruptChecksumIsBad) {
  const GppResult r = parse(std::string(GetParam().name) + " bad", GPP_LINKTYPE_ETHERNET,
                            packet(L4Checksum::Corrupt), header_bytes());
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(GPP_CHECKSUM_BAD, r.l4_checksum);
}

TEST_P(L4ChecksumTest, CorruptPayloadByteIsBad) {
  Bytes pkt = packet(L4Checksum::Fill);
  pkt.back() ^= 0x10;
  const GppResult r = parse(std::string(GetParam().name) + " payload flipped",
                            GPP_LINKTYPE_ETHERNET, pkt, header_bytes());
  EXPECT_EQ(GPP_CHECKSUM_BAD, r.l4_checksum);
}

TEST_P(L4ChecksumTest, VerificationOffLeavesUnverified) {
  const gpp::CoreConfig off = make_config(false);
  const GppResult r = parse(std::string(GetParam().name) + " verify off", GPP_LINKTYPE_ETHERNET,
                            packet(L4Checksum::Corrupt), header_bytes(), 0, off);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(GPP_CHECKSUM_UNVERIFIED, r.l4_checksum);
  if (GetParam().ip_version == 4) {
    EXPECT_EQ(GPP_CHECKSUM_GOOD, r.ipv4_checksum);
  }
}

TEST_P(L4ChecksumTest, SegmentCutBySnaplenIsUnverified) {
  Bytes pkt = packet(L4Checksum::Fill);
  const uint32_t wire = static_cast<uint32_t>(pkt.size());
  pkt.resize(pkt.size() - 5);
  Crafted c{std::string(GetParam().name) + " snaplen", GPP_LINKTYPE_ETHERNET, pkt, wire,
            header_bytes()};
  const GppResult r = parse(c);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(GPP_CHECKSUM_UNVERIFIED, r.l4_checksum);
}

INSTANTIATE_TEST_SUITE_P(AllProtocols, L4ChecksumTest,
                         ::testing::Values(ChecksumCase{"tcp_ipv4", 4, kTcp},
                                           ChecksumCase{"udp_ipv4", 4, kUdp},
                                           ChecksumCase{"icmp_ipv4", 4, kIcmp},
                                           ChecksumCase{"tcp_ipv6", 6, kTcp},
                                           ChecksumCase{"udp_ipv6", 6, kUdp},
                                           ChecksumCase{"icmpv6", 6, kIcmpv6}),
                         [](const auto &info) { return std::string(info.param.name); });

TEST(L4Checksum, UdpZeroChecksumOverIpv4IsNone) {
  Ipv4Spec ip = v4(kUdp);
  ip.l4_checksum = L4Checksum::Keep;
  const Bytes pkt = eth_ipv4(ip, udp(68, 67, pattern_bytes(30)));
  GppResult r = parse("udp zero checksum", GPP_LINKTYPE_ETHERNET, pkt, 42);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(GPP_CHECKSUM_NONE, r.l4_checksum);
  r = parse("udp zero checksum, verify off", GPP_LINKTYPE_ETHERNET, pkt, 42, 0, make_config(false));
  EXPECT_EQ(GPP_CHECKSUM_NONE, r.l4_checksum);
}

TEST(L4Checksum, UdpZeroChecksumOverIpv6IsBad) {
  // RFC 8200 8.1: the UDP checksum is mandatory over IPv6.
  Ipv6Spec ip = v6(kUdp);
  ip.l4_checksum = L4Checksum::Keep;
  const GppResult r = parse("udp6 zero checksum", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(ip, udp(546, 547, pattern_bytes(30))), 62);
  EXPECT_EQ(GPP_CHECKSUM_BAD, r.l4_checksum);
}

TEST(L4Checksum, FragmentIsUnverified) {
  Ipv4Spec ip = v4(kTcp);
  ip.more_fragments = true;
  const GppResult r = parse("tcp in first fragment", GPP_LINKTYPE_ETHERNET,
                            eth_ipv4(ip, web_syn()), 54);
  EXPECT_EQ(GPP_CHECKSUM_UNVERIFIED, r.l4_checksum);
}

TEST(L4Checksum, Ipv6RoutingType0UsesFinalDestination) {
  const Bytes hop1 = ipv6_addr("2001:db8:aaaa::1");
  const Bytes final_dst = ipv6_addr("2001:db8:bbbb::2");
  Ipv6Spec ip = v6(kTcp);
  ip.dst = ipv6_addr("2001:db8:9999::9"); // first hop, in the IPv6 header
  ip.exts = {routing_header(0, 2, {hop1, final_dst})};
  ip.checksum_dst = final_dst;
  GppResult r = parse("RH0 segments left 2", GPP_LINKTYPE_ETHERNET, eth_ipv6(ip, web_syn()),
                      54 + 40 + 20);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(1, r.ipv6_ext_count);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
  EXPECT_EQ(ip.dst, addr_of(r.dst, 6)); // the record keeps the header's address

  ip.checksum_dst = ip.dst; // a sender that (wrongly) used the first hop
  r = parse("RH0 checksum over first hop", GPP_LINKTYPE_ETHERNET, eth_ipv6(ip, web_syn()),
            54 + 40 + 20);
  EXPECT_EQ(GPP_CHECKSUM_BAD, r.l4_checksum);
}

TEST(L4Checksum, Ipv6RoutingSegmentsLeftZeroUsesHeaderDestination) {
  Ipv6Spec ip = v6(kUdp);
  ip.exts = {routing_header(0, 0, {ipv6_addr("2001:db8:aaaa::1"), ipv6_addr("2001:db8:bbbb::2")})};
  const GppResult r = parse("RH0 segments left 0", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(ip, udp(1, 2, pattern_bytes(10))), 54 + 40 + 8);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
}

TEST(L4Checksum, SegmentRoutingHeaderUsesSegmentListZero) {
  // RFC 8754: Segment List[0] is the last segment of the path.
  const Bytes last = ipv6_addr("2001:db8:cccc::3");
  Ipv6Spec ip = v6(kIcmpv6);
  ip.dst = ipv6_addr("2001:db8:dddd::4");
  ip.exts = {routing_header(4, 1, {last, ip.dst})};
  ip.checksum_dst = last;
  const GppResult r = parse("SRH", GPP_LINKTYPE_ETHERNET,
                            eth_ipv6(ip, icmp(128, 0, pattern_bytes(12))), 54 + 40 + 4);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);
}

TEST(L4Checksum, HomeAddressOptionIsThePseudoHeaderSource) {
  // RFC 6275 6.3: a Home Address destination option replaces the source.
  const Bytes home = ipv6_addr("2001:db8:eeee::77");
  Ext dst_opts{kDstOpts, {0, 2, 0xc9, 16}};
  dst_opts.bytes.insert(dst_opts.bytes.end(), home.begin(), home.end());
  dst_opts.bytes.insert(dst_opts.bytes.end(), {1, 2, 0, 0}); // PadN to 24 bytes
  ASSERT_EQ(24u, dst_opts.bytes.size());
  Ipv6Spec ip = v6(kUdp);
  ip.exts = {dst_opts};
  // The builder's pseudo-header takes spec.src: compute it with the home address.
  Ipv6Spec as_sent = ip;
  as_sent.src = home;
  Bytes pkt = ipv6(as_sent, udp(7, 8, pattern_bytes(9)));
  std::copy(ip.src.begin(), ip.src.end(), pkt.begin() + 8); // care-of address in the header
  GppResult r = parse("home address option", GPP_LINKTYPE_RAW, pkt, 40 + 24 + 8);
  EXPECT_EQ(0u, r.status);
  EXPECT_EQ(ip.src, addr_of(r.src, 6));
  EXPECT_EQ(GPP_CHECKSUM_GOOD, r.l4_checksum);

  r = parse("home address option, checksum over care-of address", GPP_LINKTYPE_RAW,
            ipv6(ip, udp(7, 8, pattern_bytes(9))), 40 + 24 + 8);
  EXPECT_EQ(GPP_CHECKSUM_BAD, r.l4_checksum);
}
