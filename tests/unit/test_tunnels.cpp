// The tunnel walk of the packet core (CoreConfig.decap with a GppTunnelInfo):
// every encapsulation it opens, against the same inner packet parsed alone;
// nesting to GPP_MAX_TUNNEL_DEPTH and one level past it; lying, unknown and
// fragmented carriers; for every packet, the record without the walk left
// as process_packet() gives it without a GppTunnelInfo; and the generator's
// traffic inside tunnels (gpu/traffic_gen.h).  Every crafted packet goes
// through parse() (core_harness.h): an exact-size buffer, and every
// truncation checked against the full packet's verdict and tunnel record.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "core_harness.h"
#include "traffic_gen.h"

using namespace gpptest;

namespace {

constexpr uint64_t kTimestamp = 1700000000123456789ull;

const Bytes kOuterSrc4 = ipv4_addr("192.0.2.10");
const Bytes kOuterDst4 = ipv4_addr("198.51.100.20");
const Bytes kOuterSrc6 = ipv6_addr("2001:db8:a::1");
const Bytes kOuterDst6 = ipv6_addr("2001:db8:b::2");

gpp::CoreConfig decap_config() {
  gpp::CoreConfig cfg = make_config();
  cfg.decap = 1;
  cfg.vxlan_ports[0] = gpp::kVxlanPort;
  return cfg;
}

// ---- inner packets: Ethernet frames, parsed alone for the reference ----------

struct Inner {
  Bytes frame;
  uint32_t header_bytes; // of the frame alone (Crafted::header_bytes)
  Bytes ip() const { return Bytes(frame.begin() + 14, frame.end()); } // untagged frames
};

Bytes inner_tcp4_packet() {
  Ipv4Spec ip;
  ip.src = ipv4_addr("10.1.2.3");
  ip.dst = ipv4_addr("172.16.5.6");
  ip.ttl = 61;
  ip.id = 0x5151;
  TcpSpec t;
  t.sport = 40001;
  t.dport = 443;
  t.flags = kAck | kPsh;
  t.payload = pattern_bytes(23, 9);
  return ipv4(ip, tcp(t));
}

Bytes inner_udp6_packet() {
  Ipv6Spec ip;
  ip.src = ipv6_addr("fd00:1::3");
  ip.dst = ipv6_addr("fd00:2::4");
  ip.proto = kUdp;
  return ipv6(ip, udp(5353, 53, pattern_bytes(17, 3)));
}

Inner tcp4() { return {ethernet(kEthIpv4, inner_tcp4_packet()), 54}; }
Inner tcp4_tagged() { return {ethernet(kEthIpv4, inner_tcp4_packet(), {{kEthVlan, 0x2123}}), 58}; }
Inner udp6() { return {ethernet(kEthIpv6, inner_udp6_packet()), 62}; }

Inner icmp4() {
  Ipv4Spec ip;
  ip.src = ipv4_addr("10.9.8.7");
  ip.dst = ipv4_addr("10.6.5.4");
  ip.proto = kIcmp;
  return {ethernet(kEthIpv4, ipv4(ip, icmp(8, 0, pattern_bytes(36, 1)))), 38};
}

// ---- carriers ----------------------------------------------------------------

Ipv4Spec outer4(uint8_t proto) {
  Ipv4Spec s;
  s.src = kOuterSrc4;
  s.dst = kOuterDst4;
  s.proto = proto;
  s.ttl = 30;
  s.id = 0x1111;
  return s;
}

Ipv6Spec outer6(uint8_t proto) {
  Ipv6Spec s;
  s.src = kOuterSrc6;
  s.dst = kOuterDst6;
  s.proto = proto;
  return s;
}

Bytes udp4_frame(uint16_t sport, uint16_t dport, const Bytes &payload) {
  return eth_ipv4(outer4(kUdp), udp(sport, dport, payload));
}

Bytes udp6_frame(uint16_t sport, uint16_t dport, const Bytes &payload) {
  return eth_ipv6(outer6(kUdp), udp(sport, dport, payload));
}

// What the tunnel record says of the carrier of the innermost IP-borne level.
struct Outer {
  uint8_t ip_version = 0;
  uint8_t l4_proto = 0;
  uint16_t sport = 0, dport = 0;
  Bytes src, dst;
};
Outer over_udp4(uint16_t sport, uint16_t dport) { return {4, kUdp, sport, dport, kOuterSrc4, kOuterDst4}; }
Outer over_udp6(uint16_t sport, uint16_t dport) { return {6, kUdp, sport, dport, kOuterSrc6, kOuterDst6}; }
Outer over_ip4(uint8_t proto) { return {4, proto, 0, 0, kOuterSrc4, kOuterDst4}; }
Outer over_ip6(uint8_t proto) { return {6, proto, 0, 0, kOuterSrc6, kOuterDst6}; }

// ---- running the walk ------------------------------------------------------------

struct Walk {
  GppResult r;
  GppTunnelInfo t;
};

Crafted crafted(const std::string &name, const Bytes &bytes, uint32_t header_bytes) {
  Crafted c;
  c.name = name;
  c.bytes = bytes;
  c.header_bytes = header_bytes;
  return c;
}

// The record without the walk.
GppResult today(const Crafted &c) {
  gpp::CoreConfig cfg = decap_config();
  cfg.decap = 0;
  return run_core(c.bytes, static_cast<uint32_t>(c.bytes.size()), c.wire(), c.linktype, cfg);
}

// `c` through the walk (and every truncation: parse()).  Without the walk,
// by cfg.decap = 0 or without a GppTunnelInfo, the record must be today's,
// byte for byte, and the tunnel record empty.  A carrier shorter on the wire
// than its IP header says is never opened.
Walk walk(const Crafted &c, const gpp::CoreConfig &cfg = decap_config()) {
  Walk w;
  w.r = parse(c, cfg, &w.t);
  const uint32_t caplen = static_cast<uint32_t>(c.bytes.size());
  gpp::CoreConfig off = cfg;
  off.decap = 0;
  const GppResult before = run_core(c.bytes, caplen, c.wire(), c.linktype, off);
  GppTunnelInfo t;
  const GppResult decap_off = run_core(c.bytes, caplen, c.wire(), c.linktype, off, 1, kTimestamp, &t);
  EXPECT_EQ(0, std::memcmp(&before, &decap_off, sizeof before)) << c.name << ": decap 0 changed the record";
  EXPECT_EQ("", tunnel_violations(decap_off, t, false)) << c.name;
  const GppResult no_tunnel = run_core(c.bytes, caplen, c.wire(), c.linktype, cfg);
  EXPECT_EQ(0, std::memcmp(&before, &no_tunnel, sizeof before))
      << c.name << ": decap without a GppTunnelInfo changed the record";
  // Cut short on the wire: where the first IP header's length is then a lie,
  // an IP-borne first level is not opened.
  const uint8_t first = w.t.tunnel_types[0];
  const bool ip_borne = first != 0 && first != GPP_TUNNEL_PPPOE && first != GPP_TUNNEL_PBB &&
                        first != GPP_TUNNEL_VNTAG && first != GPP_TUNNEL_ETAG;
  for (uint32_t len = 0; len < caplen && len < c.wire(); ++len) {
    const GppResult r = run_core(c.bytes, len, len, c.linktype, cfg, 1, kTimestamp, &t);
    EXPECT_EQ("", record_violations(r, len, len)) << c.name << " of " << len << " bytes on the wire";
    EXPECT_EQ("", tunnel_violations(r, t, true)) << c.name << " of " << len << " bytes on the wire";
    if (ip_borne && (run_core(c.bytes, len, len, c.linktype, off).status & GPP_STATUS_BAD_IP_LENGTH)) {
      EXPECT_EQ(0, t.tunnel_count) << c.name << " of " << len << " bytes on the wire";
    }
  }
  return w;
}

// The fields of `r` that differ from `bare` (the inner packet parsed alone),
// its offsets moved by `shift`; "" when none.
std::string differs_from_bare(const GppResult &r, const GppResult &bare, uint32_t shift) {
  std::ostringstream why;
#define GPP_SAME_(field) \
  if (std::memcmp(&r.field, &bare.field, sizeof r.field) != 0) why << " " #field;
  GPP_SAME_(status)
  GPP_SAME_(rss_hash)
  GPP_SAME_(ethertype)
  GPP_SAME_(vlan_ids)
  GPP_SAME_(vlan_count)
  GPP_SAME_(mpls_label_count)
  GPP_SAME_(ip_version)
  GPP_SAME_(l4_proto)
  GPP_SAME_(ipv4_checksum)
  GPP_SAME_(l4_checksum)
  GPP_SAME_(ip_flags)
  GPP_SAME_(frag_offset)
  GPP_SAME_(sport)
  GPP_SAME_(dport)
  GPP_SAME_(tcp_flags)
  GPP_SAME_(ttl)
  GPP_SAME_(icmp_type)
  GPP_SAME_(icmp_code)
  GPP_SAME_(ipv6_ext_count)
  GPP_SAME_(payload_length)
  GPP_SAME_(src)
  GPP_SAME_(dst)
  GPP_SAME_(ip_length)
#undef GPP_SAME_
  const auto moved = [shift](uint32_t offset) { return offset ? offset + shift : 0; };
  if (r.l3_offset != moved(bare.l3_offset)) why << " l3_offset";
  if (r.l4_offset != moved(bare.l4_offset)) why << " l4_offset";
  if (r.payload_offset != moved(bare.payload_offset)) why << " payload_offset";
  if (!why.str().empty())
    why << " (status 0x" << std::hex << r.status << ", alone 0x" << bare.status << ")";
  return why.str();
}

// The first `length` bytes of an Ethernet frame parsed alone (captured and on the wire).
GppResult alone(const Bytes &frame, size_t length = SIZE_MAX) {
  const Bytes bytes(frame.begin(), frame.begin() + std::min(length, frame.size()));
  return run_core(bytes, static_cast<uint32_t>(bytes.size()), static_cast<uint32_t>(bytes.size()),
                  GPP_LINKTYPE_ETHERNET, make_config());
}

// Where `inner` sits in `frame`: the encapsulations put it last.
uint32_t tail_offset(const Bytes &frame, const Bytes &inner) {
  EXPECT_TRUE(frame.size() >= inner.size() &&
              std::equal(inner.begin(), inner.end(), frame.end() - inner.size()))
      << "test bug: the inner packet is not at the end of the frame";
  return static_cast<uint32_t>(frame.size() - inner.size());
}

void expect_tunnel(const GppTunnelInfo &t, const std::vector<uint8_t> &types, uint32_t id,
                   const Outer &outer) {
  ASSERT_EQ(types.size(), t.tunnel_count);
  for (size_t i = 0; i < types.size(); ++i) EXPECT_EQ(types[i], t.tunnel_types[i]) << "level " << i;
  EXPECT_EQ(id, t.tunnel_id);
  EXPECT_EQ(outer.ip_version, t.outer_ip_version);
  EXPECT_EQ(outer.l4_proto, t.outer_l4_proto);
  EXPECT_EQ(outer.sport, t.outer_sport);
  EXPECT_EQ(outer.dport, t.outer_dport);
  if (outer.ip_version) {
    EXPECT_EQ(outer.src, addr_of(t.outer_src, outer.ip_version));
    EXPECT_EQ(outer.dst, addr_of(t.outer_dst, outer.ip_version));
  }
}

void expect_no_tunnel(const GppTunnelInfo &t) {
  const GppTunnelInfo none{};
  EXPECT_EQ(0, std::memcmp(&t, &none, sizeof t)) << "tunnel_count " << int(t.tunnel_count);
}

// An encapsulated packet whose inner packet (`inner`, an Ethernet frame, or
// its IP packet when `ip_borne`) ends the frame: the walk must give the
// inner packet's record as parsed alone, and the tunnel record asked for.
void expect_opened(const std::string &name, const Bytes &frame, const Inner &inner, bool ip_borne,
                   const std::vector<uint8_t> &types, uint32_t id, const Outer &outer,
                   bool guessed = false) {
  SCOPED_TRACE(name);
  const uint32_t shift = tail_offset(frame, ip_borne ? inner.ip() : inner.frame) - (ip_borne ? 14 : 0);
  Crafted c = crafted(name, frame, shift + inner.header_bytes);
  c.tunnel_guessed = guessed;
  const Walk w = walk(c);
  EXPECT_EQ("", differs_from_bare(w.r, alone(inner.frame), shift));
  EXPECT_EQ(frame.size(), w.r.caplen);
  EXPECT_EQ(frame.size(), w.r.wirelen);
  expect_tunnel(w.t, types, id, outer);
}

// A packet whose first encapsulation is refused with `flag`: today's record
// but for the flag, no tunnel walked.
void expect_refused(const Crafted &c, uint32_t flag) {
  SCOPED_TRACE(c.name);
  const Walk w = walk(c);
  GppResult want = today(c);
  want.status |= flag;
  EXPECT_EQ(0, std::memcmp(&want, &w.r, sizeof want))
      << "status 0x" << std::hex << w.r.status << ", want 0x" << want.status;
  expect_no_tunnel(w.t);
}

// A packet that is no tunnel at all: today's record, no flag.
void expect_plain(const Crafted &c, const gpp::CoreConfig &cfg = decap_config()) {
  SCOPED_TRACE(c.name);
  const Walk w = walk(c, cfg);
  const GppResult want = today(c);
  EXPECT_EQ(0, std::memcmp(&want, &w.r, sizeof want)) << "status 0x" << std::hex << w.r.status;
  expect_no_tunnel(w.t);
}

} // namespace

