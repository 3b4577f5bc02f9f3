#include "packet_builder.h"

#include <arpa/inet.h>

#include <cstdio>
#include <cstdlib>

namespace gpptest {

namespace {

Bytes parse_addr(int family, const std::string &text, size_t size) {
  Bytes out(size);
  if (inet_pton(family, text.c_str(), out.data()) != 1) {
    std::fprintf(stderr, "test bug: bad address literal '%s'\n", text.c_str());
    std::abort();
  }
  return out;
}

void require(bool ok, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "test bug: %s\n", what);
    std::abort();
  }
}

// Where TCP, UDP and ICMP keep their checksum; 0 = no checksum we fill.
size_t checksum_field(uint8_t proto) {
  switch (proto) {
  case kTcp: return 16;
  case kUdp: return 6;
  case kIcmp:
  case kIcmpv6: return 2;
  default: return 0;
  }
}

void write_l4_checksum(Bytes &seg, uint8_t proto, uint32_t pseudo_sum, L4Checksum mode) {
  const size_t at = checksum_field(proto);
  if (at == 0 || seg.size() < at + 2 || mode == L4Checksum::Keep) return;
  store16(seg, at, 0);
  uint16_t c = internet_checksum(seg, pseudo_sum);
  if (proto == kUdp && c == 0) c = 0xffff; // RFC 768: 0 means "no checksum"
  if (mode == L4Checksum::Corrupt) c ^= 0x0101;
  store16(seg, at, c);
}

} // namespace

Bytes ipv4_addr(const std::string &text) { return parse_addr(AF_INET, text, 4); }
Bytes ipv6_addr(const std::string &text) { return parse_addr(AF_INET6, text, 16); }

void append16(Bytes &b, uint16_t v) {
  b.push_back(static_cast<uint8_t>(v >> 8));
  b.push_back(static_cast<uint8_t>(v));
}

void append32(Bytes &b, uint32_t v) {
  append16(b, static_cast<uint16_t>(v >> 16));
  append16(b, static_cast<uint16_t>(v));
}

void store16(Bytes &b, size_t at, uint16_t v) {
  b.at(at) = static_cast<uint8_t>(v >> 8);
  b.at(at + 1) = static_cast<uint8_t>(v);
}

Bytes concat(const Bytes &a, const Bytes &b) {
  Bytes out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

Bytes pattern_bytes(size_t n, uint8_t seed) {
  Bytes out(n);
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<uint8_t>(seed + i * 7 + (i >> 3));
  return out;
}

uint16_t internet_checksum(const Bytes &data, uint32_t initial) {
  uint64_t sum = initial;
  for (size_t i = 0; i < data.size(); i += 2) {
    const uint32_t hi = data[i];
    const uint32_t lo = i + 1 < data.size() ? data[i + 1] : 0;
    sum += (hi << 8) | lo;
  }
  while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum & 0xffff);
}

uint32_t pseudo_header_sum(const Bytes &src, const Bytes &dst, uint8_t proto, uint32_t length) {
  Bytes p = concat(src, dst);
  if (src.size() == 4) {
    p.push_back(0);
    p.push_back(proto);
    append16(p, static_cast<uint16_t>(length));
  } else {
    append32(p, length);
    p.insert(p.end(), {0, 0, 0, proto});
  }
  // Sum without the final complement: complement of the checksum of p.
  return static_cast<uint16_t>(~internet_checksum(p));
}

uint32_t reference_toeplitz(const uint8_t *key, size_t key_len, const Bytes &input) {
  auto key_bit = [&](size_t i) -> uint32_t {
    return i / 8 < key_len ? (key[i / 8] >> (7 - i % 8)) & 1u : 0u;
  };
  uint32_t hash = 0;
  for (size_t i = 0; i < input.size() * 8; ++i) {
    if (!((input[i / 8] >> (7 - i % 8)) & 1)) continue;
    uint32_t window = 0;
    for (size_t j = 0; j < 32; ++j) window = (window << 1) | key_bit(i + j);
    hash ^= window;
  }
  return hash;
}

