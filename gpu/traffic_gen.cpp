#include "traffic_gen.h"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "packet_core.h"

namespace gpp {
namespace {

void put16(uint8_t *p, uint32_t v) {
  p[0] = static_cast<uint8_t>(v >> 8);
  p[1] = static_cast<uint8_t>(v);
}

uint16_t checksum(uint32_t sum) { return static_cast<uint16_t>(~detail::fold_sum(sum)); }

constexpr uint32_t kEthernet = 14, kVlanTag = 4, kIpv4 = 20, kIpv6 = 40;

uint32_t l4_header_length(uint8_t proto) {
  return proto == 6 ? 20 : (proto == 17 || proto == 1 || proto == 58) ? 8 : 0;
}

void put32(uint8_t *p, uint32_t v) {
  put16(p, v >> 16);
  put16(p + 2, v);
}

// Headers a tunnel level writes before what it carries, after the outer
// Ethernet and IPv4 headers; whether it carries the whole frame.
uint32_t tunnel_header_length(TrafficTunnel t) {
  switch (t) {
  case TrafficTunnel::Vxlan:
  case TrafficTunnel::Geneve:
  case TrafficTunnel::GtpU: return 8 + 8; // UDP and the tunnel's 8 bytes
  case TrafficTunnel::Gre: return 8;      // with the key
  default: return 0;                      // IpIp
  }
}

// UDP ports on which the tunnel walk opens a tunnel (either side, for GTP-U
// and Teredo): inner flows on them would be walked one level deeper.
bool is_tunnel_port(uint16_t port) {
  return port == kVxlanPort || port == detail::kPortGeneve || port == detail::kPortGtpU ||
         port == detail::kPortGreInUdp || port == detail::kPortTeredo;
}

bool carries_ethernet(TrafficTunnel t) {
  return t == TrafficTunnel::Vxlan || t == TrafficTunnel::Geneve || t == TrafficTunnel::Gre;
}

} // namespace

bool parse_traffic_tunnels(const std::string &text, std::vector<TrafficTunnel> *out) {
  std::vector<TrafficTunnel> tunnels;
  if (text != "" && text != "none") {
    size_t start = 0;
    for (;;) {
      const size_t comma = text.find(',', start);
      const std::string name = text.substr(start, comma == std::string::npos ? comma : comma - start);
      const auto known = std::find_if(std::begin(kTrafficTunnels), std::end(kTrafficTunnels),
                                      [&](const TrafficTunnelName &t) { return name == t.name; });
      if (known == std::end(kTrafficTunnels)) return false;
      tunnels.push_back(known->tunnel);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (tunnels.size() > GPP_MAX_TUNNEL_DEPTH) return false;
  *out = tunnels;
  return true;
}

uint32_t tunnel_overhead(const std::vector<TrafficTunnel> &tunnels) {
  uint32_t bytes = 0;
  for (TrafficTunnel t : tunnels)
    bytes += kEthernet + kIpv4 + tunnel_header_length(t) - (carries_ethernet(t) ? 0 : kEthernet);
  return bytes;
}

TrafficGenerator::TrafficGenerator(const TrafficSpec &spec) : spec_(spec), rng_(spec.seed) {
  // Rules a generated header can match: ones admitting TCP or UDP, or whose
  // port ranges include 0 (the ports of portless protocols).
  if (spec.acl)
    for (size_t i = 0; i < spec.acl->rules.size(); ++i) {
      const ParsedAclRule &r = spec.acl->rules[i];
      const bool tcp_or_udp = r.proto_mask == 0 || (6 & r.proto_mask) == (r.proto & r.proto_mask) ||
                              (17 & r.proto_mask) == (r.proto & r.proto_mask);
      if (tcp_or_udp || (r.sport_lo == 0 && r.dport_lo == 0)) matchable_rules_.push_back(i);
    }
  const bool mix = spec.profile == TrafficProfile::Mix;
  flows_.resize(std::max(1u, spec.flows));
  for (Flow &f : flows_) {
    f = Flow{};
    f.ip_version = mix && rng_() % 5 == 0 ? 6 : 4;
    const uint32_t p = rng_() % 20;
    f.proto = !mix ? (p < 12 ? 17 : 6) : (p < 12 ? 6 : p < 19 ? 17 : (f.ip_version == 4 ? 1 : 58));
    for (int i = 0; i < 16; ++i) {
      f.src[i] = static_cast<uint8_t>(rng_());
      f.dst[i] = static_cast<uint8_t>(rng_());
    }
    if (f.ip_version == 4) { // private source, documentation destination ranges
      f.src[0] = 10;
      f.dst[0] = 198, f.dst[1] = 18;
    } else {
      f.src[0] = 0x20, f.src[1] = 0x01, f.src[2] = 0x0d, f.src[3] = 0xb8;
      f.dst[0] = 0x20, f.dst[1] = 0x01, f.dst[2] = 0x0d, f.dst[3] = 0xb8;
    }
    f.sport = static_cast<uint16_t>(1024 + rng_() % 64000);
    static const uint16_t services[] = {53, 80, 123, 443, 8080, 4789, 22, 25};
    f.dport = services[rng_() % 8];
    f.vlan = mix && rng_() % 10 == 0 ? static_cast<uint16_t>(1 + rng_() % 4094) : 0;
  }
}

TrafficGenerator::Flow TrafficGenerator::flow_from_rule(const ParsedAclRule &rule) {
  Flow f{};
  f.ip_version = rule.ip_version;
  const int addr_len = rule.ip_version == 4 ? 4 : 16;
  for (int i = 0; i < addr_len; ++i) {
    const int src_bits = std::clamp(rule.src_len - 8 * i, 0, 8);
    const int dst_bits = std::clamp(rule.dst_len - 8 * i, 0, 8);
    const uint8_t src_keep = static_cast<uint8_t>(0xff00u >> src_bits);
    const uint8_t dst_keep = static_cast<uint8_t>(0xff00u >> dst_bits);
    f.src[i] = static_cast<uint8_t>((rule.src[i] & src_keep) | (rng_() & ~src_keep));
    f.dst[i] = static_cast<uint8_t>((rule.dst[i] & dst_keep) | (rng_() & ~dst_keep));
  }
  f.sport = static_cast<uint16_t>(rule.sport_lo + rng_() % (rule.sport_hi - rule.sport_lo + 1u));
  f.dport = static_cast<uint16_t>(rule.dport_lo + rng_() % (rule.dport_hi - rule.dport_lo + 1u));
  // A protocol the rule admits: TCP or UDP where it can (they carry the
  // ports), else the rule's own, which then matches with ports 0.
  const auto admits = [&](uint8_t p) { return (p & rule.proto_mask) == (rule.proto & rule.proto_mask); };
  if (rule.proto_mask == 0) f.proto = rng_() % 2 ? 6 : 17;
  else if (admits(6) || admits(17)) f.proto = admits(6) && (!admits(17) || rng_() % 2) ? 6 : 17;
  else f.proto = static_cast<uint8_t>(rule.proto & rule.proto_mask);
  return f;
}

uint32_t TrafficGenerator::frame_length() {
  switch (spec_.profile) {
  case TrafficProfile::Small: return 64;
  case TrafficProfile::Large: return 1500;
  default: {
    const uint32_t pick = rng_() % 12; // IMIX 7:4:1
    return pick < 7 ? 64 : pick < 11 ? 576 : 1500;
  }
  }
}

const std::vector<uint8_t> &TrafficGenerator::next() {
  const bool from_rule = !matchable_rules_.empty() &&
                         std::uniform_real_distribution<double>(0, 1)(rng_) < spec_.acl_rate;
  Flow f = from_rule ? flow_from_rule(spec_.acl->rules[matchable_rules_[rng_() % matchable_rules_.size()]])
           : spec_.round_robin ? flows_[next_flow_++ % flows_.size()]
                               : flows_[rng_() % flows_.size()];
  if (!spec_.tunnels.empty() && f.proto == 17) { // the walk is to stop at the frame inside
    for (uint16_t *port : {&f.sport, &f.dport})
      if (is_tunnel_port(*port)) ++*port;
  }
  // Rule-derived headers stay whole: a later fragment has no ports to match with.
  const bool fragment = !from_rule && spec_.profile == TrafficProfile::Mix &&
                        f.ip_version == 4 && rng_() % 50 == 0;
  build(f, frame_length(), fragment);
  if (!spec_.tunnels.empty()) encapsulate(f);
  return frame_;
}

// The tunnels around frame_, innermost first.  Nothing here draws from the
// generator: the frames inside stay those of the traffic without tunnels,
// and the outer headers follow from the inner flow (as a VTEP picks its UDP
// source port from the inner headers, RFC 7348).
void TrafficGenerator::encapsulate(const Flow &f) {
  uint32_t flow_hash = 2166136261u; // FNV-1a over the inner flow
  const auto mix = [&flow_hash](const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; ++i) flow_hash = (flow_hash ^ p[i]) * 16777619u;
  };
  mix(f.src, sizeof f.src);
  mix(f.dst, sizeof f.dst);
  const uint8_t rest[] = {f.ip_version, f.proto, uint8_t(f.sport >> 8), uint8_t(f.sport),
                          uint8_t(f.dport >> 8), uint8_t(f.dport)};
  mix(rest, sizeof rest);
  for (size_t level = spec_.tunnels.size(); level-- > 0;) {
    const TrafficTunnel t = spec_.tunnels[level];
    const uint32_t key = flow_hash ^ (0x9e3779b9u * static_cast<uint32_t>(level + 1));
    // What the level carries: the whole frame, or its IP packet (after the
    // Ethernet header and the tags).
    uint32_t carried_at = 0;
    if (!carries_ethernet(t)) {
      carried_at = 12;
      while (carried_at + 4 <= frame_.size() && frame_[carried_at] == 0x81 && frame_[carried_at + 1] == 0x00)
        carried_at += 4;
      carried_at += 2;
    }
    const uint32_t carried = static_cast<uint32_t>(frame_.size()) - carried_at;
    const uint32_t header = tunnel_header_length(t);
    wrapped_.assign(kEthernet + kIpv4 + header + carried, 0);
    uint8_t *p = wrapped_.data();
    static const uint8_t macs[12] = {0x02, 0, 0, 0, 0xee, 1, 0x02, 0, 0, 0, 0xee, 2};
    std::memcpy(p, macs, 12);
    put16(p + 12, 0x0800);
    uint8_t *ip = p + kEthernet;
    const bool inner_v6 = !carries_ethernet(t) && carried && (frame_[carried_at] >> 4) == 6;
    const uint8_t proto = t == TrafficTunnel::Gre ? 47 : t == TrafficTunnel::IpIp ? (inner_v6 ? 41 : 4) : 17;
    ip[0] = 0x45;
    put16(ip + 2, kIpv4 + header + carried);
    put16(ip + 6, 0x4000); // DF
    ip[8] = 64;
    ip[9] = proto;
    const uint8_t src[4] = {10, uint8_t(200 + level), 0, uint8_t(1 + key % 16)};
    const uint8_t dst[4] = {10, uint8_t(200 + level), 1, uint8_t(1 + (key >> 4) % 16)};
    std::memcpy(ip + 12, src, 4);
    std::memcpy(ip + 16, dst, 4);
    put16(ip + 10, checksum(detail::ones_sum(ip, kIpv4, 0)));
    uint8_t *h = ip + kIpv4;
    const uint32_t vni = 5000 + (key >> 8) % 64; // a few tenants
    if (proto == 17) { // UDP, checksum 0 (RFC 7348, 8926: allowed over IPv4)
      const bool gtp = t == TrafficTunnel::GtpU;
      put16(h, gtp ? 2152 : 49152 | (key & 0x3fff));
      put16(h + 2, t == TrafficTunnel::Vxlan ? 4789 : t == TrafficTunnel::Geneve ? 6081 : 2152);
      put16(h + 4, 8 + 8 + carried);
      uint8_t *tunnel = h + 8;
      if (t == TrafficTunnel::Vxlan) {
        tunnel[0] = 0x08; // I: the VNI is valid
        put32(tunnel + 4, vni << 8);
      } else if (t == TrafficTunnel::Geneve) {
        put16(tunnel + 2, 0x6558);
        put32(tunnel + 4, vni << 8);
      } else {
        tunnel[0] = 0x30; // version 1, GTP
        tunnel[1] = 0xff; // G-PDU
        put16(tunnel + 2, carried);
        put32(tunnel + 4, key); // TEID
      }
    } else if (t == TrafficTunnel::Gre) {
      h[0] = 0x20; // key present
      put16(h + 2, 0x6558);
      put32(h + 4, vni << 8 | (key & 0xff)); // NVGRE: virtual subnet id, flow id
    }
    std::memcpy(h + header, frame_.data() + carried_at, carried);
    frame_.swap(wrapped_);
  }
}

// Ethernet [VLAN] IPv4|IPv6 [TCP|UDP|ICMP|ICMPv6] payload, checksums valid.
void TrafficGenerator::build(const Flow &f, uint32_t length, bool fragment) {
  const uint32_t l2 = kEthernet + (f.vlan ? kVlanTag : 0);
  const uint32_t l3 = f.ip_version == 4 ? kIpv4 : kIpv6;
  const uint32_t l4 = fragment ? 0 : l4_header_length(f.proto);
  length = std::max(length, l2 + l3 + l4);
  frame_.assign(length, 0);
  uint8_t *p = frame_.data();
  static const uint8_t macs[12] = {0x02, 0, 0, 0, 0, 1, 0x02, 0, 0, 0, 0, 2};
  std::memcpy(p, macs, 12);
  uint32_t off = 12;
  if (f.vlan) {
    put16(p + off, 0x8100);
    put16(p + off + 2, f.vlan);
    off += 4;
  }
  put16(p + off, f.ip_version == 4 ? 0x0800 : 0x86dd);
  off += 2;
  uint8_t *ip = p + off;
  const uint32_t ip_length = length - l2;
  const uint32_t l4_length = ip_length - l3;
  if (f.ip_version == 4) {
    ip[0] = 0x45;
    put16(ip + 2, ip_length);
    put16(ip + 4, rng_() & 0xffff);
    put16(ip + 6, fragment ? 185 : 0x4000); // a later fragment at 1480 bytes, or DF
    ip[8] = 64;
    ip[9] = f.proto;
    std::memcpy(ip + 12, f.src, 4);
    std::memcpy(ip + 16, f.dst, 4);
    put16(ip + 10, checksum(detail::ones_sum(ip, kIpv4, 0)));
  } else {
    ip[0] = 0x60;
    put16(ip + 4, l4_length);
    ip[6] = f.proto;
    ip[7] = 64;
    std::memcpy(ip + 8, f.src, 16);
    std::memcpy(ip + 24, f.dst, 16);
  }
  uint8_t *seg = ip + l3;
  uint8_t *payload = seg + l4;
  const uint32_t payload_length = l4_length - l4;
  const std::string *source = spec_.payload_source;
  if (source && !source->empty()) {
    size_t at = rng_() % source->size();
    for (uint32_t i = 0; i < payload_length; ++i, at = at + 1 == source->size() ? 0 : at + 1)
      payload[i] = static_cast<uint8_t>((*source)[at]);
  } else {
    for (uint32_t i = 0; i < payload_length; ++i) payload[i] = static_cast<uint8_t>(rng_());
  }
  const bool carries = spec_.dpi && !spec_.dpi->patterns.empty() && l4 && (f.proto == 6 || f.proto == 17);
  if (carries && spec_.dpi_every) {
    // Patterns one after another, each in its own dpi_every-byte stretch.
    for (uint32_t at = 0; at < payload_length; at += spec_.dpi_every) {
      const std::string &pattern = spec_.dpi->patterns[rng_() % spec_.dpi->patterns.size()].bytes;
      const uint32_t room = std::min(spec_.dpi_every, payload_length - at);
      if (pattern.size() <= room)
        std::memcpy(payload + at + rng_() % (room - pattern.size() + 1), pattern.data(), pattern.size());
    }
  } else if (carries && std::uniform_real_distribution<double>(0, 1)(rng_) < spec_.dpi_rate) {
    const std::string &pattern = spec_.dpi->patterns[rng_() % spec_.dpi->patterns.size()].bytes;
    if (pattern.size() <= payload_length)
      std::memcpy(payload + rng_() % (payload_length - pattern.size() + 1), pattern.data(),
                  pattern.size());
  }
  if (!l4) return;
  if (f.proto == 6) {
    put16(seg, f.sport);
    put16(seg + 2, f.dport);
    seg[12] = 5 << 4;
    seg[13] = 0x18; // PSH ACK
    put16(seg + 14, 65535);
  } else if (f.proto == 17) {
    put16(seg, f.sport);
    put16(seg + 2, f.dport);
    put16(seg + 4, l4_length);
  } else {
    seg[0] = f.proto == 1 ? 8 : 128; // echo request
  }
  uint32_t sum = 0;
  if (!(f.proto == 1 && f.ip_version == 4)) { // pseudo-header
    const int addr_len = f.ip_version == 4 ? 4 : 16;
    sum = detail::ones_sum(f.src, addr_len, sum);
    sum = detail::ones_sum(f.dst, addr_len, sum);
    sum += f.proto + l4_length;
  }
  sum = detail::ones_sum(seg, l4_length, sum);
  uint16_t c = checksum(sum);
  if (f.proto == 17 && c == 0) c = 0xffff;
  put16(seg + (f.proto == 6 ? 16 : f.proto == 17 ? 6 : 2), c);
}

} // namespace gpp