// ---- every encapsulation, against its inner packet alone ---------------------------

TEST(TunnelTypes, Vxlan) {
  const Inner in = tcp4_tagged();
  expect_opened("vxlan", udp4_frame(50123, kPortVxlan, vxlan(0xabcdef, in.frame)), in, false,
                {GPP_TUNNEL_VXLAN}, 0xabcdef, over_udp4(50123, kPortVxlan));
  const Inner v6 = udp6();
  expect_opened("vxlan over ipv6", udp6_frame(1, kPortVxlan, vxlan(7, v6.frame)), v6, false,
                {GPP_TUNNEL_VXLAN}, 7, over_udp6(1, kPortVxlan));
}

TEST(TunnelTypes, Geneve) {
  const Inner in = tcp4_tagged();
  GeneveSpec g;
  g.vni = 0x00fe01;
  g.option_words = 3;
  expect_opened("geneve, ethernet inside", udp4_frame(7000, kPortGeneve, geneve(g, in.frame)), in,
                false, {GPP_TUNNEL_GENEVE}, 0x00fe01, over_udp4(7000, kPortGeneve));
  const Inner ip4 = icmp4();
  g.protocol = kEthIpv4;
  g.option_words = 0;
  expect_opened("geneve, ipv4 inside", udp4_frame(7000, kPortGeneve, geneve(g, ip4.ip())), ip4, true,
                {GPP_TUNNEL_GENEVE}, 0x00fe01, over_udp4(7000, kPortGeneve));
  const Inner ip6 = udp6();
  g.protocol = kEthIpv6;
  g.option_words = 1;
  expect_opened("geneve over ipv6, ipv6 inside", udp6_frame(7000, kPortGeneve, geneve(g, ip6.ip())),
                ip6, true, {GPP_TUNNEL_GENEVE}, 0x00fe01, over_udp6(7000, kPortGeneve));
}

TEST(TunnelTypes, Gre) {
  const Inner in = tcp4();
  GreSpec g;
  expect_opened("gre", eth_ipv4(outer4(kGre), gre(g, in.ip())), in, true, {GPP_TUNNEL_GRE}, 0,
                over_ip4(kGre));
  g.checksum = g.key = g.sequence = true;
  g.key_value = 0xdeadbeef;
  g.sequence_value = 99;
  expect_opened("gre with checksum, key and sequence", eth_ipv4(outer4(kGre), gre(g, in.ip())), in,
                true, {GPP_TUNNEL_GRE}, 0xdeadbeef, over_ip4(kGre));
  const Inner v6 = udp6();
  g.protocol = kEthIpv6;
  g.checksum = false;
  expect_opened("gre over ipv6, ipv6 inside", eth_ipv6(outer6(kGre), gre(g, v6.ip())), v6, true,
                {GPP_TUNNEL_GRE}, 0xdeadbeef, over_ip6(kGre));
  // NVGRE (RFC 7637): Ethernet inside, the key holds VSID and FlowID.
  const Inner eth = tcp4_tagged();
  GreSpec nv;
  nv.protocol = kEthTeb;
  nv.key = true;
  nv.key_value = (0x123456u << 8) | 0x7f;
  expect_opened("nvgre", eth_ipv4(outer4(kGre), gre(nv, eth.frame)), eth, false, {GPP_TUNNEL_GRE},
                nv.key_value, over_ip4(kGre));
  GreSpec in_udp;
  in_udp.key = true;
  in_udp.key_value = 5;
  expect_opened("gre in udp", udp4_frame(33333, kPortGreInUdp, gre(in_udp, in.ip())), in, true,
                {GPP_TUNNEL_GRE}, 5, over_udp4(33333, kPortGreInUdp));
}