Bytes tcp(const TcpSpec &spec) {
  Bytes options = spec.options;
  while (options.size() % 4) options.push_back(1); // NOP
  Bytes b;
  append16(b, spec.sport);
  append16(b, spec.dport);
  append32(b, spec.seq);
  append32(b, spec.ack);
  const int words = spec.data_offset_words >= 0 ? spec.data_offset_words
                                                : 5 + static_cast<int>(options.size() / 4);
  b.push_back(static_cast<uint8_t>(words << 4));
  b.push_back(spec.flags);
  append16(b, 65535); // window
  append16(b, 0);     // checksum
  append16(b, 0);     // urgent pointer
  b.insert(b.end(), options.begin(), options.end());
  b.insert(b.end(), spec.payload.begin(), spec.payload.end());
  return b;
}

Bytes udp(uint16_t sport, uint16_t dport, const Bytes &payload, int length_field) {
  Bytes b;
  append16(b, sport);
  append16(b, dport);
  append16(b, static_cast<uint16_t>(length_field >= 0 ? length_field : 8 + payload.size()));
  append16(b, 0);
  b.insert(b.end(), payload.begin(), payload.end());
  return b;
}

Bytes icmp(uint8_t type, uint8_t code, const Bytes &rest) {
  Bytes b{type, code, 0, 0};
  b.insert(b.end(), rest.begin(), rest.end());
  return b;
}

Bytes ipv4(const Ipv4Spec &spec, const Bytes &l4_in) {
  Bytes options = spec.options;
  while (options.size() % 4) options.push_back(0); // EOL
  const int ihl = spec.ihl_words >= 0 ? spec.ihl_words : 5 + static_cast<int>(options.size() / 4);
  const size_t real_header = 20 + options.size();
  const int total = spec.total_length >= 0 ? spec.total_length
                                           : static_cast<int>(real_header + l4_in.size());
  require(spec.frag_offset_bytes % 8 == 0, "IPv4 fragment offset must be a multiple of 8");

  Bytes l4 = l4_in;
  const uint32_t pseudo =
      spec.proto == kIcmp ? 0
                          : pseudo_header_sum(spec.src, spec.dst, spec.proto,
                                              static_cast<uint32_t>(l4.size()));
  write_l4_checksum(l4, spec.proto, pseudo, spec.l4_checksum);

  Bytes h;
  h.push_back(static_cast<uint8_t>((spec.version << 4) | (ihl & 0x0f)));
  h.push_back(0); // DSCP/ECN
  append16(h, static_cast<uint16_t>(total));
  append16(h, spec.id);
  uint16_t frag = static_cast<uint16_t>(spec.frag_offset_bytes / 8);
  if (spec.dont_fragment) frag |= 0x4000;
  if (spec.more_fragments) frag |= 0x2000;
  append16(h, frag);
  h.push_back(spec.ttl);
  h.push_back(spec.proto);
  append16(h, 0);
  h.insert(h.end(), spec.src.begin(), spec.src.end());
  h.insert(h.end(), spec.dst.begin(), spec.dst.end());
  h.insert(h.end(), options.begin(), options.end());
  uint16_t c = internet_checksum(h);
  if (spec.corrupt_header_checksum) c ^= 0x0101;
  store16(h, 10, c);
  return concat(h, l4);
}

namespace {

Ext options_header(uint8_t proto, size_t length) {
  require(length >= 8 && length % 8 == 0 && length <= 2048, "options header length");
  Ext e{proto, Bytes(length, 0)};
  e.bytes[1] = static_cast<uint8_t>(length / 8 - 1);
  // PadN options (at most 255 data bytes each) fill the header.
  size_t at = 2;
  while (at < length) {
    const size_t left = length - at;
    if (left == 1) break; // Pad1 (type 0) is already there
    const size_t data = left - 2 > 255 ? 255 : left - 2;
    e.bytes[at] = 1;
    e.bytes[at + 1] = static_cast<uint8_t>(data);
    at += 2 + data;
  }
  return e;
}

} // namespace

