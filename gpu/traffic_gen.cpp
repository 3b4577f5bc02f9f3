#include "traffic_gen.h"

#include <algorithm>
#include <cstring>

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

} // namespace

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
  const Flow f =
      from_rule ? flow_from_rule(spec_.acl->rules[matchable_rules_[rng_() % matchable_rules_.size()]])
                : spec_.round_robin ? flows_[next_flow_++ % flows_.size()]
                                    : flows_[rng_() % flows_.size()];
  // Rule-derived headers stay whole: a later fragment has no ports to match with.
  const bool fragment = !from_rule && spec_.profile == TrafficProfile::Mix &&
                        f.ip_version == 4 && rng_() % 50 == 0;
  build(f, frame_length(), fragment);
  return frame_;
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