TEST(TunnelTypes, Erspan) {
  const Inner in = tcp4_tagged();
  GreSpec g;
  g.protocol = kEthErspan; // type I: no sequence number, the frame follows GRE
  expect_opened("erspan type I", eth_ipv4(outer4(kGre), gre(g, in.frame)), in, false,
                {GPP_TUNNEL_ERSPAN}, 0, over_ip4(kGre));
  g.sequence = true;
  expect_opened("erspan type II", eth_ipv4(outer4(kGre), gre(g, erspan2(0x2a5, in.frame))), in,
                false, {GPP_TUNNEL_ERSPAN}, 0x2a5, over_ip4(kGre));
  g.protocol = kEthErspan3;
  expect_opened("erspan type III", eth_ipv4(outer4(kGre), gre(g, erspan3(0x155, in.frame))), in,
                false, {GPP_TUNNEL_ERSPAN}, 0x155, over_ip4(kGre));
  expect_opened("erspan type III, platform header",
                eth_ipv6(outer6(kGre), gre(g, erspan3(0x3ff, in.frame, true))), in, false,
                {GPP_TUNNEL_ERSPAN}, 0x3ff, over_ip6(kGre));
}

TEST(TunnelTypes, GtpU) {
  const Inner in = tcp4();
  GtpSpec g;
  g.teid = 0xcafe0001;
  expect_opened("gtp-u", udp4_frame(kPortGtpU, kPortGtpU, gtp(g, in.ip())), in, true,
                {GPP_TUNNEL_GTPU}, 0xcafe0001, over_udp4(kPortGtpU, kPortGtpU));
  g.sequence = true;
  expect_opened("gtp-u with a sequence number", udp4_frame(kPortGtpU, kPortGtpU, gtp(g, in.ip())), in,
                true, {GPP_TUNNEL_GTPU}, 0xcafe0001, over_udp4(kPortGtpU, kPortGtpU));
  // Without the E flag the next-extension byte means nothing (TS 29.281 5.1).
  Bytes garbage = gtp(g, in.ip());
  garbage[11] = 0x85;
  expect_opened("gtp-u, sequence number and a stray next-extension byte",
                udp4_frame(kPortGtpU, kPortGtpU, garbage), in, true, {GPP_TUNNEL_GTPU}, 0xcafe0001,
                over_udp4(kPortGtpU, kPortGtpU));
  g.extensions = {{0x85, {0x00, 0x09}}, {0x40, {0x12, 0x34, 0, 0, 0, 0}}};
  expect_opened("gtp-u with extension headers", udp4_frame(40000, kPortGtpU, gtp(g, in.ip())), in,
                true, {GPP_TUNNEL_GTPU}, 0xcafe0001, over_udp4(40000, kPortGtpU));
  const Inner v6 = udp6();
  expect_opened("gtp-u from port 2152, ipv6 inside", udp6_frame(kPortGtpU, 40000, gtp(g, v6.ip())),
                v6, true, {GPP_TUNNEL_GTPU}, 0xcafe0001, over_udp6(kPortGtpU, 40000));
}

TEST(TunnelTypes, IpInIp) {
  const Inner v4 = tcp4();
  const Inner v6 = udp6();
  expect_opened("4in4", eth_ipv4(outer4(kIpIp), v4.ip()), v4, true, {GPP_TUNNEL_IPIP}, 0,
                over_ip4(kIpIp));
  expect_opened("6in4", eth_ipv4(outer4(kIpv6InIp), v6.ip()), v6, true, {GPP_TUNNEL_IPIP}, 0,
                over_ip4(kIpv6InIp));
  expect_opened("4in6", eth_ipv6(outer6(kIpIp), v4.ip()), v4, true, {GPP_TUNNEL_IPIP}, 0,
                over_ip6(kIpIp));
  expect_opened("6in6", eth_ipv6(outer6(kIpv6InIp), v6.ip()), v6, true, {GPP_TUNNEL_IPIP}, 0,
                over_ip6(kIpv6InIp));
}

TEST(TunnelTypes, Teredo) {
  const Inner v6 = udp6();
  TeredoSpec t;
  expect_opened("teredo", udp4_frame(50000, kPortTeredo, teredo(t, v6.ip())), v6, true,
                {GPP_TUNNEL_TEREDO}, 0, over_udp4(50000, kPortTeredo), true);
  t.origin = true;
  expect_opened("teredo, origin indication", udp4_frame(kPortTeredo, 50000, teredo(t, v6.ip())), v6,
                true, {GPP_TUNNEL_TEREDO}, 0, over_udp4(kPortTeredo, 50000), true);
  t.origin = false;
  t.auth = true;
  t.id_length = 3;
  t.auth_length = 5;
  expect_opened("teredo, authentication", udp4_frame(50000, kPortTeredo, teredo(t, v6.ip())), v6,
                true, {GPP_TUNNEL_TEREDO}, 0, over_udp4(50000, kPortTeredo), true);
  t.origin = true;
  t.id_length = t.auth_length = 0;
  expect_opened("teredo, authentication and origin", udp4_frame(50000, kPortTeredo, teredo(t, v6.ip())),
                v6, true, {GPP_TUNNEL_TEREDO}, 0, over_udp4(50000, kPortTeredo), true);
}

TEST(TunnelTypes, Pppoe) {
  const Inner v4 = tcp4();
  expect_opened("pppoe ipv4", ethernet(kEthPppoeSession, pppoe_session(0x1234, 0x0021, v4.ip())), v4,
                true, {GPP_TUNNEL_PPPOE}, 0x1234, Outer{});
  const Inner v6 = udp6();
  expect_opened("pppoe ipv6", ethernet(kEthPppoeSession, pppoe_session(0x0042, 0x0057, v6.ip())), v6,
                true, {GPP_TUNNEL_PPPOE}, 0x0042, Outer{});
}

TEST(TunnelTypes, Pbb) {
  // Backbone VLAN, I-TAG, then the customer's frame with its own tag: the
  // record keeps the customer's tags only.
  const Inner in = tcp4_tagged();
  expect_opened("pbb", ethernet(kEthPbb, pbb_itag(0xabcdef, in.frame), {{kEthQinQ, 0x0064}}), in,
                false, {GPP_TUNNEL_PBB}, 0xabcdef, Outer{});
}

TEST(TunnelTypes, VnTagAndETag) {
  // The tag sits between the source MAC and the frame's own ethertype: the
  // frame alone is the same bytes without it.
  const Inner in = tcp4_tagged();
  const Bytes macs(in.frame.begin(), in.frame.begin() + 12);
  const Bytes rest(in.frame.begin() + 14, in.frame.end()); // after the VLAN TPID
  const Bytes tagged_vntag = concat(macs, concat({0x89, 0x26}, vntag(0x1abc, kEthVlan, rest)));
  const Bytes tagged_etag = concat(macs, concat({0x89, 0x3f}, etag(0xabc, 0x5d, kEthVlan, rest)));
  for (const auto &[name, frame, type, id] :
       {std::tuple{"vn-tag", tagged_vntag, uint8_t(GPP_TUNNEL_VNTAG), 0x1abcu},
        std::tuple{"e-tag", tagged_etag, uint8_t(GPP_TUNNEL_ETAG), (0x5du << 12) | 0xabc}}) {
    SCOPED_TRACE(name);
    const uint32_t shift = static_cast<uint32_t>(frame.size() - in.frame.size());
    const Walk w = walk(crafted(name, frame, shift + in.header_bytes));
    EXPECT_EQ("", differs_from_bare(w.r, alone(in.frame), shift));
    expect_tunnel(w.t, {type}, id, Outer{});
  }
}