Ext hop_by_hop(size_t length) { return options_header(kHopByHop, length); }
Ext dest_options(size_t length) { return options_header(kDstOpts, length); }

Ext hop_by_hop_jumbo(uint32_t jumbo_length) {
  Ext e{kHopByHop, {0, 0, 0xc2, 4}};
  append32(e.bytes, jumbo_length);
  return e;
}

Ext routing_header(uint8_t type, uint8_t segments_left, const std::vector<Bytes> &addresses) {
  Ext e{kRouting, {0, static_cast<uint8_t>(2 * addresses.size()), type, segments_left, 0, 0, 0, 0}};
  if (type == 4 && !addresses.empty()) e.bytes[4] = static_cast<uint8_t>(addresses.size() - 1);
  for (const Bytes &a : addresses) {
    require(a.size() == 16, "routing header address must be IPv6");
    e.bytes.insert(e.bytes.end(), a.begin(), a.end());
  }
  return e;
}

Ext fragment_header(uint32_t offset_bytes, bool more, uint32_t id) {
  require(offset_bytes % 8 == 0 && offset_bytes < 65536, "IPv6 fragment offset");
  Ext e{kFragment, {0, 0}};
  append16(e.bytes, static_cast<uint16_t>(offset_bytes | (more ? 1 : 0)));
  append32(e.bytes, id);
  return e;
}

Ext auth_header(size_t icv_length) {
  const size_t total = 12 + icv_length;
  require(total % 8 == 0, "AH length must be a multiple of 8 in IPv6");
  Ext e{kAh, {0, static_cast<uint8_t>(total / 4 - 2), 0, 0}};
  append32(e.bytes, 0x00001000); // SPI
  append32(e.bytes, 7);          // sequence number
  const Bytes icv = pattern_bytes(icv_length, 0x3c);
  e.bytes.insert(e.bytes.end(), icv.begin(), icv.end());
  return e;
}

Bytes ipv6(const Ipv6Spec &spec, const Bytes &l4_in) {
  Bytes l4 = l4_in;
  const Bytes &pdst = spec.checksum_dst.empty() ? spec.dst : spec.checksum_dst;
  write_l4_checksum(l4, spec.proto,
                    pseudo_header_sum(spec.src, pdst, spec.proto, static_cast<uint32_t>(l4.size())),
                    spec.l4_checksum);

  Bytes chain;
  for (size_t i = 0; i < spec.exts.size(); ++i) {
    Bytes e = spec.exts[i].bytes;
    e[0] = i + 1 < spec.exts.size() ? spec.exts[i + 1].proto : spec.proto;
    chain.insert(chain.end(), e.begin(), e.end());
  }
  const Bytes payload = concat(chain, l4);
  Bytes h;
  h.push_back(static_cast<uint8_t>(spec.version << 4));
  h.insert(h.end(), {0, 0, 0});
  append16(h, static_cast<uint16_t>(spec.payload_length >= 0 ? spec.payload_length
                                                             : payload.size()));
  h.push_back(spec.exts.empty() ? spec.proto : spec.exts[0].proto);
  h.push_back(spec.hop_limit);
  h.insert(h.end(), spec.src.begin(), spec.src.end());
  h.insert(h.end(), spec.dst.begin(), spec.dst.end());
  return concat(h, payload);
}

Bytes ethernet(uint16_t ethertype, const Bytes &payload, const std::vector<VlanTag> &tags) {
  Bytes b{0x00, 0x1b, 0x21, 0x0a, 0x0b, 0x0c, 0x02, 0x42, 0xac, 0x11, 0x00, 0x02};
  for (const VlanTag &t : tags) {
    append16(b, t.tpid);
    append16(b, t.tci);
  }
  append16(b, ethertype);
  return concat(b, payload);
}

