#include "core_harness.h"

#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <memory>
#include <sstream>

namespace gpptest {

gpp::CoreConfig make_config(bool verify_l4, bool symmetric, const uint8_t *key) {
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, key, gpp::kRssKeySize);
  cfg.symmetric_rss = symmetric ? 1 : 0;
  cfg.verify_l4_checksum = verify_l4 ? 1 : 0;
  return cfg;
}

GppResult run_core(const Bytes &pkt, uint32_t caplen, uint32_t wirelen, uint32_t linktype,
                   const gpp::CoreConfig &cfg, uint64_t packet_number, uint64_t timestamp_ns,
                   GppTunnelInfo *tunnel) {
  if (caplen > pkt.size()) {
    ADD_FAILURE() << "test bug: caplen " << caplen << " > packet of " << pkt.size();
    caplen = static_cast<uint32_t>(pkt.size());
  }
  // Exactly caplen bytes on the heap: one byte more read is a heap-buffer-overflow.
  std::unique_ptr<uint8_t[]> exact(new uint8_t[caplen]);
  if (caplen) std::memcpy(exact.get(), pkt.data(), caplen);
  GppResult r;
  std::memset(&r, 0xa5, sizeof r); // the core must write every byte
  if (!tunnel) {
    gpp::process_packet(exact.get(), caplen, wirelen, linktype, packet_number, timestamp_ns, cfg,
                        r);
    return r;
  }
  std::memset(tunnel, 0xa5, sizeof *tunnel);
  gpp::process_packet(exact.get(), caplen, wirelen, linktype, packet_number, timestamp_ns, cfg, r,
                      gpp::ClassifyStages::kInline, nullptr, tunnel);
  return r;
}

std::string record_violations(const GppResult &r, uint32_t caplen, uint32_t wirelen) {
  std::ostringstream why;
#define GPP_STATUS_MASK_(flag, bit, name, meaning) | GPP_STATUS_##flag
  const uint32_t known_status = 0u GPP_STATUS_FLAGS(GPP_STATUS_MASK_);
#undef GPP_STATUS_MASK_
  const bool header = r.ip_flags & GPP_IP_HEADER_PARSED;
  const bool l4 = r.ip_flags & GPP_IP_L4_PARSED;
  if (r.caplen != caplen || r.wirelen != wirelen)
    why << "caplen/wirelen " << r.caplen << "/" << r.wirelen << " instead of " << caplen << "/"
        << wirelen;
  else if (r.status & ~known_status)
    why << "unknown status bits 0x" << std::hex << r.status;
  else if (r.acl_rule != -1 || r.dpi_pattern != -1 || r.acl_action != 0 || r.dpi_hits != 0)
    why << "ACL/DPI fields not at their 'no result' values";
  else if (r.dpi_scanned || r.reserved0[0] || r.reserved0[1])
    why << "reserved fields (or dpi_scanned without DPI) not zero";
  else if (r.vlan_count > GPP_MAX_VLANS)
    why << "vlan_count " << int(r.vlan_count);
  else if (r.ip_version != 0 && r.ip_version != 4 && r.ip_version != 6)
    why << "ip_version " << int(r.ip_version);
  else if (r.ipv4_checksum > GPP_CHECKSUM_BAD || r.l4_checksum > GPP_CHECKSUM_BAD)
    why << "checksum status out of range";
  else if (r.ip_version != 4 && r.ipv4_checksum != GPP_CHECKSUM_NONE)
    why << "IPv4 header checksum status on a non-IPv4 packet";
  else if (r.ip_version == 0 && (r.rss_hash != 0 || header))
    why << "non-IP packet with an RSS hash or parsed IP header";
  else if (r.ip_flags & ~0x1fu)
    why << "unknown ip_flags bits";
  else if (r.l3_offset > caplen)
    why << "l3_offset " << r.l3_offset << " past caplen " << caplen;
  else if (header && r.l3_offset + (r.ip_version == 4 ? 20u : 40u) > caplen)
    why << "IP header marked parsed but not captured";
  else if (!header && r.ip_length)
    why << "ip_length set without an IP header";
  else if (l4 && !header)
    why << "L4 parsed without an IP header";
  // Ports (or ICMP type and code) are read as soon as their bytes are captured.
  else if (l4 && r.l4_offset + (r.l4_proto == kTcp || r.l4_proto == kUdp || r.l4_proto == 132 ? 4u : 2u) >
                        caplen)
    why << "L4 fields marked parsed but not captured (l4_offset " << r.l4_offset << ")";
  else if (r.tcp_flags && r.l4_offset + 14u > caplen)
    why << "TCP flags set but byte 13 of the TCP header not captured";
  else if (!l4 && (r.sport || r.dport || r.tcp_flags || r.icmp_type || r.icmp_code))
    why << "ports / flags / ICMP fields set without GPP_IP_L4_PARSED";
  else if (r.payload_length > 0 && uint64_t(r.payload_offset) + r.payload_length > caplen)
    why << "payload [" << r.payload_offset << ", +" << r.payload_length << ") past caplen "
        << caplen;
  return why.str();
}