TEST(TunnelTypes, IpBorneInnerKeepsTheOuterLinkFields) {
  // An inner IP packet has no link layer of its own: the tags of the frame
  // stay, the ethertype becomes the inner packet's.
  const Inner v6 = udp6();
  const Bytes frame =
      ethernet(kEthIpv4, ipv4(outer4(kIpv6InIp), v6.ip()), {{kEthQinQ, 0x0010}, {kEthVlan, 0x0020}});
  const Walk w = walk(crafted("6in4 in two tags", frame, 22 + 20 + 48));
  GppResult want = alone(v6.frame);
  want.vlan_count = 2;
  want.vlan_ids[0] = 0x10;
  want.vlan_ids[1] = 0x20;
  EXPECT_EQ("", differs_from_bare(w.r, want, 22 + 20 - 14));
  expect_tunnel(w.t, {GPP_TUNNEL_IPIP}, 0, over_ip4(kIpv6InIp));
}

// ---- nesting ------------------------------------------------------------------------

namespace {

// One IP-borne level around an IPv4 packet, with addresses, ports and id of
// its own; the outer IPv4 packet it makes, and what the tunnel record must say.
struct Level {
  Bytes ip;
  uint32_t id;
  Outer outer;
};

Level wrap(uint8_t type, const Bytes &ip, int n) {
  Ipv4Spec s;
  s.src = ipv4_addr("10.0." + std::to_string(n) + ".1");
  s.dst = ipv4_addr("10.0." + std::to_string(n) + ".2");
  s.proto = kUdp;
  const uint16_t sport = static_cast<uint16_t>(30000 + n);
  Level l;
  l.id = 0x100u * type + n;
  switch (type) {
  case GPP_TUNNEL_VXLAN:
    l.ip = ipv4(s, udp(sport, kPortVxlan, vxlan(l.id, ethernet(kEthIpv4, ip))));
    l.outer = {4, kUdp, sport, kPortVxlan, s.src, s.dst};
    break;
  case GPP_TUNNEL_GENEVE: {
    GeneveSpec g;
    g.vni = l.id;
    g.protocol = kEthIpv4;
    g.option_words = 2;
    l.ip = ipv4(s, udp(sport, kPortGeneve, geneve(g, ip)));
    l.outer = {4, kUdp, sport, kPortGeneve, s.src, s.dst};
    break;
  }
  case GPP_TUNNEL_GTPU: {
    GtpSpec g;
    g.teid = l.id;
    l.ip = ipv4(s, udp(sport, kPortGtpU, gtp(g, ip)));
    l.outer = {4, kUdp, sport, kPortGtpU, s.src, s.dst};
    break;
  }
  case GPP_TUNNEL_GRE: {
    GreSpec g;
    g.key = true;
    g.key_value = l.id;
    s.proto = kGre;
    l.ip = ipv4(s, gre(g, ip));
    l.outer = {4, kGre, 0, 0, s.src, s.dst};
    break;
  }
  default: // GPP_TUNNEL_IPIP
    s.proto = kIpIp;
    l.id = 0;
    l.ip = ipv4(s, ip);
    l.outer = {4, kIpIp, 0, 0, s.src, s.dst};
  }
  return l;
}

// The packets of a nest, outermost first: levels[i] is carried by types[i];
// the innermost is the TCP packet.
std::vector<Level> nest(const std::vector<uint8_t> &types) {
  std::vector<Level> levels(types.size() + 1);
  levels.back().ip = inner_tcp4_packet();
  for (size_t i = types.size(); i-- > 0;)
    levels[i] = wrap(types[i], levels[i + 1].ip, static_cast<int>(i));
  return levels;
}

} // namespace

TEST(TunnelNesting, FourLevelsReachTheInnermostPacket) {
  for (const std::vector<uint8_t> &types :
       {std::vector<uint8_t>{GPP_TUNNEL_VXLAN, GPP_TUNNEL_GRE, GPP_TUNNEL_GENEVE, GPP_TUNNEL_IPIP},
        std::vector<uint8_t>{GPP_TUNNEL_GTPU, GPP_TUNNEL_VXLAN, GPP_TUNNEL_GTPU, GPP_TUNNEL_GRE},
        std::vector<uint8_t>(GPP_MAX_TUNNEL_DEPTH, GPP_TUNNEL_IPIP)}) {
    static_assert(GPP_MAX_TUNNEL_DEPTH == 4, "the nests are written for 4 levels");
    const std::vector<Level> levels = nest(types);
    const Bytes frame = ethernet(kEthIpv4, levels[0].ip);
    const Inner in = tcp4();
    expect_opened("nest of 4 from " + std::to_string(types[0]), frame, in, true, types,
                  levels[3].id, levels[3].outer);
  }
}

TEST(TunnelNesting, OneLevelMoreStopsAtTheDepthLimit) {
  const std::vector<uint8_t> types{GPP_TUNNEL_VXLAN, GPP_TUNNEL_GRE, GPP_TUNNEL_GENEVE,
                                   GPP_TUNNEL_GTPU, GPP_TUNNEL_IPIP};
  const std::vector<Level> levels = nest(types);
  const Bytes frame = ethernet(kEthIpv4, levels[0].ip);
  // The main fields are the fourth level's packet: the one carrying the fifth.
  const Bytes fourth = ethernet(kEthIpv4, levels[4].ip);
  const uint32_t shift = tail_offset(frame, levels[4].ip) - 14;
  const Walk w = walk(crafted("nest of 5", frame, shift + 14 + 20));
  GppResult want = alone(fourth);
  EXPECT_EQ(kIpIp, want.l4_proto);
  want.status |= GPP_STATUS_TUNNEL_DEPTH;
  EXPECT_EQ("", differs_from_bare(w.r, want, shift));
  expect_tunnel(w.t, {types.begin(), types.begin() + 4}, levels[3].id, levels[3].outer);

  const std::vector<Level> ipip = nest(std::vector<uint8_t>(5, GPP_TUNNEL_IPIP));
  const Bytes deep = ethernet(kEthIpv4, ipip[0].ip);
  const uint32_t deep_shift = tail_offset(deep, ipip[4].ip) - 14;
  const Walk d = walk(crafted("5 x ipip", deep, deep_shift + 14 + 20));
  want = alone(ethernet(kEthIpv4, ipip[4].ip));
  want.status |= GPP_STATUS_TUNNEL_DEPTH;
  EXPECT_EQ("", differs_from_bare(d.r, want, deep_shift));
  expect_tunnel(d.t, std::vector<uint8_t>(4, GPP_TUNNEL_IPIP), 0, ipip[3].outer);
}

TEST(TunnelNesting, LinkLayerLevelsCount) {
  // VXLAN, then PBB, VN-Tag and PPPoE inside the frame it carries.
  const Inner in = tcp4();
  const Bytes pppoe = pppoe_session(0x0077, 0x0021, in.ip());
  const Bytes customer = ethernet(kEthVnTag, vntag(0x0101, kEthPppoeSession, pppoe));
  const Bytes backbone = ethernet(kEthPbb, pbb_itag(0x00aa55, customer));
  expect_opened("vxlan, pbb, vn-tag, pppoe", udp4_frame(4242, kPortVxlan, vxlan(9, backbone)), in, true,
                {GPP_TUNNEL_VXLAN, GPP_TUNNEL_PBB, GPP_TUNNEL_VNTAG, GPP_TUNNEL_PPPOE}, 0x77,
                over_udp4(4242, kPortVxlan));
}