Bytes mpls_ethernet(const std::vector<uint32_t> &labels, const Bytes &payload) {
  Bytes stack;
  for (size_t i = 0; i < labels.size(); ++i) {
    const uint32_t bottom = i + 1 == labels.size() ? 1 : 0;
    append32(stack, (labels[i] << 12) | (5u << 9) | (bottom << 8) | 64u);
  }
  return ethernet(kEthMpls, concat(stack, payload));
}

Bytes linux_sll(uint16_t protocol, const Bytes &payload) {
  Bytes b;
  append16(b, 0);      // packet type: to us
  append16(b, 1);      // ARPHRD_ETHER
  append16(b, 6);      // address length
  b.insert(b.end(), {0x02, 0x42, 0xac, 0x11, 0x00, 0x02, 0, 0});
  append16(b, protocol);
  return concat(b, payload);
}

Bytes linux_sll2(uint16_t protocol, const Bytes &payload) {
  Bytes b;
  append16(b, protocol);
  append16(b, 0);      // reserved
  append32(b, 3);      // interface index
  append16(b, 1);      // ARPHRD_ETHER
  b.push_back(4);      // packet type: outgoing
  b.push_back(6);      // address length
  b.insert(b.end(), {0x02, 0x42, 0xac, 0x11, 0x00, 0x02, 0, 0});
  return concat(b, payload);
}

Bytes loopback(uint32_t family, bool little_endian, const Bytes &payload) {
  Bytes b;
  if (little_endian) {
    for (int i = 0; i < 4; ++i) b.push_back(static_cast<uint8_t>(family >> (8 * i)));
  } else {
    append32(b, family);
  }
  return concat(b, payload);
}

Bytes vxlan(uint32_t vni, const Bytes &inner) {
  Bytes b{0x08, 0, 0, 0};
  append32(b, vni << 8);
  return concat(b, inner);
}

Bytes geneve(const GeneveSpec &spec, const Bytes &inner) {
  Bytes b{static_cast<uint8_t>((spec.version << 6) | (spec.option_words & 0x3f)), 0};
  append16(b, spec.protocol);
  append32(b, spec.vni << 8);
  if (spec.option_words) { // one option: class, type, length (of its data, in words)
    append16(b, 0x0102);
    b.push_back(0x03);
    b.push_back(static_cast<uint8_t>(spec.option_words - 1));
    const Bytes data = pattern_bytes(4u * (spec.option_words - 1), 0x51);
    b.insert(b.end(), data.begin(), data.end());
  }
  return concat(b, inner);
}

Bytes gre(const GreSpec &spec, const Bytes &inner) {
  Bytes b{static_cast<uint8_t>((spec.checksum ? 0x80 : 0) | (spec.routing ? 0x40 : 0) |
                               (spec.key ? 0x20 : 0) | (spec.sequence ? 0x10 : 0)),
          static_cast<uint8_t>(spec.version & 0x07)};
  append16(b, spec.protocol);
  const size_t checksum_at = b.size();
  if (spec.checksum || spec.routing) append32(b, 0); // checksum and offset
  if (spec.key) append32(b, spec.key_value);
  if (spec.sequence) append32(b, spec.sequence_value);
  Bytes out = concat(b, inner);
  if (spec.checksum) store16(out, checksum_at, internet_checksum(out));
  return out;
}

Bytes erspan2(uint16_t session, const Bytes &frame, uint8_t version) {
  Bytes b;
  append16(b, static_cast<uint16_t>((version << 12) | 100)); // VLAN 100
  append16(b, static_cast<uint16_t>(session & 0x3ff));
  append32(b, 7); // index
  return concat(b, frame);
}