std::string tunnel_violations(const GppResult &r, const GppTunnelInfo &t, bool decap) {
  std::ostringstream why;
  constexpr uint32_t tunnel_flags =
      GPP_STATUS_BAD_TUNNEL | GPP_STATUS_UNKNOWN_TUNNEL | GPP_STATUS_TUNNEL_DEPTH;
  const GppTunnelInfo none{};
  bool types_ok = true, ip_borne = false;
  for (int i = 0; i < GPP_MAX_TUNNEL_DEPTH; ++i) {
    const uint8_t type = t.tunnel_types[i];
#define GPP_TUNNEL_KNOWN_(name, value, text, meaning) || type == GPP_TUNNEL_##name
    const bool known = false GPP_TUNNEL_TYPES(GPP_TUNNEL_KNOWN_);
#undef GPP_TUNNEL_KNOWN_
    if (i < t.tunnel_count ? !known : type != 0) types_ok = false;
    if (i < t.tunnel_count && type != GPP_TUNNEL_PPPOE && type != GPP_TUNNEL_PBB &&
        type != GPP_TUNNEL_VNTAG && type != GPP_TUNNEL_ETAG)
      ip_borne = true;
  }
  const uint8_t p = t.outer_l4_proto;
  bool v4_tail_zero = true;
  for (int i = 4; i < 16; ++i) v4_tail_zero = v4_tail_zero && !t.outer_src[i] && !t.outer_dst[i];
  if (!decap && (std::memcmp(&t, &none, sizeof t) != 0 || (r.status & tunnel_flags)))
    why << "decap off, yet a tunnel record or tunnel flag";
  else if (t.tunnel_count > GPP_MAX_TUNNEL_DEPTH)
    why << "tunnel_count " << int(t.tunnel_count);
  else if (!types_ok)
    why << "tunnel types out of range, or set past tunnel_count";
  else if (t.reserved0)
    why << "reserved0 not zero";
  else if ((r.status & GPP_STATUS_TUNNEL_DEPTH) && t.tunnel_count != GPP_MAX_TUNNEL_DEPTH)
    why << "tunnel_depth flag at depth " << int(t.tunnel_count);
  else if (t.tunnel_count == 0 && t.tunnel_id != 0)
    why << "tunnel id without a tunnel";
  else if (ip_borne != (t.outer_ip_version != 0))
    why << "outer_ip_version " << int(t.outer_ip_version) << " with" << (ip_borne ? "" : "out")
        << " an IP-borne level";
  else if (t.outer_ip_version == 0 &&
           std::memcmp(&t.outer_l4_proto, &none.outer_l4_proto,
                       sizeof t - offsetof(GppTunnelInfo, outer_l4_proto)) != 0)
    why << "outer fields without an outer IP header";
  else if (t.outer_ip_version != 0 && t.outer_ip_version != 4 && t.outer_ip_version != 6)
    why << "outer_ip_version " << int(t.outer_ip_version);
  else if (t.outer_ip_version && p != kUdp && p != kGre && p != kIpIp && p != kIpv6InIp)
    why << "outer_l4_proto " << int(p);
  else if (p != kUdp && (t.outer_sport || t.outer_dport))
    why << "outer ports on a carrier that is not UDP";
  else if (t.outer_ip_version == 4 && !v4_tail_zero)
    why << "IPv4 outer addresses with bytes past the fourth";
  return why.str();
}