TEST(TunnelNesting, LinkLayerLevelPastTheLimitKeepsItsFrame) {
  // Past the fourth level the main fields are the frame that carries the
  // fifth: its ethertype names the encapsulation not opened, as without the walk.
  const Inner in = tcp4();
  struct Fifth {
    Bytes frame;
    uint32_t header; // bytes of its encapsulation read before the walk stops
  };
  for (const Fifth &fifth :
       {Fifth{ethernet(kEthPppoeSession, pppoe_session(0x0077, 0x0021, in.ip())), 8},
        Fifth{ethernet(kEthPbb, pbb_itag(0x00aa55, in.frame)), 18},
        Fifth{ethernet(kEthVnTag, vntag(0x0101, kEthIpv4, in.ip())), 6}}) {
    const uint16_t ethertype = static_cast<uint16_t>(fifth.frame[12] << 8 | fifth.frame[13]);
    SCOPED_TRACE("fifth level ethertype " + std::to_string(ethertype));
    const Bytes macs(fifth.frame.begin(), fifth.frame.begin() + 12);
    const Bytes rest(fifth.frame.begin() + 14, fifth.frame.end());
    // VXLAN, PBB, E-Tag and VN-Tag, then the fifth.
    const Bytes customer =
        concat(macs, concat({0x89, 0x3f}, etag(0x123, 0, kEthVnTag, vntag(0x0202, ethertype, rest))));
    const Bytes frame = udp4_frame(4242, kPortVxlan, vxlan(9, ethernet(kEthPbb, pbb_itag(0xaa55, customer))));
    const uint32_t shift = tail_offset(frame, rest) - 14;
    const Walk w = walk(crafted("fifth level past the limit", frame, shift + 14 + fifth.header));
    GppResult want = alone(fifth.frame);
    EXPECT_EQ(ethertype, want.ethertype);
    want.status |= GPP_STATUS_TUNNEL_DEPTH;
    EXPECT_EQ("", differs_from_bare(w.r, want, shift));
    expect_tunnel(w.t, {GPP_TUNNEL_VXLAN, GPP_TUNNEL_PBB, GPP_TUNNEL_ETAG, GPP_TUNNEL_VNTAG}, 0x0202,
                  over_udp4(4242, kPortVxlan));
  }
}

TEST(TunnelNesting, LinkLayerEncapsulationCutShortKeepsItsEthertype) {
  // A tag or header the capture cut: truncated, with the frame's ethertype as
  // without the walk (there the frame is simply not IP).
  const Inner in = tcp4();
  for (const Bytes &frame : {ethernet(kEthPppoeSession, pppoe_session(1, 0x0021, in.ip())),
                             ethernet(kEthPbb, pbb_itag(0x00aa55, in.frame)),
                             ethernet(kEthVnTag, vntag(0x0101, kEthIpv4, in.ip())),
                             ethernet(kEthETag, etag(0x101, 0, kEthIpv4, in.ip()))}) {
    Crafted c = crafted("link-layer encapsulation cut at 17 bytes", Bytes(frame.begin(), frame.begin() + 17), 17);
    c.wirelen = static_cast<uint32_t>(frame.size());
    const Walk w = walk(c);
    EXPECT_EQ(GPP_STATUS_TRUNCATED, w.r.status);
    EXPECT_EQ(today(c).ethertype, w.r.ethertype);
    expect_no_tunnel(w.t);
  }
}

// ---- lying length fields ------------------------------------------------------------

TEST(TunnelLengths, OuterUdpLengthPastItsDatagramOpensNothing) {
  const Inner in = tcp4();
  const Bytes frame =
      eth_ipv4(outer4(kUdp), udp(1000, kPortVxlan, vxlan(1, in.frame), 8 + 8 + static_cast<int>(in.frame.size()) + 10));
  const Crafted c = crafted("udp length past the ip payload", frame, 42);
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, today(c).status);
  expect_plain(c);
}

TEST(TunnelLengths, UdpLengthShorterThanTheTunnelHeader) {
  const Inner in = tcp4();
  for (uint16_t dport : {kPortVxlan, kPortGeneve, kPortGtpU, kPortGreInUdp}) {
    // 6 bytes of an 8-byte tunnel header (GRE: 4 of its 8 with a key) in the datagram.
    GreSpec g;
    g.key = true;
    const Bytes payload = dport == kPortGreInUdp ? gre(g, in.ip()) : vxlan(1, in.frame);
    const int length = 8 + (dport == kPortGreInUdp ? 4 : 6);
    const Bytes frame = eth_ipv4(outer4(kUdp), udp(kPortGtpU + 1, dport, payload, length));
    expect_refused(crafted("udp length inside the header, port " + std::to_string(dport), frame,
                           42 + (dport == kPortGreInUdp ? 4 : 0)),
                   GPP_STATUS_BAD_TUNNEL);
  }
}

TEST(TunnelLengths, InnerPacketLongerThanItsCarrier) {
  // The carrier's payload ends 10 bytes into the inner TCP payload: the
  // inner packet is what it would be alone, cut there on the wire.
  const Inner in = tcp4_tagged();
  const int udp_length = 8 + 8 + static_cast<int>(in.frame.size()) - 10;
  const Bytes vx = eth_ipv4(outer4(kUdp), udp(1000, kPortVxlan, vxlan(1, in.frame), udp_length));
  const uint32_t shift = tail_offset(vx, in.frame);
  Walk w = walk(crafted("udp length inside the inner packet", vx, shift + in.header_bytes));
  EXPECT_EQ("", differs_from_bare(w.r, alone(in.frame, in.frame.size() - 10), shift));
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, w.r.status);
  expect_tunnel(w.t, {GPP_TUNNEL_VXLAN}, 1, over_udp4(1000, kPortVxlan));

  // An IP-in-IP carrier whose total length ends before the frame does.
  const Inner v4 = tcp4();
  Ipv4Spec s = outer4(kIpIp);
  s.total_length = 20 + static_cast<int>(v4.ip().size()) - 10;
  const Bytes ipip = eth_ipv4(s, v4.ip());
  w = walk(crafted("ip total length inside the inner packet", ipip, 34 + 40));
  EXPECT_EQ("", differs_from_bare(w.r, alone(v4.frame, v4.frame.size() - 10), 20));
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, w.r.status);

  // The inner IPv4 header claiming more than the carrier holds.
  Ipv4Spec lie;
  lie.src = ipv4_addr("10.1.2.3");
  lie.total_length = 20 + 20 + 100;
  const Bytes liar = ethernet(kEthIpv4, ipv4(lie, tcp(TcpSpec{})));
  GreSpec g;
  const Bytes gre_frame = eth_ipv4(outer4(kGre), gre(g, Bytes(liar.begin() + 14, liar.end())));
  w = walk(crafted("inner total length past the carrier", gre_frame, 38 + 40));
  EXPECT_EQ("", differs_from_bare(w.r, alone(liar), 38 - 14));
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, w.r.status);
  expect_tunnel(w.t, {GPP_TUNNEL_GRE}, 0, over_ip4(kGre));

  // An inner UDP length past its carrier's end.
  const Bytes udp_liar = ethernet(kEthIpv4, [] {
    Ipv4Spec u;
    u.proto = kUdp;
    return ipv4(u, udp(1, 2, pattern_bytes(8), 400));
  }());
  const Bytes geneve_frame = udp6_frame(9, kPortGeneve, geneve(GeneveSpec{}, udp_liar));
  const uint32_t at = tail_offset(geneve_frame, udp_liar);
  w = walk(crafted("inner udp length past the carrier", geneve_frame, at + 42));
  EXPECT_EQ("", differs_from_bare(w.r, alone(udp_liar), at));
  EXPECT_EQ(GPP_STATUS_BAD_L4_HEADER, w.r.status);
}

TEST(TunnelLengths, GreHeaderPastTheIpPayload) {
  // Checksum, key and sequence flags, but the datagram ends 6 bytes into GRE.
  const Inner in = tcp4();
  GreSpec g;
  g.checksum = g.key = g.sequence = true;
  Ipv4Spec s = outer4(kGre);
  s.total_length = 20 + 6;
  expect_refused(crafted("gre flags past the ip payload", eth_ipv4(s, gre(g, in.ip())), 34 + 4),
                 GPP_STATUS_BAD_TUNNEL);
}

TEST(TunnelLengths, GeneveOptionsPastTheDatagram) {
  GeneveSpec g;
  g.option_words = 2;
  Bytes payload = geneve(g, tcp4().frame);
  payload[0] |= 0x3f; // 63 words of options: 252 bytes, past the end
  expect_refused(crafted("geneve options past the datagram", udp4_frame(1, kPortGeneve, payload), 42 + 8),
                 GPP_STATUS_BAD_TUNNEL);
}

TEST(TunnelLengths, GtpExtensionHeaders) {
  const Inner in = tcp4();
  GtpSpec g;
  g.extensions = {{0x85, {0x00, 0x09}}};
  const Bytes good = gtp(g, in.ip());
  const uint32_t ext = 42 + 12; // the extension's length byte
  for (const auto &[length, name] : {std::pair{0, "gtp extension of length 0"},
                                     std::pair{255, "gtp extension past the datagram"}}) {
    Bytes payload = good;
    payload[12] = static_cast<uint8_t>(length);
    expect_refused(crafted(name, udp4_frame(kPortGtpU, kPortGtpU, payload), ext + 1),
                   GPP_STATUS_BAD_TUNNEL);
  }
  // More extension headers than the walk follows.
  g.extensions.assign(9, GtpExtension{0x40, {0x12, 0x34}});
  expect_refused(crafted("9 gtp extension headers", udp4_frame(kPortGtpU, kPortGtpU, gtp(g, in.ip())),
                         ext + 8 * 4),
                 GPP_STATUS_UNKNOWN_TUNNEL);
}