Bytes erspan3(uint16_t session, const Bytes &frame, bool platform_header, uint8_t version) {
  Bytes b;
  append16(b, static_cast<uint16_t>((version << 12) | 100));
  append16(b, static_cast<uint16_t>(session & 0x3ff));
  append32(b, 0x5eed1234); // timestamp
  append16(b, 0);          // security group tag
  append16(b, platform_header ? 1 : 0); // ..., O
  if (platform_header) {
    append32(b, 0x0c000000); // platform id 3
    append32(b, 0x00000042);
  }
  return concat(b, frame);
}

Bytes gtp(const GtpSpec &spec, const Bytes &inner) {
  Bytes ext;
  for (size_t i = 0; i < spec.extensions.size(); ++i) {
    const Bytes &c = spec.extensions[i].content;
    require((c.size() + 2) % 4 == 0, "GTP extension content must be 4n - 2 bytes");
    ext.push_back(static_cast<uint8_t>((c.size() + 2) / 4));
    ext.insert(ext.end(), c.begin(), c.end());
    ext.push_back(i + 1 < spec.extensions.size() ? spec.extensions[i + 1].type : 0);
  }
  const bool optional = spec.sequence || !spec.extensions.empty();
  Bytes b{static_cast<uint8_t>(spec.flags | (spec.sequence ? 0x02 : 0) |
                               (spec.extensions.empty() ? 0 : 0x04)),
          spec.message_type};
  append16(b, static_cast<uint16_t>((optional ? 4 : 0) + ext.size() + inner.size()));
  append32(b, spec.teid);
  if (optional) {
    append16(b, 0x0102); // sequence number
    b.push_back(0);      // N-PDU number
    b.push_back(spec.extensions.empty() ? 0 : spec.extensions[0].type);
  }
  return concat(concat(b, ext), inner);
}

Bytes teredo(const TeredoSpec &spec, const Bytes &ipv6_packet) {
  Bytes b;
  if (spec.auth) {
    append16(b, 0x0001);
    b.push_back(spec.id_length);
    b.push_back(spec.auth_length);
    const Bytes ids = pattern_bytes(spec.id_length + spec.auth_length + 8u, 0x7a); // + nonce
    b.insert(b.end(), ids.begin(), ids.end());
    b.push_back(0); // confirmation
  }
  if (spec.origin) {
    append16(b, 0x0000);
    append16(b, static_cast<uint16_t>(~40000)); // obfuscated port and address
    append32(b, ~0xc0000201u);
  }
  return concat(b, ipv6_packet);
}

Bytes pppoe_session(uint16_t session, uint16_t ppp_protocol, const Bytes &inner, int length_field) {
  Bytes b{0x11, 0x00};
  append16(b, session);
  append16(b, static_cast<uint16_t>(length_field >= 0 ? length_field : 2 + inner.size()));
  append16(b, ppp_protocol);
  return concat(b, inner);
}

Bytes pbb_itag(uint32_t isid, const Bytes &customer_frame) {
  Bytes b;
  append32(b, isid & 0xffffff);
  return concat(b, customer_frame);
}

Bytes vntag(uint16_t dst_vif, uint16_t ethertype, const Bytes &inner) {
  Bytes b;
  append16(b, static_cast<uint16_t>(dst_vif & 0x3fff));
  append16(b, 0x0005); // source VIF
  append16(b, ethertype);
  return concat(b, inner);
}

Bytes etag(uint16_t ecid_base, uint8_t ecid_ext, uint16_t ethertype, const Bytes &inner) {
  Bytes b;
  append16(b, 0x2000);                                     // E-PCP 1, ingress E-CID base 0
  append16(b, static_cast<uint16_t>(ecid_base & 0x0fff));  // GRP 0, E-CID base
  b.push_back(0);                                          // ingress E-CID ext
  b.push_back(ecid_ext);
  append16(b, ethertype);
  return concat(b, inner);
}

} // namespace gpptest
