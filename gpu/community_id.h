// Community ID v1 (corelight/community-id-spec), the flow hash Zeek,
// Suricata, Wireshark and others print, so one conversation can be looked up
// across tools: "1:" + base64 (SHA-1 (seed, addresses, protocol, 0, ports)),
// with the endpoints ordered so both directions give the same ID.  Computed
// from a result record alone: CPU and GPU records are byte-identical, and so
// are their Community IDs.  Shared by CPU and GPU code.
//
// What goes into the hash:
// - TCP, UDP, SCTP: the ports.  ICMP / ICMPv6: type and code, or for a
//   request/reply pair (echo, router or neighbor discovery...) the type and
//   its counterpart, so both directions share an ID; other ICMP types are
//   one-way (the endpoints are not reordered).
// - Anything else, and packets whose ports were not read (non-first
//   fragments, a truncated header): addresses and protocol only.
// - Packets without a parsed IP header have no Community ID.
#pragma once

#include <stdint.h>

#include <gpupacket/packet-result.h>

#include "host_device.h"
#include "packet_core.h"

namespace gpp {

constexpr int kCommunityIdDigestBytes = 20;
// The spec's default seed: the elements' community-id-seed default.
constexpr uint16_t kDefaultCommunityIdSeed = 0;
// "1:" + 28 base64 characters + NUL.
constexpr int kCommunityIdTextBytes = 2 + 28 + 1;

GPP_HOST_DEVICE inline uint32_t sha1_rotl(uint32_t x, int n) { return (x << n) | (x >> (32 - n)); }

// SHA-1 (FIPS 180-4) of a message of at most 55 bytes: one padded block.
GPP_HOST_DEVICE inline void sha1_short(const uint8_t *msg, uint32_t len, uint8_t out[20]) {
  uint8_t block[64] = {};
  for (uint32_t i = 0; i < len; ++i) block[i] = msg[i];
  block[len] = 0x80;
  const uint64_t bits = static_cast<uint64_t>(len) * 8;
  for (int i = 0; i < 8; ++i) block[63 - i] = static_cast<uint8_t>(bits >> (8 * i));
  uint32_t w[80];
  for (int i = 0; i < 16; ++i)
    w[i] = (uint32_t(block[4 * i]) << 24) | (uint32_t(block[4 * i + 1]) << 16) |
           (uint32_t(block[4 * i + 2]) << 8) | block[4 * i + 3];
  for (int i = 16; i < 80; ++i) w[i] = sha1_rotl(w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
  const uint32_t h0 = 0x67452301, h1 = 0xefcdab89, h2 = 0x98badcfe, h3 = 0x10325476,
                 h4 = 0xc3d2e1f0;
  uint32_t a = h0, b = h1, c = h2, d = h3, e = h4;
  for (int i = 0; i < 80; ++i) {
    uint32_t f, k;
    if (i < 20) {
      f = (b & c) | (~b & d);
      k = 0x5a827999;
    } else if (i < 40) {
      f = b ^ c ^ d;
      k = 0x6ed9eba1;
    } else if (i < 60) {
      f = (b & c) | (b & d) | (c & d);
      k = 0x8f1bbcdc;
    } else {
      f = b ^ c ^ d;
      k = 0xca62c1d6;
    }
    const uint32_t t = sha1_rotl(a, 5) + f + e + k + w[i];
    e = d;
    d = c;
    c = sha1_rotl(b, 30);
    b = a;
    a = t;
  }
  const uint32_t h[5] = {h0 + a, h1 + b, h2 + c, h3 + d, h4 + e};
  for (int i = 0; i < 5; ++i)
    for (int j = 0; j < 4; ++j) out[4 * i + j] = static_cast<uint8_t>(h[i] >> (24 - 8 * j));
}

// The counterpart of an ICMP / ICMPv6 request or reply type, or -1 when the
// type has none (then the ID is one-way).  The spec's table.
GPP_HOST_DEVICE inline int community_id_icmp_counterpart(uint8_t type, bool v6) {
  if (!v6) {
    switch (type) {
      case 8: return 0;   // echo request / reply
      case 0: return 8;
      case 13: return 14; // timestamp
      case 14: return 13;
      case 15: return 16; // information
      case 16: return 15;
      case 10: return 9;  // router solicitation / advertisement
      case 9: return 10;
      case 17: return 18; // address mask
      case 18: return 17;
      default: return -1;
    }
  }
  switch (type) {
    case 128: return 129; // echo request / reply
    case 129: return 128;
    case 133: return 134; // router solicitation / advertisement
    case 134: return 133;
    case 135: return 136; // neighbor solicitation / advertisement
    case 136: return 135;
    case 130: return 131; // multicast listener query / report
    case 131: return 130;
    case 139: return 140; // node information query / response
    case 140: return 139;
    case 144: return 145; // home agent address discovery request / reply
    case 145: return 144;
    default: return -1;
  }
}

// The SHA-1 digest of a record's Community ID with `seed`; false when the
// record has none (no IP header parsed).
GPP_HOST_DEVICE inline bool community_id_digest(const GppResult &r, uint16_t seed,
                                                uint8_t out[kCommunityIdDigestBytes]) {
  if (!(r.ip_flags & GPP_IP_HEADER_PARSED) || (r.ip_version != 4 && r.ip_version != 6))
    return false;
  const int addr_len = r.ip_version == 4 ? 4 : 16;
  const uint8_t proto = r.l4_proto;
  const bool l4 = (r.ip_flags & GPP_IP_L4_PARSED) != 0;
  bool ports = false, one_way = false;
  uint16_t sport = 0, dport = 0;
  if (l4 && (proto == 6 || proto == 17 || proto == 132)) {
    ports = true;
    sport = r.sport;
    dport = r.dport;
  } else if (l4 && (proto == 1 || proto == 58)) {
    ports = true;
    const int counterpart = community_id_icmp_counterpart(r.icmp_type, proto == 58);
    sport = r.icmp_type;
    dport = counterpart >= 0 ? static_cast<uint16_t>(counterpart) : r.icmp_code;
    one_way = counterpart < 0;
  }
  const uint8_t *a = r.src, *b = r.dst;
  if (!one_way) detail::order_endpoints(a, sport, b, dport, addr_len); // port-less: ports 0
  uint8_t msg[2 + 16 + 16 + 2 + 4];
  uint32_t n = 0;
  msg[n++] = static_cast<uint8_t>(seed >> 8);
  msg[n++] = static_cast<uint8_t>(seed);
  for (int i = 0; i < addr_len; ++i) msg[n++] = a[i];
  for (int i = 0; i < addr_len; ++i) msg[n++] = b[i];
  msg[n++] = proto;
  msg[n++] = 0; // padding
  if (ports) {
    msg[n++] = static_cast<uint8_t>(sport >> 8);
    msg[n++] = static_cast<uint8_t>(sport);
    msg[n++] = static_cast<uint8_t>(dport >> 8);
    msg[n++] = static_cast<uint8_t>(dport);
  }
  sha1_short(msg, n, out);
  return true;
}

// "1:" + base64 of the digest, NUL-terminated, into `text`
// (kCommunityIdTextBytes).
GPP_HOST_DEVICE inline void community_id_text(const uint8_t digest[kCommunityIdDigestBytes],
                                              char text[kCommunityIdTextBytes]) {
  const char *alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  int n = 0;
  text[n++] = '1';
  text[n++] = ':';
  for (int i = 0; i < kCommunityIdDigestBytes; i += 3) {
    const uint32_t v = (uint32_t(digest[i]) << 16) |
                       (i + 1 < kCommunityIdDigestBytes ? uint32_t(digest[i + 1]) << 8 : 0) |
                       (i + 2 < kCommunityIdDigestBytes ? uint32_t(digest[i + 2]) : 0);
    text[n++] = alphabet[(v >> 18) & 63];
    text[n++] = alphabet[(v >> 12) & 63];
    text[n++] = i + 1 < kCommunityIdDigestBytes ? alphabet[(v >> 6) & 63] : '=';
    text[n++] = i + 2 < kCommunityIdDigestBytes ? alphabet[v & 63] : '=';
  }
  text[n] = '\0';
}

} // namespace gpp