TEST(TunnelLengths, GtpLength) {
  // GTP's length field counts what follows its first 8 bytes.
  const Inner in = tcp4();
  GtpSpec g;
  g.extensions = {{0x85, {0x00, 0x09}}};
  const Bytes good = gtp(g, in.ip());
  const uint32_t after = static_cast<uint32_t>(good.size()) - 8;
  for (const auto &[length, name, header_bytes] :
       {std::tuple{after + 1, "gtp length past the datagram", 42u + 8u},
        std::tuple{4u + 3u, "gtp length inside its extension header", 42u + 12u + 1u},
        std::tuple{4u + 4u, "gtp length ending before the t-pdu", 42u + 16u}}) {
    Bytes payload = good;
    payload[2] = static_cast<uint8_t>(length >> 8);
    payload[3] = static_cast<uint8_t>(length);
    expect_refused(crafted(name, udp4_frame(kPortGtpU, kPortGtpU, payload), header_bytes),
                   GPP_STATUS_BAD_TUNNEL);
  }
  // Shorter than the datagram: the inner packet is read within GTP's length
  // (here 10 bytes into its TCP payload), as if cut there on the wire.
  Bytes payload = good;
  payload[2] = static_cast<uint8_t>((after - 10) >> 8);
  payload[3] = static_cast<uint8_t>(after - 10);
  const Bytes frame = udp4_frame(kPortGtpU, kPortGtpU, payload);
  const uint32_t at = tail_offset(frame, in.ip());
  const Walk w = walk(crafted("gtp length inside the t-pdu", frame, at + 40));
  EXPECT_EQ("", differs_from_bare(w.r, alone(in.frame, in.frame.size() - 10), at - 14));
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, w.r.status);
  expect_tunnel(w.t, {GPP_TUNNEL_GTPU}, g.teid, over_udp4(kPortGtpU, kPortGtpU));
}

TEST(TunnelLengths, PppoeLength) {
  const Inner v4 = tcp4();
  const int real = 2 + static_cast<int>(v4.ip().size());
  for (const auto &[length, name] : {std::pair{real + 1, "pppoe length past the frame"},
                                     std::pair{1, "pppoe length without a ppp protocol"}}) {
    const Crafted c = crafted(name, ethernet(kEthPppoeSession, pppoe_session(5, 0x0021, v4.ip(), length)), 22);
    expect_refused(c, GPP_STATUS_BAD_TUNNEL);
    EXPECT_EQ(kEthPppoeSession, today(c).ethertype);
  }
  // Shorter than the IP packet it carries: that packet is cut there.
  const Bytes short_session = ethernet(kEthPppoeSession, pppoe_session(5, 0x0021, v4.ip(), real - 10));
  const Walk w = walk(crafted("pppoe length inside the ip packet", short_session, 22 + 40));
  EXPECT_EQ("", differs_from_bare(w.r, alone(v4.frame, v4.frame.size() - 10), 8));
  EXPECT_EQ(GPP_STATUS_BAD_IP_LENGTH, w.r.status);
  expect_tunnel(w.t, {GPP_TUNNEL_PPPOE}, 5, Outer{});
}

// ---- encapsulations the walk does not open -------------------------------------------

TEST(TunnelUnknown, GreVersionRoutingAndProtocol) {
  const Inner in = tcp4();
  GreSpec pptp; // enhanced GRE (RFC 2637): version 1, PPP inside, key = payload length and call id
  pptp.version = 1;
  pptp.protocol = 0x880b;
  pptp.key = true;
  pptp.key_value = 0x00280007;
  expect_refused(crafted("gre version 1", eth_ipv4(outer4(kGre), gre(pptp, pattern_bytes(40))), 38),
                 GPP_STATUS_UNKNOWN_TUNNEL);
  GreSpec routing;
  routing.routing = true;
  expect_refused(crafted("gre routing", eth_ipv4(outer4(kGre), gre(routing, in.ip())), 38),
                 GPP_STATUS_UNKNOWN_TUNNEL);
  GreSpec ppp;
  ppp.protocol = 0x880b;
  ppp.sequence = true;
  expect_refused(crafted("gre protocol 0x880b", eth_ipv4(outer4(kGre), gre(ppp, pattern_bytes(40))), 42),
                 GPP_STATUS_UNKNOWN_TUNNEL);
  GreSpec mpls;
  mpls.protocol = kEthMpls;
  expect_refused(crafted("gre mpls", eth_ipv6(outer6(kGre), gre(mpls, pattern_bytes(40))), 54 + 4),
                 GPP_STATUS_UNKNOWN_TUNNEL);
}

TEST(TunnelUnknown, GeneveVersionAndProtocol) {
  GeneveSpec v1;
  v1.version = 1;
  expect_refused(crafted("geneve version 1", udp4_frame(1, kPortGeneve, geneve(v1, tcp4().frame)), 50),
                 GPP_STATUS_UNKNOWN_TUNNEL);
  GeneveSpec nsh;
  nsh.protocol = 0x894f;
  nsh.option_words = 1;
  expect_refused(crafted("geneve protocol nsh", udp4_frame(1, kPortGeneve, geneve(nsh, pattern_bytes(30))), 50),
                 GPP_STATUS_UNKNOWN_TUNNEL);
}

TEST(TunnelUnknown, ErspanVersion) {
  const Bytes frame = tcp4_tagged().frame;
  GreSpec g;
  g.protocol = kEthErspan;
  g.sequence = true;
  expect_refused(crafted("erspan type II header of version 2",
                         eth_ipv4(outer4(kGre), gre(g, erspan2(1, frame, 2))), 42 + 8),
                 GPP_STATUS_UNKNOWN_TUNNEL);
  g.protocol = kEthErspan3;
  expect_refused(crafted("erspan type III header of version 1",
                         eth_ipv4(outer4(kGre), gre(g, erspan3(1, frame, false, 1))), 42 + 12),
                 GPP_STATUS_UNKNOWN_TUNNEL);
}

TEST(TunnelUnknown, GtpNotAnIpPdu) {
  GtpSpec g;
  expect_refused(crafted("gtp-u with an ethernet pdu",
                         udp4_frame(kPortGtpU, kPortGtpU, gtp(g, tcp4().frame)), 42 + 9),
                 GPP_STATUS_UNKNOWN_TUNNEL);
  g.flags = 0x20; // protocol type 0: GTP'
  expect_refused(crafted("gtp prime", udp4_frame(kPortGtpU, kPortGtpU, gtp(g, tcp4().ip())), 50),
                 GPP_STATUS_UNKNOWN_TUNNEL);
  g.flags = 0x50; // version 2
  expect_refused(crafted("gtp version 2", udp4_frame(kPortGtpU, kPortGtpU, gtp(g, tcp4().ip())), 50),
                 GPP_STATUS_UNKNOWN_TUNNEL);
}

TEST(TunnelUnknown, FlaggedInsideATunnel) {
  // The walk stops at the packet that carries the unknown encapsulation.
  GreSpec routing;
  routing.routing = true;
  const Bytes carrier = eth_ipv4(outer4(kGre), gre(routing, tcp4().ip()));
  const Bytes frame = udp6_frame(77, kPortVxlan, vxlan(3, carrier));
  const uint32_t shift = tail_offset(frame, carrier);
  const Walk w = walk(crafted("gre routing inside vxlan", frame, shift + 38));
  GppResult want = alone(carrier);
  want.status |= GPP_STATUS_UNKNOWN_TUNNEL;
  EXPECT_EQ("", differs_from_bare(w.r, want, shift));
  expect_tunnel(w.t, {GPP_TUNNEL_VXLAN}, 3, over_udp6(77, kPortVxlan));
}

TEST(TunnelUnknown, GtpSignallingIsNoTunnel) {
  for (uint8_t type : {1, 2, 26, 254}) { // echo request / response, error indication, end marker
    GtpSpec g;
    g.message_type = type;
    g.sequence = type < 3;
    expect_plain(crafted("gtp-u message " + std::to_string(type),
                         udp4_frame(kPortGtpU, kPortGtpU, gtp(g, type == 26 ? pattern_bytes(8) : Bytes{})), 50));
  }
}