namespace {

std::string differing_header_field(const GppResult &full, const GppResult &cut) {
#define GPP_SAME_(field)                                                                         \
  if (std::memcmp(&full.field, &cut.field, sizeof full.field) != 0) return #field;
  GPP_SAME_(status)
  GPP_SAME_(ethertype)
  GPP_SAME_(vlan_ids)
  GPP_SAME_(vlan_count)
  GPP_SAME_(mpls_label_count)
  GPP_SAME_(ip_version)
  GPP_SAME_(l3_offset)
  GPP_SAME_(src)
  GPP_SAME_(dst)
  GPP_SAME_(ttl)
  GPP_SAME_(l4_proto)
  GPP_SAME_(ipv4_checksum)
  GPP_SAME_(ip_flags)
  GPP_SAME_(frag_offset)
  GPP_SAME_(ipv6_ext_count)
  GPP_SAME_(l4_offset)
  GPP_SAME_(sport)
  GPP_SAME_(dport)
  GPP_SAME_(tcp_flags)
  GPP_SAME_(icmp_type)
  GPP_SAME_(icmp_code)
  GPP_SAME_(rss_hash)
  GPP_SAME_(payload_offset)
#undef GPP_SAME_
  if (cut.l4_checksum != full.l4_checksum && cut.l4_checksum != GPP_CHECKSUM_UNVERIFIED)
    return "l4_checksum";
  if (cut.payload_length > full.payload_length) return "payload_length";
  return "";
}

// First broken promise over all truncations of c, or "".  With `full_tunnel`,
// through the tunnel walk, whose record is checked as well.
std::string truncation_violations(const Crafted &c, const gpp::CoreConfig &cfg,
                                  const GppResult &full, const GppTunnelInfo *full_tunnel) {
  const uint32_t caplen = static_cast<uint32_t>(c.bytes.size());
  const uint32_t wire = c.wire();
  std::ostringstream why;
  if (c.header_bytes > caplen) {
    why << "test bug: header_bytes " << c.header_bytes << " > caplen " << caplen;
    return why.str();
  }
  for (uint32_t len = 0; len < caplen; ++len) {
    GppTunnelInfo t{};
    const GppResult r = run_core(c.bytes, len, wire, c.linktype, cfg, 1,
                                 1700000000123456789ull, full_tunnel ? &t : nullptr);
    std::string broken = record_violations(r, len, wire);
    if (broken.empty() && full_tunnel) broken = tunnel_violations(r, t, cfg.decap);
    if (!broken.empty()) {
      why << "cut at " << len << " bytes: " << broken;
      return why.str();
    }
    if (len < c.header_bytes) {
      if (r.status == 0 && full_tunnel && c.tunnel_guessed &&
          t.tunnel_count < full_tunnel->tunnel_count)
        continue; // taken for plain UDP
      if (r.status == 0) {
        why << "cut at " << len << " bytes (headers need " << c.header_bytes
            << "): status 0, expected a truncation flag";
        return why.str();
      }
      if (full.status == 0 && r.status != GPP_STATUS_TRUNCATED) {
        why << "cut at " << len << " bytes of a clean packet: status 0x" << std::hex << r.status
            << ", expected exactly TRUNCATED";
        return why.str();
      }
    } else {
      std::string field = differing_header_field(full, r);
      if (field.empty() && full_tunnel && std::memcmp(&t, full_tunnel, sizeof t) != 0)
        field = "the tunnel record";
      if (!field.empty()) {
        why << "cut at " << len << " bytes (headers complete at " << c.header_bytes
            << "): " << field << " differs from the full packet (status 0x" << std::hex
            << r.status << " vs 0x" << full.status << ")";
        return why.str();
      }
    }
  }
  return "";
}

} // namespace

GppResult parse(const Crafted &c, const gpp::CoreConfig &cfg) {
  SCOPED_TRACE("packet '" + c.name + "'");
  const uint32_t caplen = static_cast<uint32_t>(c.bytes.size());
  const GppResult full = run_core(c.bytes, caplen, c.wire(), c.linktype, cfg);
  EXPECT_EQ("", record_violations(full, caplen, c.wire()));
  EXPECT_EQ("", truncation_violations(c, cfg, full, nullptr));
  return full;
}

GppResult parse(const Crafted &c, const gpp::CoreConfig &cfg, GppTunnelInfo *tunnel) {
  SCOPED_TRACE("packet '" + c.name + "' through the tunnel walk");
  const uint32_t caplen = static_cast<uint32_t>(c.bytes.size());
  const GppResult full =
      run_core(c.bytes, caplen, c.wire(), c.linktype, cfg, 1, 1700000000123456789ull, tunnel);
  EXPECT_EQ("", record_violations(full, caplen, c.wire()));
  EXPECT_EQ("", tunnel_violations(full, *tunnel, cfg.decap));
  EXPECT_EQ("", truncation_violations(c, cfg, full, tunnel));
  return full;
}

GppResult parse(const std::string &name, uint32_t linktype, const Bytes &bytes,
                uint32_t header_bytes, uint32_t wirelen, const gpp::CoreConfig &cfg) {
  Crafted c;
  c.name = name;
  c.linktype = linktype;
  c.bytes = bytes;
  c.wirelen = wirelen;
  c.header_bytes = header_bytes;
  return parse(c, cfg);
}

Bytes eth_ipv4(const Ipv4Spec &ip, const Bytes &l4) { return ethernet(kEthIpv4, ipv4(ip, l4)); }
Bytes eth_ipv6(const Ipv6Spec &ip, const Bytes &l4) { return ethernet(kEthIpv6, ipv6(ip, l4)); }

Bytes rss_input(const Bytes &src, const Bytes &dst, bool with_ports, uint16_t sport,
                uint16_t dport) {
  Bytes in = concat(src, dst);
  if (with_ports) {
    append16(in, sport);
    append16(in, dport);
  }
  return in;
}

uint32_t expected_rss(const Bytes &src, const Bytes &dst, bool with_ports, uint16_t sport,
                      uint16_t dport, const uint8_t *key) {
  return reference_toeplitz(key, gpp::kRssKeySize, rss_input(src, dst, with_ports, sport, dport));
}

Bytes addr_of(const uint8_t *field, uint8_t ip_version) {
  return Bytes(field, field + (ip_version == 6 ? 16 : 4));
}

} // namespace gpptest