// ---- guesses, fragments and ports ----------------------------------------------------

TEST(TunnelTeredo, AnythingButIpv6IsPlainUdp) {
  expect_plain(crafted("udp 3544, ipv4 inside", udp4_frame(40000, kPortTeredo, tcp4().ip()), 42));
  expect_plain(crafted("udp 3544, dns", udp4_frame(kPortTeredo, 53, pattern_bytes(60)), 42));
  // An authentication header whose lengths run past the datagram.
  TeredoSpec t;
  t.auth = true;
  t.id_length = 200;
  Bytes payload = teredo(t, udp6().ip());
  payload.resize(60);
  expect_plain(crafted("teredo authentication past the datagram", udp4_frame(40000, kPortTeredo, payload), 42));
}

TEST(TunnelFragments, FragmentedCarriersAreNotOpened) {
  const Inner in = tcp4();
  Ipv4Spec first = outer4(kUdp);
  first.more_fragments = true;
  expect_plain(crafted("vxlan in a first fragment",
                       eth_ipv4(first, udp(1, kPortVxlan, vxlan(1, in.frame))), 42));
  Ipv4Spec later = outer4(kGre);
  later.frag_offset_bytes = 1480;
  expect_plain(crafted("gre in a later fragment", eth_ipv4(later, gre(GreSpec{}, in.ip())), 34));
  Ipv4Spec gre_first = outer4(kGre);
  gre_first.more_fragments = true;
  expect_plain(crafted("gre in a first fragment", eth_ipv4(gre_first, gre(GreSpec{}, in.ip())), 34));
  Ipv6Spec frag6 = outer6(kUdp);
  frag6.exts = {fragment_header(0, true)};
  expect_plain(crafted("geneve in an ipv6 first fragment",
                       eth_ipv6(frag6, udp(1, kPortGeneve, geneve(GeneveSpec{}, in.frame))), 70));
  Ipv6Spec ipip6 = outer6(kIpIp);
  ipip6.exts = {fragment_header(0, true)};
  expect_plain(crafted("4in6 in an ipv6 first fragment", eth_ipv6(ipip6, in.ip()), 62));
}

// An IPv6 atomic fragment (offset 0, no more fragments) is a whole datagram
// (RFC 6946): its tunnel is opened, as Wireshark opens it.
TEST(TunnelFragments, Ipv6AtomicFragmentsAreOpened) {
  const Inner in = tcp4();
  Ipv6Spec atomic = outer6(kUdp);
  atomic.exts = {fragment_header(0, false)};
  expect_opened("vxlan in an ipv6 atomic fragment", eth_ipv6(atomic, udp(3, kPortVxlan, vxlan(77, in.frame))),
                in, false, {GPP_TUNNEL_VXLAN}, 77, over_udp6(3, kPortVxlan));
  Ipv6Spec ipip6 = outer6(kIpIp);
  ipip6.exts = {fragment_header(0, false)};
  expect_opened("4in6 in an ipv6 atomic fragment", eth_ipv6(ipip6, in.ip()), in, true,
                {GPP_TUNNEL_IPIP}, 0, over_ip6(kIpIp));
}

TEST(TunnelPorts, VxlanOnTheConfiguredPortsOnly) {
  const Inner in = tcp4_tagged();
  const Bytes linux_port = udp4_frame(1, 8472, vxlan(5, in.frame));
  const Bytes iana_port = udp4_frame(1, kPortVxlan, vxlan(5, in.frame));
  expect_plain(crafted("vxlan on 8472, not configured", linux_port, 42));
  gpp::CoreConfig none = decap_config();
  none.vxlan_ports[0] = 0;
  expect_plain(crafted("vxlan on 4789, no port configured", iana_port, 42), none);
  gpp::CoreConfig both = decap_config();
  both.vxlan_ports[1] = 8472;
  const Walk w = walk(crafted("vxlan on 8472, configured", linux_port, 50 + in.header_bytes), both);
  EXPECT_EQ("", differs_from_bare(w.r, alone(in.frame), 50));
  expect_tunnel(w.t, {GPP_TUNNEL_VXLAN}, 5, over_udp4(1, 8472));
  gpp::CoreConfig only_linux = decap_config();
  only_linux.vxlan_ports[0] = 8472;
  expect_plain(crafted("vxlan on 4789, only 8472 configured", iana_port, 42), only_linux);
}

// ---- checksums: the innermost packet's, never a carrier's -------------------------

// The walk sums a level's IPv4 header and UDP checksums only once it knows no
// tunnel opens below it: a carrier's, good or bad, never reach the record;
// the innermost packet's, good or bad, always do.
TEST(TunnelChecksums, OnlyTheInnermostPacketsCount) {
  const Inner in = tcp4();
  Ipv4Spec bad_header = outer4(kUdp);
  bad_header.corrupt_header_checksum = true;
  expect_opened("vxlan, carrier's ipv4 header checksum bad",
                eth_ipv4(bad_header, udp(7, kPortVxlan, vxlan(9, in.frame))), in, false,
                {GPP_TUNNEL_VXLAN}, 9, over_udp4(7, kPortVxlan));
  Ipv4Spec bad_udp4 = outer4(kUdp);
  bad_udp4.l4_checksum = L4Checksum::Corrupt;
  expect_opened("geneve, carrier's udp checksum bad",
                eth_ipv4(bad_udp4, udp(8, kPortGeneve, geneve(GeneveSpec{}, in.frame))), in, false,
                {GPP_TUNNEL_GENEVE}, GeneveSpec{}.vni, over_udp4(8, kPortGeneve));
  Ipv6Spec bad_udp6 = outer6(kUdp);
  bad_udp6.l4_checksum = L4Checksum::Corrupt;
  expect_opened("vxlan over ipv6, carrier's udp checksum bad",
                eth_ipv6(bad_udp6, udp(9, kPortVxlan, vxlan(3, in.frame))), in, false,
                {GPP_TUNNEL_VXLAN}, 3, over_udp6(9, kPortVxlan));
  // The innermost packet's own bad checksums stay bad (as parsed alone).
  Ipv4Spec inner_ip;
  inner_ip.src = ipv4_addr("10.3.3.3");
  inner_ip.dst = ipv4_addr("10.4.4.4");
  inner_ip.proto = kUdp;
  inner_ip.corrupt_header_checksum = true;
  inner_ip.l4_checksum = L4Checksum::Corrupt;
  const Inner broken{ethernet(kEthIpv4, ipv4(inner_ip, udp(1000, 2000, pattern_bytes(20, 5)))), 42};
  ASSERT_EQ(GPP_CHECKSUM_BAD, alone(broken.frame).ipv4_checksum);
  ASSERT_EQ(GPP_CHECKSUM_BAD, alone(broken.frame).l4_checksum);
  expect_opened("vxlan over ipv6 around bad checksums",
                udp6_frame(10, kPortVxlan, vxlan(4, broken.frame)), broken, false,
                {GPP_TUNNEL_VXLAN}, 4, over_udp6(10, kPortVxlan));
  // Not a tunnel: the packet's own bad checksums, as without the walk.
  expect_plain(crafted("udp with bad checksums, no tunnel", broken.frame, 42));
  Ipv6Spec plain6 = outer6(kUdp);
  plain6.l4_checksum = L4Checksum::Corrupt;
  expect_plain(crafted("udp over ipv6, bad checksum, no tunnel", eth_ipv6(plain6, udp(1, 2, pattern_bytes(9))), 62));
  // At the depth limit the level left unopened is the packet described: its
  // own bad UDP checksum counts; the carriers' (one bad too) do not.
  Bytes frame = in.frame;
  for (int wrap = 0; wrap <= GPP_MAX_TUNNEL_DEPTH; ++wrap) {
    const bool bad = wrap == 0 || wrap == GPP_MAX_TUNNEL_DEPTH;
    frame = eth_ipv4(bad ? bad_udp4 : outer4(kUdp), udp(7, kPortVxlan, vxlan(1, frame)));
  }
  const uint32_t unopened = 50 * GPP_MAX_TUNNEL_DEPTH;
  const Walk deep = walk(crafted("vxlan past the depth limit, bad udp checksums", frame, unopened + 42 + 8));
  EXPECT_EQ(GPP_MAX_TUNNEL_DEPTH, deep.t.tunnel_count);
  EXPECT_EQ(unopened + 14, deep.r.l3_offset);
  EXPECT_EQ(GPP_CHECKSUM_GOOD, deep.r.ipv4_checksum);
  EXPECT_EQ(GPP_CHECKSUM_BAD, deep.r.l4_checksum);
}

// ---- generated traffic inside tunnels (gpu/traffic_gen.h) ---------------------------

namespace {

uint64_t fnv1a(uint64_t h, const std::vector<uint8_t> &bytes) {
  for (uint8_t b : bytes) h = (h ^ b) * 1099511628211ull;
  return (h ^ bytes.size()) * 1099511628211ull;
}

gpp::TrafficSpec traffic(gpp::TrafficProfile profile, const std::vector<gpp::TrafficTunnel> &tunnels = {}) {
  gpp::TrafficSpec spec;
  spec.profile = profile;
  spec.seed = 11;
  spec.flows = 64;
  spec.tunnels = tunnels;
  return spec;
}

// Every frame of `tunnels` traffic, walked, is the frame of the same traffic
// without tunnels, parsed alone; the walk passes `tunnels`.
void expect_generated_inside(gpp::TrafficProfile profile, const std::vector<gpp::TrafficTunnel> &tunnels,
                             const std::vector<uint8_t> &types, int frames) {
  gpp::TrafficGenerator plain(traffic(profile));
  gpp::TrafficGenerator wrapped(traffic(profile, tunnels));
  const bool ip_borne = !tunnels.empty() && (tunnels.back() == gpp::TrafficTunnel::GtpU ||
                                             tunnels.back() == gpp::TrafficTunnel::IpIp);
  const auto tunnel_port = [](uint16_t p) {
    return p == kPortVxlan || p == kPortGeneve || p == kPortGtpU || p == kPortGreInUdp || p == kPortTeredo;
  };
  int moved = 0;
  for (int i = 0; i < frames; ++i) {
    const Bytes inner = plain.next();
    const Bytes frame = wrapped.next();
    SCOPED_TRACE("frame " + std::to_string(i));
    GppTunnelInfo t;
    const GppResult r = run_core(frame, static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(frame.size()),
                                 GPP_LINKTYPE_ETHERNET, decap_config(), 1, kTimestamp, &t);
    ASSERT_EQ(types.size(), t.tunnel_count);
    ASSERT_TRUE(std::equal(types.begin(), types.end(), t.tunnel_types));
    if (!ip_borne) {
      ASSERT_EQ(inner.size() + gpp::tunnel_overhead(tunnels), frame.size());
    }
    GppResult want = alone(inner);
    if (want.l4_proto == kUdp && (tunnel_port(want.sport) || tunnel_port(want.dport))) {
      ++moved; // its ports moved up by one: no tunnel of its own
      ASSERT_FALSE(tunnel_port(r.sport) || tunnel_port(r.dport));
      ASSERT_EQ(want.sport + tunnel_port(want.sport), r.sport);
      ASSERT_EQ(want.dport + tunnel_port(want.dport), r.dport);
      continue;
    }
    if (ip_borne) { // its Ethernet header and tags were dropped
      want.vlan_count = 0;
      std::memset(want.vlan_ids, 0, sizeof want.vlan_ids);
    }
    ASSERT_EQ("", differs_from_bare(r, want, static_cast<uint32_t>(frame.size() - inner.size())));
    // Without the walk, the outermost headers are clean.
    const GppResult outer = today(crafted("outer", frame, 0));
    ASSERT_EQ(0u, outer.status);
    ASSERT_EQ(GPP_CHECKSUM_GOOD, outer.ipv4_checksum);
  }
  if (profile == gpp::TrafficProfile::Mix && frames >= 2000) {
    EXPECT_LT(0, moved) << "no inner flow on a tunnel port";
  }
}

} // namespace

TEST(TrafficTunnels, PlainTrafficIsUnchanged) {
  // FNV-1a of 2,000 frames of each profile, taken from the generator before
  // it had tunnels: without them it writes the same bytes.
  const uint64_t before[] = {0x11d81a157cc67418ull, 0xbc5abf686854378full, 0x7191784bb463cbf0ull,
                             0x2c3a546ec00f9a75ull};
  for (int p = 0; p < 4; ++p) {
    gpp::TrafficGenerator gen(traffic(static_cast<gpp::TrafficProfile>(p)));
    uint64_t h = 1469598103934665603ull;
    for (int i = 0; i < 2000; ++i) h = fnv1a(h, gen.next());
    EXPECT_EQ(before[p], h) << "profile " << p;
  }
}

TEST(TrafficTunnels, AllVxlan) {
  // 64-byte frames inside VXLAN are 114 bytes on the wire.
  gpp::TrafficGenerator gen(traffic(gpp::TrafficProfile::Small, {gpp::TrafficTunnel::Vxlan}));
  for (int i = 0; i < 100; ++i) ASSERT_EQ(114u, gen.next().size());
  EXPECT_EQ(50u, gpp::tunnel_overhead({gpp::TrafficTunnel::Vxlan}));
  expect_generated_inside(gpp::TrafficProfile::Small, {gpp::TrafficTunnel::Vxlan}, {GPP_TUNNEL_VXLAN}, 500);
  expect_generated_inside(gpp::TrafficProfile::Mix, {gpp::TrafficTunnel::Vxlan}, {GPP_TUNNEL_VXLAN}, 2000);
}

TEST(TrafficTunnels, EveryTypeAndNests) {
  using T = gpp::TrafficTunnel;
  expect_generated_inside(gpp::TrafficProfile::Mix, {T::Geneve}, {GPP_TUNNEL_GENEVE}, 500);
  expect_generated_inside(gpp::TrafficProfile::Mix, {T::Gre}, {GPP_TUNNEL_GRE}, 500);
  expect_generated_inside(gpp::TrafficProfile::Mix, {T::GtpU}, {GPP_TUNNEL_GTPU}, 500);
  expect_generated_inside(gpp::TrafficProfile::Mix, {T::IpIp}, {GPP_TUNNEL_IPIP}, 500);
  expect_generated_inside(gpp::TrafficProfile::Imix, {T::Vxlan, T::Gre, T::Geneve, T::IpIp},
                          {GPP_TUNNEL_VXLAN, GPP_TUNNEL_GRE, GPP_TUNNEL_GENEVE, GPP_TUNNEL_IPIP}, 500);
  expect_generated_inside(gpp::TrafficProfile::Mix, {T::GtpU, T::Vxlan, T::IpIp},
                          {GPP_TUNNEL_GTPU, GPP_TUNNEL_VXLAN, GPP_TUNNEL_IPIP}, 500);
}

TEST(TrafficTunnels, Names) {
  using T = gpp::TrafficTunnel;
  std::vector<T> tunnels;
  ASSERT_TRUE(gpp::parse_traffic_tunnels("vxlan", &tunnels));
  EXPECT_EQ(std::vector<T>{T::Vxlan}, tunnels);
  ASSERT_TRUE(gpp::parse_traffic_tunnels("vxlan,gre,geneve,ipip", &tunnels));
  EXPECT_EQ((std::vector<T>{T::Vxlan, T::Gre, T::Geneve, T::IpIp}), tunnels);
  ASSERT_TRUE(gpp::parse_traffic_tunnels("gtpu", &tunnels));
  EXPECT_EQ(std::vector<T>{T::GtpU}, tunnels);
  ASSERT_TRUE(gpp::parse_traffic_tunnels("none", &tunnels));
  EXPECT_TRUE(tunnels.empty());
  tunnels = {T::Gre};
  ASSERT_TRUE(gpp::parse_traffic_tunnels("", &tunnels));
  EXPECT_TRUE(tunnels.empty());
  tunnels = {T::Gre};
  EXPECT_FALSE(gpp::parse_traffic_tunnels("vxlan,mpls", &tunnels));
  EXPECT_FALSE(gpp::parse_traffic_tunnels("vxlan,", &tunnels));
  EXPECT_FALSE(gpp::parse_traffic_tunnels("ipip,ipip,ipip,ipip,ipip", &tunnels)); // past the walk's depth
  EXPECT_EQ(std::vector<T>{T::Gre}, tunnels);
  EXPECT_EQ(50u + 42 + 50 + 20, gpp::tunnel_overhead({T::Vxlan, T::Gre, T::Geneve, T::IpIp}));
}
