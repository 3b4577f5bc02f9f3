// The per-packet core: parse, validate, checksum and RSS-hash one packet into a
// GppResult.  This one header is compiled by g++ for the CPU engine and by nvcc
// for the GPU kernels, so both produce byte-identical records.  Rules for code
// in here: no allocation, no exceptions, no printf, no reads at or past caplen.
#pragma once

#include <stdint.h>
#include <string.h>

#include <gpupacket/packet-batch.h>
#include <gpupacket/packet-result.h>

#include "acl.h"
#include "dpi.h"
#include "host_device.h"

namespace gpp {

constexpr int kRssKeySize = 40;

// What the core needs to know besides the packet.  Plain bytes so it can be
// copied to the device as a kernel argument.
struct CoreConfig {
  uint8_t rss_key[kRssKeySize];
  uint8_t symmetric_rss;      // hash both directions of a flow alike
  uint8_t verify_l4_checksum; // TCP/UDP/ICMP/ICMPv6 checksum verification
  uint8_t acl_default_action; // GPP_ACL_* for packets no rule matches
  const uint8_t *acl;         // ACL blob (acl.h) in memory the executor reads, or nullptr
  const uint8_t *dpi;         // DPI blob (dpi.h) likewise, or nullptr
  uint8_t decap;              // 1: walk into tunnels (gpupacketproc decap=inner) when given a GppTunnelInfo
  uint16_t vxlan_ports[2];    // UDP destination ports taken as VXLAN; 0 = unused
};

// VXLAN's IANA port (RFC 7348); Linux's vxlan device used 8472 before it existed.
constexpr uint16_t kVxlanPort = 4789;

// Bytes of the results of `count` packets: their GppResult records, and with
// cfg.decap their GppTunnelInfo plane after them (packet-result.h).
GPP_HOST_DEVICE inline size_t results_bytes(uint32_t count, const CoreConfig &cfg) {
  return static_cast<size_t>(count) *
         (cfg.decap ? GPP_RESULTS_RECORD_SIZE_TUNNELS : GPP_RESULTS_RECORD_SIZE);
}

// The GppTunnelInfo plane of the results of `count` packets (with cfg.decap).
GPP_HOST_DEVICE inline GppTunnelInfo *tunnel_plane(GppResult *results, uint32_t count) {
  return reinterpret_cast<GppTunnelInfo *>(results + count);
}
GPP_HOST_DEVICE inline const GppTunnelInfo *tunnel_plane(const GppResult *results, uint32_t count) {
  return reinterpret_cast<const GppTunnelInfo *>(results + count);
}


// The key of the Intel 82599 / Microsoft RSS verification suite, used by most
// NIC drivers as their default (../shared/data/rss/toeplitz_vectors.csv).
constexpr uint8_t kDefaultRssKey[kRssKeySize] = {
    0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
    0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
    0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};

// Link types process_packet() parses; any other yields an all-empty record.
GPP_HOST_DEVICE constexpr bool linktype_supported(uint32_t linktype) {
  switch (linktype) {
  case GPP_LINKTYPE_NULL:
  case GPP_LINKTYPE_ETHERNET:
  case GPP_LINKTYPE_RAW:
  case GPP_LINKTYPE_LOOP:
  case GPP_LINKTYPE_LINUX_SLL:
  case GPP_LINKTYPE_IPV4:
  case GPP_LINKTYPE_IPV6:
  case GPP_LINKTYPE_LINUX_SLL2:
    return true;
  default:
    return false;
  }
}

// The same link types with names, for caps and messages (host code; the
// switch above is what the kernels use).  The checks below keep the two the
// same set.
struct ParsedLinktype {
  uint32_t linktype;
  const char *name;
};
inline constexpr ParsedLinktype kParsedLinktypes[] = {
    {GPP_LINKTYPE_NULL, "BSD loopback"},   {GPP_LINKTYPE_ETHERNET, "Ethernet"},
    {GPP_LINKTYPE_RAW, "raw IP"},          {GPP_LINKTYPE_LOOP, "OpenBSD loopback"},
    {GPP_LINKTYPE_LINUX_SLL, "Linux SLL"}, {GPP_LINKTYPE_IPV4, "IPv4"},
    {GPP_LINKTYPE_IPV6, "IPv6"},           {GPP_LINKTYPE_LINUX_SLL2, "Linux SLL2"},
};
constexpr bool parsed_linktypes_agree() {
  size_t supported = 0;
  for (uint32_t lt = 0; lt < 1024; ++lt) supported += linktype_supported(lt);
  for (const ParsedLinktype &l : kParsedLinktypes)
    if (!linktype_supported(l.linktype)) return false;
  return supported == sizeof kParsedLinktypes / sizeof kParsedLinktypes[0];
}
static_assert(parsed_linktypes_agree(), "kParsedLinktypes lists what linktype_supported accepts");

namespace detail {

constexpr uint16_t kEthertypeIPv4 = 0x0800;
constexpr uint16_t kEthertypeIPv6 = 0x86dd;
constexpr uint16_t kEthertypeVlan = 0x8100;
constexpr uint16_t kEthertypeQinQ = 0x88a8;
constexpr uint16_t kEthertypeQinQOld = 0x9100;
constexpr uint16_t kEthertypeMplsUnicast = 0x8847;
constexpr uint16_t kEthertypeMplsMulticast = 0x8848;
constexpr uint16_t kMinEthertype = 0x0600; // smaller values are 802.3 lengths
constexpr int kMaxMplsLabels = 16;
// Encapsulations the tunnel walk opens (decap=inner).
constexpr uint16_t kEthertypeTeb = 0x6558;         // transparent Ethernet bridging (GRE, GENEVE)
constexpr uint16_t kEthertypeErspan12 = 0x88be;    // ERSPAN type I (no GRE sequence) and II
constexpr uint16_t kEthertypeErspan3 = 0x22eb;
constexpr uint16_t kEthertypePppoeSession = 0x8864;
constexpr uint16_t kEthertypePbb = 0x88e7;
constexpr uint16_t kEthertypeVnTag = 0x8926;
constexpr uint16_t kEthertypeETag = 0x893f;
constexpr uint16_t kPortGeneve = 6081;
constexpr uint16_t kPortGtpU = 2152;
constexpr uint16_t kPortTeredo = 3544;
constexpr uint16_t kPortGreInUdp = 4754;
constexpr int kMaxGtpExtensionHeaders = 8;

constexpr uint8_t kProtoHopByHop = 0;
constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoIpInIp = 4;
constexpr uint8_t kProtoIpv6InIp = 41;
constexpr uint8_t kProtoGre = 47;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoRouting = 43;
constexpr uint8_t kProtoFragment = 44;
constexpr uint8_t kProtoAh = 51;
constexpr uint8_t kProtoIcmpv6 = 58;
constexpr uint8_t kProtoDstOpts = 60;
constexpr uint8_t kProtoSctp = 132;

GPP_HOST_DEVICE inline uint16_t load_be16(const uint8_t *p) {
  return static_cast<uint16_t>((p[0] << 8) | p[1]);
}

GPP_HOST_DEVICE inline uint32_t load_be24(const uint8_t *p) {
  return (static_cast<uint32_t>(p[0]) << 16) | (static_cast<uint32_t>(p[1]) << 8) | p[2];
}

GPP_HOST_DEVICE inline uint32_t load_be32(const uint8_t *p) {
  return (static_cast<uint32_t>(p[0]) << 24) | (static_cast<uint32_t>(p[1]) << 16) |
         (static_cast<uint32_t>(p[2]) << 8) | p[3];
}

GPP_HOST_DEVICE inline void copy_bytes(uint8_t *dst, const uint8_t *src, int n) {
#ifdef __CUDA_ARCH__
  for (int i = 0; i < n; ++i) dst[i] = src[i];
#else
  memcpy(dst, src, static_cast<size_t>(n)); // a byte loop: uint8_t may alias anything
#endif
}

// One's-complement sum of n bytes as big-endian 16-bit words, one at a time
// (a last odd byte is a word's high byte), not yet folded.
GPP_HOST_DEVICE inline uint32_t ones_sum_by_halfwords(const uint8_t *p, uint32_t n, uint32_t sum) {
  uint32_t i = 0;
  for (; i + 1 < n; i += 2) sum += load_be16(p + i);
  if (i < n) sum += static_cast<uint32_t>(p[i]) << 8;
  return sum;
}

// One's-complement sum of n bytes (big-endian 16-bit words), not yet folded.
// It adds native little-endian words, 32 bits at a time, and swaps the folded
// sum once: the one's-complement sum does not depend on byte order (RFC 1071
// 2(B)).  The GPU loads only aligned words: from an odd address it adds
// bytes.
GPP_HOST_DEVICE inline uint32_t ones_sum(const uint8_t *p, uint32_t n, uint32_t sum) {
#if defined(__CUDA_ARCH__) || __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t wide = 0;
  uint32_t i = 0;
#ifdef __CUDA_ARCH__
  const uintptr_t address = reinterpret_cast<uintptr_t>(p);
  if (address & 1) return ones_sum_by_halfwords(p, n, sum);
  if ((address & 2) && n >= 2) {
    wide += *reinterpret_cast<const uint16_t *>(p);
    i = 2;
  }
  for (; i + 4 <= n; i += 4) wide += *reinterpret_cast<const uint32_t *>(p + i);
  if (i + 2 <= n) {
    wide += *reinterpret_cast<const uint16_t *>(p + i);
    i += 2;
  }
  if (i < n) wide += p[i]; // the high byte of a big-endian word
#else
  // Eight bytes an add, the carry out of bit 63 added back (end-around):
  // the sum stays the same modulo 2^64 - 1, of which 2^16 - 1 is a divisor.
  for (; i + 8 <= n; i += 8) {
    uint64_t word;
    memcpy(&word, p + i, 8);
    wide += word;
    wide += wide < word;
  }
  uint64_t tail = 0; // at most 2^32 + 2^16 + 2^8: no carry out with the sum
  if (i + 4 <= n) {
    uint32_t word;
    memcpy(&word, p + i, 4);
    tail = word;
    i += 4;
  }
  if (i + 2 <= n) {
    uint16_t half;
    memcpy(&half, p + i, 2);
    tail += half;
    i += 2;
  }
  if (i < n) tail += p[i]; // the high byte of a big-endian word
  wide = (wide >> 32) + (wide & 0xffffffffu) + tail; // below 2^34
#endif
  wide = (wide >> 32) + (wide & 0xffffffffu); // at most 2^32 + 2
  wide = (wide >> 32) + (wide & 0xffffffffu); // below 2^32
  uint32_t folded = static_cast<uint32_t>((wide >> 16) + (wide & 0xffff));
  folded = (folded >> 16) + (folded & 0xffff);
  return sum + (((folded & 0xff) << 8) | (folded >> 8));
#else
  return ones_sum_by_halfwords(p, n, sum);
#endif
}

GPP_HOST_DEVICE inline uint16_t fold_sum(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(sum);
}

// A header of `need` bytes at `end - need` is missing: was it cut by the
// capture (truncated) or is the packet itself too short (malformed)?
GPP_HOST_DEVICE inline uint32_t short_header_flag(uint32_t end, uint32_t wirelen,
                                                  uint32_t malformed_flag) {
  return end > wirelen ? malformed_flag : static_cast<uint32_t>(GPP_STATUS_TRUNCATED);
}

GPP_HOST_DEVICE inline bool is_ipv6_extension(uint8_t proto) {
  return proto == kProtoHopByHop || proto == kProtoRouting || proto == kProtoFragment ||
         proto == kProtoDstOpts || proto == kProtoAh;
}

struct Packet {
  const uint8_t *bytes;
  uint32_t caplen;
  uint32_t wirelen;
};

// Where an IP layer's payload lies, for the tunnel walk (IP-in-IP and GRE
// have no header parse_l4 reads).
struct IpPayload {
  uint32_t offset = 0; // first byte after the IP header and IPv6 extension headers
  uint32_t end = 0;    // end of the datagram by its IP header
  bool reached = false; // the parse got to the payload (not a later fragment, nothing broken)
};

// Where the IP layer says the upper layer lives, for checksums.
struct L4Span {
  uint32_t offset;             // first byte of the L4 header
  uint32_t ip_length;          // L4 bytes the IP header declares
  bool is_fragment;            // part of a larger datagram: the L4 header may be cut
  bool checksum_verifiable;    // a whole datagram (IPv6 atomic fragments are)
  const uint8_t *pseudo_src;   // IPv6: Home Address option if any, else nullptr
  const uint8_t *pseudo_dst;   // IPv6: final routing-header address if any, else nullptr
  bool in_walk;                // decap=inner: a UDP checksum may wait (kChecksumDeferred)
};

// Walking tunnels, a level's IPv4 header and UDP checksums wait in the record
// as this value until the walk knows no tunnel opens below it: a carrier's
// fields are replaced by its inner packet's, so its checksums would be summed
// for nothing (verify_deferred_checksums()).  Never left in a record.
constexpr uint8_t kChecksumDeferred = 0xfe;

GPP_HOST_DEVICE inline uint8_t ipv4_header_checksum(const uint8_t *ip, uint32_t header_len) {
  return fold_sum(ones_sum(ip, header_len, 0)) == 0xffff ? GPP_CHECKSUM_GOOD : GPP_CHECKSUM_BAD;
}

GPP_HOST_DEVICE inline uint32_t pseudo_header_sum(const GppResult &r, const L4Span &span,
                                                  uint32_t l4_length) {
  uint32_t sum = 0;
  if (r.ip_version == 4) {
    sum = ones_sum(r.src, 4, sum);
    sum = ones_sum(r.dst, 4, sum);
  } else {
    sum = ones_sum(span.pseudo_src ? span.pseudo_src : r.src, 16, sum);
    sum = ones_sum(span.pseudo_dst ? span.pseudo_dst : r.dst, 16, sum);
    sum += l4_length >> 16;
  }
  sum += l4_length & 0xffff;
  sum += r.l4_proto;
  return sum;
}

// Verifies the TCP/UDP/ICMP/ICMPv6 checksum over `length` bytes when the
// whole segment was captured; otherwise it stays unverified.
GPP_HOST_DEVICE inline uint8_t l4_checksum_status(const Packet &pkt, const GppResult &r,
                                                  const L4Span &span, uint32_t length) {
  if (!span.checksum_verifiable || span.offset + length > pkt.caplen)
    return GPP_CHECKSUM_UNVERIFIED;
  const bool pseudo = !(r.l4_proto == kProtoIcmp && r.ip_version == 4);
  uint32_t sum = pseudo ? pseudo_header_sum(r, span, length) : 0;
  sum = ones_sum(pkt.bytes + span.offset, length, sum);
  return fold_sum(sum) == 0xffff ? GPP_CHECKSUM_GOOD : GPP_CHECKSUM_BAD;
}

// Ports (TCP/UDP/SCTP) or type and code (ICMP) are read as soon as their
// bytes are there, as tcpdump and Wireshark do; the rest of the header, the
// checksum and the payload need the whole header.  Of SCTP only the ports are
// read (flows and Community ID need them; its CRC32c and chunks are not
// checked).
GPP_HOST_DEVICE inline void parse_l4(const Packet &pkt, const CoreConfig &cfg,
                                     const L4Span &span, uint32_t ip_end, GppResult &r) {
  const uint8_t proto = r.l4_proto;
  uint32_t header_len;
  if (proto == kProtoTcp) header_len = 20;
  else if (proto == kProtoUdp) header_len = 8;
  else if (proto == kProtoIcmp || proto == kProtoIcmpv6) header_len = 4;
  else if (proto == kProtoSctp) header_len = 4;
  else return; // no header we read: protocol number only

  const uint32_t off = span.offset;
  const bool ports = proto == kProtoTcp || proto == kProtoUdp || proto == kProtoSctp;
  const uint32_t first_fields = ports ? 4 : 2;
  // A first fragment may legally end inside the L4 header; anything else is malformed.
  const uint32_t malformed = span.is_fragment ? 0u : static_cast<uint32_t>(GPP_STATUS_BAD_L4_HEADER);
  r.l4_offset = off;
  if (span.ip_length < first_fields) {
    r.status |= malformed;
    return;
  }
  if (off + first_fields > pkt.caplen) {
    r.status |= GPP_STATUS_TRUNCATED;
    return;
  }
  const uint8_t *h = pkt.bytes + off;
  r.ip_flags |= GPP_IP_L4_PARSED;
  if (ports) {
    r.sport = load_be16(h);
    r.dport = load_be16(h + 2);
    if (proto == kProtoSctp) return;
  } else {
    r.icmp_type = h[0];
    r.icmp_code = h[1];
  }
  if (span.ip_length < header_len) {
    r.status |= malformed;
    return;
  }
  if (off + header_len > pkt.caplen) {
    r.status |= GPP_STATUS_TRUNCATED;
    return;
  }
  r.l4_checksum = GPP_CHECKSUM_UNVERIFIED;
  uint32_t checked_length = span.ip_length;
  uint32_t l4_header_len = header_len;
  if (proto == kProtoTcp) {
    r.tcp_flags = h[13];
    l4_header_len = (h[12] >> 4) * 4u;
    if (l4_header_len < 20) {
      r.status |= GPP_STATUS_BAD_L4_HEADER;
      return;
    }
    if (l4_header_len > span.ip_length) { // options may go on in the next fragment
      r.status |= malformed;
      return;
    }
    if (off + l4_header_len > pkt.caplen) r.status |= GPP_STATUS_TRUNCATED; // cut in the options
  } else if (proto == kProtoUdp) {
    const uint32_t udp_length = load_be16(h + 4);
    // IPv6 jumbograms carry UDP length 0 (RFC 2675): the IP length rules.
    const bool jumbo = udp_length == 0 && r.ip_version == 6 && span.ip_length > 0xffff;
    if (!jumbo) {
      // A first fragment holds only part of the datagram the length covers.
      if (udp_length < 8 || (udp_length > span.ip_length && !span.is_fragment)) {
        r.status |= GPP_STATUS_BAD_L4_HEADER;
        return;
      }
      checked_length = udp_length;
    }
    if (r.ip_version == 4 && load_be16(h + 6) == 0) r.l4_checksum = GPP_CHECKSUM_NONE;
  }
  const uint32_t payload_offset = off + l4_header_len;
  uint32_t data_end = ip_end < pkt.caplen ? ip_end : pkt.caplen;
  if (proto == kProtoUdp && off + checked_length < data_end) data_end = off + checked_length;
  if (proto == kProtoTcp || proto == kProtoUdp) {
    r.payload_offset = payload_offset;
    r.payload_length = data_end > payload_offset ? data_end - payload_offset : 0;
  }
  if (cfg.verify_l4_checksum && r.l4_checksum == GPP_CHECKSUM_UNVERIFIED) {
    // A tunnel carrier's UDP checksum waits (kChecksumDeferred) where it can
    // be summed again from the record alone: the UDP length and no IPv6
    // pseudo-header addresses of its own.
    const bool can_wait = span.in_walk && proto == kProtoUdp && checked_length == load_be16(h + 4) &&
                          !span.pseudo_src && !span.pseudo_dst && span.checksum_verifiable &&
                          off + checked_length <= pkt.caplen;
    r.l4_checksum = can_wait ? kChecksumDeferred : l4_checksum_status(pkt, r, span, checked_length);
  }
}

// IPv4 options must be well-formed TLVs that fill the header; a few have a
// fixed length (RFC 791 / 1108 / 2113), which Wireshark checks too.
GPP_HOST_DEVICE inline bool ipv4_options_valid(const uint8_t *ip, uint32_t header_len) {
  uint32_t i = 20;
  while (i < header_len) {
    const uint8_t type = ip[i];
    if (type == 0) return true; // End of Option List
    if (type == 1) {            // No Operation
      ++i;
      continue;
    }
    if (i + 2 > header_len) return false;
    const uint32_t len = ip[i + 1];
    if (len < 2 || i + len > header_len) return false;
    if ((type == 130 && len != 11) || (type == 136 && len != 4) || (type == 148 && len != 4))
      return false;
    i += len;
  }
  return true;
}

GPP_HOST_DEVICE inline void parse_ipv4(const Packet &pkt, const CoreConfig &cfg, uint32_t off,
                                       GppResult &r, IpPayload *payload) {
  const uint8_t *ip = pkt.bytes + off;
  if ((ip[0] >> 4) != 4) {
    r.status |= GPP_STATUS_BAD_IP_VERSION;
    return;
  }
  r.ip_version = 4;
  if (off + 20 > pkt.caplen) {
    r.status |= short_header_flag(off + 20, pkt.wirelen, GPP_STATUS_BAD_IP_LENGTH);
    return;
  }
  const uint32_t header_len = (ip[0] & 0x0f) * 4u;
  if (header_len < 20) {
    r.status |= GPP_STATUS_BAD_IHL;
    return; // no field of a header this broken can be trusted
  }
  const uint32_t total_len = load_be16(ip + 2);
  const uint16_t frag = load_be16(ip + 6);
  r.ip_flags |= GPP_IP_HEADER_PARSED;
  r.ip_length = total_len;
  r.ttl = ip[8];
  r.l4_proto = ip[9];
  copy_bytes(r.src, ip + 12, 4);
  copy_bytes(r.dst, ip + 16, 4);
  r.frag_offset = static_cast<uint16_t>((frag & 0x1fff) * 8u);
  if (frag & 0x4000) r.ip_flags |= GPP_IP_DONT_FRAGMENT;
  if (frag & 0x2000) r.ip_flags |= GPP_IP_MORE_FRAGMENTS;
  const bool is_fragment = (frag & 0x3fff) != 0;
  if (is_fragment) r.ip_flags |= GPP_IP_FRAGMENT;
  if (off + header_len > pkt.caplen) {
    r.ipv4_checksum = GPP_CHECKSUM_UNVERIFIED;
    r.status |= short_header_flag(off + header_len, pkt.wirelen, GPP_STATUS_BAD_IP_LENGTH);
    return;
  }
  r.ipv4_checksum = payload ? kChecksumDeferred : ipv4_header_checksum(ip, header_len);
  if (total_len < header_len) {
    r.status |= GPP_STATUS_BAD_IP_LENGTH;
    return;
  }
  if (!ipv4_options_valid(ip, header_len)) {
    r.status |= GPP_STATUS_BAD_IP_OPTIONS;
    return;
  }
  if (off + total_len > pkt.wirelen) r.status |= GPP_STATUS_BAD_IP_LENGTH;
  if (r.frag_offset + (total_len - header_len) > 0xffff) r.status |= GPP_STATUS_BAD_FRAGMENT;
  if (r.frag_offset != 0) return; // only the first fragment holds the L4 header

  L4Span span;
  span.offset = off + header_len;
  span.ip_length = total_len - header_len;
  span.is_fragment = is_fragment;
  span.checksum_verifiable = !is_fragment;
  span.pseudo_src = nullptr;
  span.pseudo_dst = nullptr;
  span.in_walk = payload != nullptr;
  if (payload) *payload = IpPayload{span.offset, off + total_len, true};
  parse_l4(pkt, cfg, span, off + total_len, r);
}

// Walks the TLV options of a hop-by-hop or destination-options header.
// Returns false when an option runs past the header.  Picks up the Jumbo
// Payload length (RFC 2675) and the Home Address (RFC 6275), which the L4
// checksum uses as its source address.
GPP_HOST_DEVICE inline bool walk_ipv6_options(const uint8_t *eh, uint32_t len, uint32_t &jumbo,
                                              const uint8_t *&home_address) {
  uint32_t i = 2;
  while (i < len) {
    const uint8_t type = eh[i];
    if (type == 0) { // Pad1
      ++i;
      continue;
    }
    if (i + 2 > len) return false;
    const uint32_t opt_len = eh[i + 1];
    if (i + 2 + opt_len > len) return false;
    if (type == 0xc2 && opt_len == 4) jumbo = load_be32(eh + i + 2);
    if (type == 0xc9 && opt_len == 16) home_address = eh + i + 2;
    i += 2 + opt_len;
  }
  return true;
}

// Final destination named by a routing header (RFC 8200 8.1: the checksum's
// pseudo-header uses it), or nullptr when the header names none.
GPP_HOST_DEVICE inline const uint8_t *routing_final_destination(const uint8_t *rh, uint32_t len) {
  const uint8_t type = rh[2];
  const uint8_t segments_left = rh[3];
  const uint32_t addresses = (len - 8) / 16;
  if (segments_left == 0 || addresses == 0) return nullptr;
  if (type == 0 || type == 2) return rh + 8 + (addresses - 1) * 16; // last address
  if (type == 4) return rh + 8; // SRH: Segment List[0] is the final segment
  return nullptr;
}

GPP_HOST_DEVICE inline void parse_ipv6(const Packet &pkt, const CoreConfig &cfg, uint32_t off,
                                       GppResult &r, IpPayload *payload) {
  const uint8_t *ip = pkt.bytes + off;
  if ((ip[0] >> 4) != 6) {
    r.status |= GPP_STATUS_BAD_IP_VERSION;
    return;
  }
  r.ip_version = 6;
  if (off + 40 > pkt.caplen) {
    r.status |= short_header_flag(off + 40, pkt.wirelen, GPP_STATUS_BAD_IP_LENGTH);
    return;
  }
  const uint32_t payload_len = load_be16(ip + 4);
  uint8_t next = ip[6];
  r.ip_flags |= GPP_IP_HEADER_PARSED;
  r.ip_length = 40 + payload_len;
  r.ttl = ip[7];
  copy_bytes(r.src, ip + 8, 16);
  copy_bytes(r.dst, ip + 24, 16);
  uint32_t cur = off + 40;
  uint32_t ip_end = cur + payload_len;
  const uint8_t *home_address = nullptr;
  const uint8_t *final_dst = nullptr;
  bool has_fragment_header = false;
  bool more_fragments = false;
  bool l4_reachable = true;
  int walked = 0;
  while (is_ipv6_extension(next)) {
    if (walked == GPP_MAX_IPV6_EXT_HEADERS) {
      r.status |= GPP_STATUS_EXT_CHAIN_LIMIT;
      l4_reachable = false;
      break;
    }
    if (cur + 2 > pkt.caplen) {
      r.status |= short_header_flag(cur + 2, pkt.wirelen, GPP_STATUS_BAD_EXT_HEADER);
      l4_reachable = false;
      break;
    }
    const uint8_t *eh = pkt.bytes + cur;
    const uint32_t len = next == kProtoFragment ? 8u
                         : next == kProtoAh     ? (eh[1] + 2u) * 4u
                                                : (eh[1] + 1u) * 8u;
    if (cur + len > pkt.caplen) {
      r.status |= short_header_flag(cur + len, pkt.wirelen, GPP_STATUS_BAD_EXT_HEADER);
      l4_reachable = false;
      break;
    }
    ++walked;
    const uint8_t type = next;
    next = eh[0];
    bool valid = true;
    if (type == kProtoHopByHop || type == kProtoDstOpts) {
      uint32_t jumbo = 0;
      const uint8_t *home = nullptr;
      valid = walk_ipv6_options(eh, len, jumbo, home);
      if (type == kProtoHopByHop && walked == 1 && payload_len == 0 && jumbo != 0) {
        // RFC 2675: a jumbogram is longer than 65535 bytes; it also has to
        // fit the 32-bit offsets (anything else cannot match the frame).
        if (jumbo <= 0xffff || jumbo > 0xffffffffu - (off + 40)) {
          r.status |= GPP_STATUS_BAD_IP_LENGTH;
          l4_reachable = false;
          break;
        }
        ip_end = off + 40 + jumbo;
        r.ip_length = 40 + jumbo;
      }
      if (type == kProtoDstOpts && home) home_address = home;
    } else if (type == kProtoRouting) {
      const uint8_t *dst = routing_final_destination(eh, len);
      if (dst) final_dst = dst;
    } else if (type == kProtoFragment) {
      has_fragment_header = true;
      r.ip_flags |= GPP_IP_FRAGMENT;
      r.frag_offset = load_be16(eh + 2) & 0xfff8;
      more_fragments = eh[3] & 1;
      if (more_fragments) r.ip_flags |= GPP_IP_MORE_FRAGMENTS;
    }
    // A header that is all there but does not fit its payload, or whose
    // options overrun it, still names the next protocol; what follows it
    // cannot be trusted.
    if (!valid || cur + len > ip_end) {
      r.status |= GPP_STATUS_BAD_EXT_HEADER;
      l4_reachable = false;
      break;
    }
    cur += len;
    if (has_fragment_header && r.frag_offset != 0) break; // later fragments carry no L4 header
  }
  r.ipv6_ext_count = static_cast<uint8_t>(walked > 255 ? 255 : walked);
  r.l4_proto = next;
  if (ip_end > pkt.wirelen) r.status |= GPP_STATUS_BAD_IP_LENGTH;
  if (!l4_reachable) return;
  if (has_fragment_header && r.frag_offset + (ip_end - cur) > 0xffff)
    r.status |= GPP_STATUS_BAD_FRAGMENT;
  if (has_fragment_header && r.frag_offset != 0) return;

  L4Span span;
  span.offset = cur;
  span.ip_length = ip_end > cur ? ip_end - cur : 0;
  // An atomic fragment (offset 0, no more fragments, RFC 6946) is a whole datagram.
  span.is_fragment = more_fragments;
  span.checksum_verifiable = !more_fragments;
  span.pseudo_src = home_address;
  span.pseudo_dst = final_dst;
  span.in_walk = payload != nullptr;
  if (payload) *payload = IpPayload{cur, ip_end, true};
  parse_l4(pkt, cfg, span, ip_end, r);
}

// Toeplitz hash (Microsoft RSS): for every set input bit, XOR in the 32 key
// bits that start at that bit position.  This is the contribution of one
// big-endian input word at byte `offset` (at most kRssKeySize - 8): key bits
// [8 * offset, 8 * offset + 64) hold every 32-bit window its bits select, so
// the 32 terms are independent (no shift-by-one chain: a GPU thread would
// wait on every step).  A hash is the XOR of its input words' contributions.
GPP_HOST_DEVICE inline uint32_t toeplitz_word(const uint8_t *key, int offset, uint32_t word) {
  const uint64_t k = (static_cast<uint64_t>(load_be32(key + offset)) << 32) | load_be32(key + offset + 4);
  uint32_t result = 0;
  for (int bit = 0; bit < 32; ++bit) // input bit `bit` (from the top) selects key bits from 8 * offset + bit
    result ^= static_cast<uint32_t>(k >> (32 - bit)) & (0u - ((word >> (31 - bit)) & 1u));
  return result;
}

// Bytes of the longest RSS input: two IPv6 addresses and two ports.
constexpr int kRssMaxInputBytes = 2 * 16 + 4;

// The contribution of byte value `b` at input byte `i` (< kRssMaxInputBytes):
// its bits select the key windows from key bit 8 * i on, which lie in key
// bytes [i, i + 5).
GPP_HOST_DEVICE inline uint32_t toeplitz_byte(const uint8_t *key, int i, unsigned b) {
  uint64_t k = 0; // key bits 8i... at bit 39 down
  for (int j = 0; j < 5; ++j) k = (k << 8) | key[i + j];
  uint32_t result = 0;
  for (int bit = 0; bit < 8; ++bit)
    result ^= static_cast<uint32_t>(k >> (8 - bit)) & (0u - ((b >> (7 - bit)) & 1u));
  return result;
}

// The Toeplitz hash of one key as a table of every input byte's
// contribution: a word costs four independent loads instead of 32 terms.
// The persistent kernel keeps one in shared memory, where its latency per
// packet counts; it gives the same hashes as toeplitz_word().
struct RssTable {
  uint32_t entry[kRssMaxInputBytes][256];

  // Fills entries first, first + stride, ... (a GPU block shares the work).
  GPP_HOST_DEVICE void fill(const uint8_t *key, unsigned first, unsigned stride) {
    for (unsigned e = first; e < kRssMaxInputBytes * 256; e += stride)
      entry[e / 256][e % 256] = toeplitz_byte(key, static_cast<int>(e / 256), e % 256);
  }

  GPP_HOST_DEVICE uint32_t word(int offset, uint32_t w) const {
    return entry[offset][w >> 24] ^ entry[offset + 1][(w >> 16) & 0xff] ^
           entry[offset + 2][(w >> 8) & 0xff] ^ entry[offset + 3][w & 0xff];
  }
};

// The Toeplitz hash of `len` contiguous bytes (at most kRssKeySize - 4), word
// by word; a last partial word is zero-padded (zero bits select nothing).
GPP_HOST_DEVICE inline uint32_t toeplitz(const uint8_t *key, const uint8_t *input, int len) {
  uint32_t result = 0;
  for (int offset = 0; offset < len; offset += 4) {
    uint32_t word = 0;
    for (int b = 0; b < 4; ++b)
      word = (word << 8) | (offset + b < len ? input[offset + b] : 0u);
    result ^= toeplitz_word(key, offset, word);
  }
  return result;
}

// Lexicographic comparison of (address, port) pairs for symmetric hashing.
GPP_HOST_DEVICE inline bool endpoint_greater(const uint8_t *a, uint16_t a_port, const uint8_t *b,
                                             uint16_t b_port, int addr_len) {
  for (int i = 0; i < addr_len; ++i)
    if (a[i] != b[i]) return a[i] > b[i];
  return a_port > b_port;
}

// Puts the lesser (address, port) endpoint first: both directions of a
// conversation then look alike (symmetric RSS, Community ID, flow keys).
GPP_HOST_DEVICE inline void order_endpoints(const uint8_t *&a, uint16_t &a_port, const uint8_t *&b,
                                            uint16_t &b_port, int addr_len) {
  if (!endpoint_greater(a, a_port, b, b_port, addr_len)) return;
  const uint8_t *t = a;
  a = b;
  b = t;
  const uint16_t p = a_port;
  a_port = b_port;
  b_port = p;
}

// RSS over addresses, plus ports for unfragmented TCP/UDP.  Every fragment of
// a datagram, the first included, hashes on addresses only, as NICs do, so
// all fragments land on one queue.  Symmetric mode orders the endpoints
// before hashing so both directions of a flow hash alike.  `word_hash(offset,
// word)` is the Toeplitz contribution of an input word: toeplitz_word() over
// cfg.rss_key, or an RssTable of that key.
template <typename WordHash>
GPP_HOST_DEVICE inline uint32_t rss_hash(const CoreConfig &cfg, const GppResult &r,
                                         const WordHash &word_hash) {
  if (r.ip_version == 0 || (r.status & GPP_STATUS_BAD_IP_VERSION)) return 0;
  const int addr_len = r.ip_version == 4 ? 4 : 16;
  const bool with_ports = (r.l4_proto == kProtoTcp || r.l4_proto == kProtoUdp) &&
                          (r.ip_flags & GPP_IP_L4_PARSED) && !(r.ip_flags & GPP_IP_FRAGMENT);
  const uint8_t *src = r.src;
  const uint8_t *dst = r.dst;
  uint16_t sport = with_ports ? r.sport : 0;
  uint16_t dport = with_ports ? r.dport : 0;
  if (cfg.symmetric_rss) order_endpoints(src, sport, dst, dport, addr_len);
  // Input: source address, destination address, then the ports, taken as
  // big-endian words straight from the record (no byte buffer to assemble).
  const int words = addr_len / 4;
  uint32_t hash = 0;
  for (int w = 0; w < words; ++w) {
    hash ^= word_hash(4 * w, load_be32(src + 4 * w));
    hash ^= word_hash(addr_len + 4 * w, load_be32(dst + 4 * w));
  }
  if (with_ports) hash ^= word_hash(2 * addr_len, (uint32_t(sport) << 16) | dport);
  return hash;
}

// Address family values of BSD / Linux loopback captures.
GPP_HOST_DEVICE inline uint8_t ip_version_of_family(uint32_t family) {
  if (family == 2) return 4;                                            // AF_INET everywhere
  if (family == 10 || family == 24 || family == 28 || family == 30) return 6; // Linux, BSDs, macOS
  return 0;
}

// Where an IP header starts, and what says its version.
struct L3Start {
  uint32_t offset;
  uint8_t ip_guess; // 4, 6, or 0 = read the version nibble
  bool over_mpls;   // after an MPLS label stack: a nibble other than 4 or 6 is no error
};

// ---- the tunnel walk (decap=inner) -----------------------------------------
// An encapsulation found in a parsed packet: the packet inside it.
struct InnerPacket {
  uint32_t offset; // first byte of the inner Ethernet header, or of the inner IP header
  uint32_t end;    // end of the carrier's payload: the inner packet is read within it
  uint8_t ip_guess; // inner IP (not Ethernet): 4 or 6
  bool ethernet;    // an Ethernet frame (VXLAN, GENEVE, GRE/TEB, ERSPAN), else an IP packet
  uint8_t type;     // GPP_TUNNEL_*
  uint32_t id;
};

// Whether the tunnel header bytes [.., end) lie within the carrier's payload
// (ending at declared_end) and were captured; flags the packet if not.
GPP_HOST_DEVICE inline bool tunnel_header_fits(const Packet &pkt, uint32_t end, uint32_t declared_end,
                                               GppResult &r) {
  if (end > declared_end) {
    r.status |= GPP_STATUS_BAD_TUNNEL;
    return false;
  }
  if (end > pkt.caplen) {
    r.status |= short_header_flag(end, pkt.wirelen, GPP_STATUS_BAD_TUNNEL);
    return false;
  }
  return true;
}

// A level more to the walk; false (and the depth flag) when the walk is as
// deep as it may go: the main fields then stay those of the carrying packet.
GPP_HOST_DEVICE inline bool enter_tunnel(GppTunnelInfo &walk, uint8_t type, uint32_t id, GppResult &r) {
  if (walk.tunnel_count == GPP_MAX_TUNNEL_DEPTH) {
    r.status |= GPP_STATUS_TUNNEL_DEPTH;
    return false;
  }
  walk.tunnel_types[walk.tunnel_count++] = type;
  walk.tunnel_id = id;
  return true;
}

// GRE (RFC 2784 / 2890) at `h`, and ERSPAN over it.  Version 1 (PPTP) and
// RFC 1701 routing are not opened.
GPP_HOST_DEVICE inline bool find_gre(const Packet &pkt, uint32_t h, uint32_t declared_end, GppResult &r,
                                     InnerPacket &in) {
  if (!tunnel_header_fits(pkt, h + 4, declared_end, r)) return false;
  const uint8_t *g = pkt.bytes + h;
  const bool checksum = g[0] & 0x80, routing = g[0] & 0x40, key = g[0] & 0x20, sequence = g[0] & 0x10;
  if ((g[1] & 0x07) != 0 || routing) {
    r.status |= GPP_STATUS_UNKNOWN_TUNNEL;
    return false;
  }
  const uint32_t key_at = h + 4 + (checksum ? 4u : 0u);
  const uint32_t header_end = key_at + (key ? 4u : 0u) + (sequence ? 4u : 0u);
  if (!tunnel_header_fits(pkt, header_end, declared_end, r)) return false;
  const uint16_t proto = load_be16(g + 2);
  in.type = GPP_TUNNEL_GRE;
  in.id = key ? load_be32(pkt.bytes + key_at) : 0;
  in.offset = header_end;
  in.ethernet = false;
  in.ip_guess = 0;
  if (proto == kEthertypeIPv4 || proto == kEthertypeIPv6) {
    in.ip_guess = proto == kEthertypeIPv4 ? 4 : 6;
  } else if (proto == kEthertypeTeb) {
    in.ethernet = true;
  } else if (proto == kEthertypeErspan12 && !sequence) { // type I: the mirrored frame follows
    in.type = GPP_TUNNEL_ERSPAN;
    in.id = 0;
    in.ethernet = true;
  } else if (proto == kEthertypeErspan12 || proto == kEthertypeErspan3) {
    // Type II: an 8-byte header (version 1); type III: 12 bytes (version 2)
    // and an 8-byte platform header when its O bit is set.
    const bool type3 = proto == kEthertypeErspan3;
    if (!tunnel_header_fits(pkt, header_end + (type3 ? 12u : 8u), declared_end, r)) return false;
    const uint8_t *e = pkt.bytes + header_end;
    if ((e[0] >> 4) != (type3 ? 2 : 1)) {
      r.status |= GPP_STATUS_UNKNOWN_TUNNEL;
      return false;
    }
    const uint32_t length = type3 ? 12u + ((e[11] & 1) ? 8u : 0u) : 8u;
    if (!tunnel_header_fits(pkt, header_end + length, declared_end, r)) return false;
    in.type = GPP_TUNNEL_ERSPAN;
    in.id = load_be16(e + 2) & 0x3ff;
    in.offset = header_end + length;
    in.ethernet = true;
  } else {
    r.status |= GPP_STATUS_UNKNOWN_TUNNEL;
    return false;
  }
  return true;
}

// The tunnel a UDP datagram carries, by its ports.  Teredo is a guess (any
// UDP on port 3544): a payload that is no IPv6 packet is plain UDP, no error.
GPP_HOST_DEVICE inline bool find_udp_tunnel(const Packet &pkt, const CoreConfig &cfg,
                                            const IpPayload &payload, GppResult &r, InnerPacket &in) {
  const uint32_t h = r.l4_offset + 8;
  const uint32_t udp_length = load_be16(pkt.bytes + r.l4_offset + 4); // 0: a jumbogram's
  const uint32_t declared_end = udp_length ? r.l4_offset + udp_length : payload.end;
  const uint16_t dport = r.dport, sport = r.sport;
  in.end = declared_end;
  in.ethernet = false;
  in.ip_guess = 0;
  if (dport != 0 && (dport == cfg.vxlan_ports[0] || dport == cfg.vxlan_ports[1])) {
    if (!tunnel_header_fits(pkt, h + 8, declared_end, r)) return false;
    in.type = GPP_TUNNEL_VXLAN;
    in.id = load_be24(pkt.bytes + h + 4);
    in.offset = h + 8;
    in.ethernet = true;
    return true;
  }
  if (dport == kPortGeneve) {
    if (!tunnel_header_fits(pkt, h + 8, declared_end, r)) return false;
    const uint8_t *g = pkt.bytes + h;
    const uint32_t length = 8 + (g[0] & 0x3fu) * 4;
    const uint16_t proto = load_be16(g + 2);
    if ((g[0] >> 6) != 0 ||
        (proto != kEthertypeTeb && proto != kEthertypeIPv4 && proto != kEthertypeIPv6)) {
      r.status |= GPP_STATUS_UNKNOWN_TUNNEL;
      return false;
    }
    if (!tunnel_header_fits(pkt, h + length, declared_end, r)) return false;
    in.type = GPP_TUNNEL_GENEVE;
    in.id = load_be24(g + 4);
    in.offset = h + length;
    in.ethernet = proto == kEthertypeTeb;
    in.ip_guess = proto == kEthertypeIPv4 ? 4 : proto == kEthertypeIPv6 ? 6 : 0;
    return true;
  }
  if (dport == kPortGreInUdp) return find_gre(pkt, h, declared_end, r, in);
  if (dport == kPortGtpU || sport == kPortGtpU) {
    if (!tunnel_header_fits(pkt, h + 8, declared_end, r)) return false;
    const uint8_t *g = pkt.bytes + h;
    if ((g[0] >> 5) != 1 || !(g[0] & 0x10)) { // version 1, protocol type GTP (not GTP')
      r.status |= GPP_STATUS_UNKNOWN_TUNNEL;
      return false;
    }
    if (g[1] != 0xff) return false; // echo, error indication, end marker: no packet inside
    // GTP's length counts the bytes after its first 8: its optional fields,
    // extension headers and the T-PDU, which is read within it.
    const uint32_t gtp_end = h + 8 + load_be16(g + 2);
    if (gtp_end > declared_end) {
      r.status |= GPP_STATUS_BAD_TUNNEL;
      return false;
    }
    in.end = gtp_end;
    uint32_t length = 8;
    if (g[0] & 0x07) { // sequence number, N-PDU number and next extension type follow
      length = 12;
      if (!tunnel_header_fits(pkt, h + length, gtp_end, r)) return false;
      uint8_t next = (g[0] & 0x04) ? g[11] : 0; // read only with the E flag (TS 29.281 5.1)
      for (int walked = 0; next != 0; ++walked) {
        if (walked == kMaxGtpExtensionHeaders) {
          r.status |= GPP_STATUS_UNKNOWN_TUNNEL;
          return false;
        }
        if (!tunnel_header_fits(pkt, h + length + 1, gtp_end, r)) return false;
        const uint32_t ext = pkt.bytes[h + length] * 4u; // in 4-byte units, its last byte names the next
        if (ext == 0) {
          r.status |= GPP_STATUS_BAD_TUNNEL;
          return false;
        }
        if (!tunnel_header_fits(pkt, h + length + ext, gtp_end, r)) return false;
        next = pkt.bytes[h + length + ext - 1];
        length += ext;
      }
    }
    if (!tunnel_header_fits(pkt, h + length + 1, gtp_end, r)) return false;
    const uint8_t nibble = pkt.bytes[h + length] >> 4;
    if (nibble != 4 && nibble != 6) { // an Ethernet or PPP PDU session
      r.status |= GPP_STATUS_UNKNOWN_TUNNEL;
      return false;
    }
    in.type = GPP_TUNNEL_GTPU;
    in.id = load_be32(g + 4);
    in.offset = h + length;
    in.ip_guess = nibble;
    return true;
  }
  if (dport == kPortTeredo || sport == kPortTeredo) {
    // RFC 4380 5.1.1: an authentication indicator, then an origin indication, may precede the IPv6 packet.
    const uint32_t end = declared_end < pkt.caplen ? declared_end : pkt.caplen;
    uint32_t at = h;
    if (at + 4 <= end && load_be16(pkt.bytes + at) == 0x0001)
      at += 4 + pkt.bytes[at + 2] + pkt.bytes[at + 3] + 9; // ids, nonce, confirmation
    if (at + 2 <= end && load_be16(pkt.bytes + at) == 0x0000) at += 8;
    if (at + 40 > end || (pkt.bytes[at] >> 4) != 6) return false; // not Teredo
    in.type = GPP_TUNNEL_TEREDO;
    in.id = 0;
    in.offset = at;
    in.ip_guess = 6;
    return true;
  }
  return false;
}

// The tunnel an IP packet (whose fields `r` holds) carries, if any.  Only a
// packet that parsed cleanly and whole is opened: no fragment but an IPv6
// atomic one (offset 0, no more fragments: a whole datagram, RFC 6946, which
// Wireshark opens too).
GPP_HOST_DEVICE inline bool find_ip_tunnel(const Packet &pkt, const CoreConfig &cfg, const IpPayload &payload,
                                           GppResult &r, InnerPacket &in) {
  if (r.status != 0 || !payload.reached || r.frag_offset != 0 || (r.ip_flags & GPP_IP_MORE_FRAGMENTS))
    return false;
  if (r.l4_proto == kProtoUdp)
    return (r.ip_flags & GPP_IP_L4_PARSED) && find_udp_tunnel(pkt, cfg, payload, r, in);
  in.end = payload.end;
  if (r.l4_proto == kProtoGre) return find_gre(pkt, payload.offset, payload.end, r, in);
  if (r.l4_proto == kProtoIpInIp || r.l4_proto == kProtoIpv6InIp) {
    in.type = GPP_TUNNEL_IPIP;
    in.id = 0;
    in.offset = payload.offset;
    in.ethernet = false;
    in.ip_guess = r.l4_proto == kProtoIpInIp ? 4 : 6;
    return true;
  }
  return false;
}

// The fields a packet inside a tunnel fills anew (the link fields too when
// it comes with an Ethernet header of its own).
GPP_HOST_DEVICE inline void clear_network_fields(GppResult &r) {
  r.status = 0;
  r.ip_version = r.l4_proto = r.ipv4_checksum = r.l4_checksum = r.ip_flags = 0;
  r.frag_offset = r.sport = r.dport = 0;
  r.tcp_flags = r.ttl = r.icmp_type = r.icmp_code = r.ipv6_ext_count = 0;
  r.l3_offset = 0;
  r.l4_offset = r.payload_length = r.payload_offset = r.ip_length = 0;
  for (int i = 0; i < 16; ++i) r.src[i] = r.dst[i] = 0;
}

GPP_HOST_DEVICE inline void clear_link_fields(GppResult &r) {
  r.ethertype = 0;
  for (int i = 0; i < GPP_MAX_VLANS; ++i) r.vlan_ids[i] = 0;
  r.vlan_count = 0;
  r.mpls_label_count = 0;
}

// The tags, labels and (walking tunnels) link-layer encapsulations from
// `ethertype`, whose next header starts at `off`.  True when an IP header
// follows (`l3`); `pkt` is narrowed to a PPPoE session's payload.
GPP_HOST_DEVICE inline bool parse_ethertypes(Packet &pkt, uint32_t off, uint16_t ethertype,
                                             GppResult &r, GppTunnelInfo *walk, L3Start &l3) {
  const uint8_t *bytes = pkt.bytes;
  int tags = 0;
  l3.over_mpls = false;
  l3.ip_guess = 0;
  for (;;) {
    if (ethertype == kEthertypeVlan || ethertype == kEthertypeQinQ || ethertype == kEthertypeQinQOld) {
      if (tags == GPP_MAX_VLANS) {
        r.status |= GPP_STATUS_BAD_L2;
        return false;
      }
      if (off + 4 > pkt.caplen) {
        r.status |= short_header_flag(off + 4, pkt.wirelen, GPP_STATUS_BAD_L2);
        return false;
      }
      r.vlan_ids[tags++] = load_be16(bytes + off) & 0x0fff;
      r.vlan_count = static_cast<uint8_t>(tags);
      ethertype = load_be16(bytes + off + 2);
      off += 4;
      continue;
    }
    if (!walk) break;
    // Link-layer encapsulations: each is a level of the walk.
    if (ethertype == kEthertypePbb) { // I-TAG, then the customer's addresses and ethertype
      if (off + 18 > pkt.caplen) {
        r.status |= short_header_flag(off + 18, pkt.wirelen, GPP_STATUS_BAD_TUNNEL);
        break;
      }
      if (!enter_tunnel(*walk, GPP_TUNNEL_PBB, load_be24(bytes + off + 1), r)) break;
      clear_link_fields(r); // the customer frame's tags from here on
      tags = 0;
      ethertype = load_be16(bytes + off + 16);
      off += 18;
      continue;
    }
    if (ethertype == kEthertypeVnTag || ethertype == kEthertypeETag) {
      const bool vntag = ethertype == kEthertypeVnTag;
      const uint32_t length = vntag ? 6 : 8; // the tag and the next ethertype
      if (off + length > pkt.caplen) {
        r.status |= short_header_flag(off + length, pkt.wirelen, GPP_STATUS_BAD_TUNNEL);
        break;
      }
      const uint32_t id = vntag ? load_be16(bytes + off) & 0x3fffu
                                : (static_cast<uint32_t>(bytes[off + 5]) << 12) | (load_be16(bytes + off + 2) & 0x0fffu);
      if (!enter_tunnel(*walk, vntag ? GPP_TUNNEL_VNTAG : GPP_TUNNEL_ETAG, id, r)) break;
      ethertype = load_be16(bytes + off + length - 2);
      off += length;
      continue;
    }
    if (ethertype == kEthertypePppoeSession) {
      // Version/type 0x11, code 0, session id, length (of the PPP protocol and
      // payload), then PPP's protocol: only IPv4 and IPv6 go on.
      if (off + 8 > pkt.caplen) {
        r.status |= short_header_flag(off + 8, pkt.wirelen, GPP_STATUS_BAD_TUNNEL);
        break;
      }
      const uint16_t ppp = load_be16(bytes + off + 6);
      if (ppp != 0x0021 && ppp != 0x0057) break; // LCP, IPCP, ...: no IP inside
      const uint32_t end = off + 6 + load_be16(bytes + off + 4);
      if (bytes[off] != 0x11 || bytes[off + 1] != 0 || end < off + 8 || end > pkt.wirelen) {
        r.status |= GPP_STATUS_BAD_TUNNEL;
        break;
      }
      if (!enter_tunnel(*walk, GPP_TUNNEL_PPPOE, load_be16(bytes + off + 2), r)) break;
      r.ethertype = ppp == 0x0021 ? kEthertypeIPv4 : kEthertypeIPv6;
      l3.offset = off + 8;
      l3.ip_guess = ppp == 0x0021 ? 4 : 6;
      if (end < pkt.caplen) pkt.caplen = end;
      pkt.wirelen = end;
      return true;
    }
    break;
  }
  if (ethertype < kMinEthertype) return false; // 802.3 length field: LLC frame, not IP
  r.ethertype = ethertype;
  if (ethertype == kEthertypeIPv4) {
    l3.ip_guess = 4;
  } else if (ethertype == kEthertypeIPv6) {
    l3.ip_guess = 6;
  } else if (ethertype == kEthertypeMplsUnicast || ethertype == kEthertypeMplsMulticast) {
    // Skip the label stack; like Wireshark, take the payload as IP when its
    // first nibble says 4 or 6 (anything else is a pseudowire or unknown).
    l3.over_mpls = true;
    bool bottom = false;
    while (!bottom) {
      if (r.mpls_label_count == kMaxMplsLabels) {
        r.status |= GPP_STATUS_BAD_L2;
        return false;
      }
      if (off + 4 > pkt.caplen) {
        r.status |= short_header_flag(off + 4, pkt.wirelen, GPP_STATUS_BAD_L2);
        return false;
      }
      bottom = bytes[off + 2] & 1;
      off += 4;
      ++r.mpls_label_count;
    }
  } else {
    return false; // ARP, LLDP, ...: not IP
  }
  l3.offset = off;
  return true;
}

// The IP header at `l3` and what follows it.
GPP_HOST_DEVICE inline void parse_network(const Packet &pkt, const CoreConfig &cfg, const L3Start &l3,
                                          GppResult &r, IpPayload *payload) {
  const uint32_t off = l3.offset;
  if (off > 0xffff) { // deep in tunnels, past what l3_offset holds
    r.status |= GPP_STATUS_BAD_TUNNEL;
    return;
  }
  if (off >= pkt.caplen) {
    r.status |= short_header_flag(off + 1, pkt.wirelen, GPP_STATUS_BAD_IP_LENGTH);
    return;
  }
  r.l3_offset = static_cast<uint16_t>(off);
  uint8_t ip_guess = l3.ip_guess;
  if (ip_guess == 0) {
    const uint8_t nibble = pkt.bytes[off] >> 4;
    if (nibble != 4 && nibble != 6) {
      if (!l3.over_mpls) r.status |= GPP_STATUS_BAD_IP_VERSION;
      return;
    }
    ip_guess = nibble;
  }
  if (ip_guess == 4) parse_ipv4(pkt, cfg, off, r, payload);
  else parse_ipv6(pkt, cfg, off, r, payload);
}

// The checksums of the packet `r` describes that waited as kChecksumDeferred.
GPP_HOST_DEVICE inline void verify_deferred_checksums(const Packet &pkt, GppResult &r) {
  if (r.ipv4_checksum == kChecksumDeferred) {
    const uint8_t *ip = pkt.bytes + r.l3_offset;
    r.ipv4_checksum = ipv4_header_checksum(ip, (ip[0] & 0x0fu) * 4u);
  }
  if (r.l4_checksum == kChecksumDeferred) {
    L4Span span{};
    span.offset = r.l4_offset;
    span.checksum_verifiable = true;
    r.l4_checksum = l4_checksum_status(pkt, r, span, load_be16(pkt.bytes + r.l4_offset + 4));
  }
}

// Into the tunnels of a packet whose outer layers `r` holds, level by level,
// to the innermost packet (or as deep as GPP_MAX_TUNNEL_DEPTH allows): the
// main fields end up describing it, `walk` the levels passed.
GPP_HOST_DEVICE inline void walk_tunnels(const CoreConfig &cfg, Packet pkt, IpPayload payload,
                                         GppResult &r, GppTunnelInfo &walk) {
  for (;;) {
    InnerPacket in;
    if (!find_ip_tunnel(pkt, cfg, payload, r, in) || !enter_tunnel(walk, in.type, in.id, r)) {
      verify_deferred_checksums(pkt, r); // the innermost packet: its checksums count
      return;
    }
    walk.outer_ip_version = r.ip_version;
    walk.outer_l4_proto = r.l4_proto;
    walk.outer_sport = r.l4_proto == kProtoUdp ? r.sport : 0;
    walk.outer_dport = r.l4_proto == kProtoUdp ? r.dport : 0;
    copy_bytes(walk.outer_src, r.src, 16);
    copy_bytes(walk.outer_dst, r.dst, 16);
    clear_network_fields(r);
    // The inner packet is read within the carrier's payload.
    if (in.end < pkt.caplen) pkt.caplen = in.end;
    if (in.end < pkt.wirelen) pkt.wirelen = in.end;
    L3Start l3{in.offset, in.ip_guess, false};
    if (in.ethernet) {
      clear_link_fields(r);
      if (in.offset + 14 > pkt.caplen) {
        r.status |= short_header_flag(in.offset + 14, pkt.wirelen, GPP_STATUS_BAD_TUNNEL);
        return;
      }
      if (!parse_ethertypes(pkt, in.offset + 14, load_be16(pkt.bytes + in.offset + 12), r, &walk, l3))
        return;
    } else {
      r.ethertype = in.ip_guess == 4 ? kEthertypeIPv4 : kEthertypeIPv6; // IP carried directly
    }
    payload = IpPayload{};
    parse_network(pkt, cfg, l3, r, &payload);
  }
}


// The link, network and transport layers of one packet into `r`; with
// `walk` (and cfg.decap), into its tunnels too.
GPP_HOST_DEVICE inline void parse_layers(const uint8_t *bytes, uint32_t caplen, uint32_t wirelen,
                                         uint32_t linktype, const CoreConfig &cfg, GppResult &r,
                                         GppTunnelInfo *walk) {
  Packet pkt{bytes, caplen, wirelen < caplen ? caplen : wirelen};
  uint32_t off = 0;
  bool has_ethertype = true;
  L3Start l3{0, 0, false};

  switch (linktype) {
  case GPP_LINKTYPE_ETHERNET:
    off = 14;
    break;
  case GPP_LINKTYPE_LINUX_SLL:
    off = 16;
    break;
  case GPP_LINKTYPE_LINUX_SLL2:
    off = 20;
    break;
  case GPP_LINKTYPE_NULL:
  case GPP_LINKTYPE_LOOP:
    off = 4;
    has_ethertype = false;
    break;
  case GPP_LINKTYPE_RAW:
  case GPP_LINKTYPE_IPV4:
  case GPP_LINKTYPE_IPV6:
    has_ethertype = false;
    break;
  default:
    return; // not linktype_supported(): nothing to parse
  }
  if (off > pkt.caplen) {
    r.status |= short_header_flag(off, pkt.wirelen, GPP_STATUS_BAD_L2);
    return;
  }

  if (has_ethertype) {
    const uint16_t ethertype = load_be16(bytes + (linktype == GPP_LINKTYPE_LINUX_SLL2 ? 0 : off - 2));
    if (!parse_ethertypes(pkt, off, ethertype, r, walk, l3)) return;
  } else if (linktype == GPP_LINKTYPE_NULL || linktype == GPP_LINKTYPE_LOOP) {
    // DLT_NULL stores the family in the capturing host's byte order; a value
    // below 256 tells which order it was.
    uint32_t family = load_be32(bytes);
    if (linktype == GPP_LINKTYPE_NULL && (family & 0xffff) == 0)
      family = bytes[0] | (bytes[1] << 8);
    l3 = L3Start{off, ip_version_of_family(family), false};
    if (l3.ip_guess == 0) return;
  } else {
    l3.ip_guess = linktype == GPP_LINKTYPE_IPV4 ? 4 : linktype == GPP_LINKTYPE_IPV6 ? 6 : 0;
  }
  if (!walk) {
    parse_network(pkt, cfg, l3, r, nullptr);
    return;
  }
  IpPayload payload;
  parse_network(pkt, cfg, l3, r, &payload);
  walk_tunnels(cfg, pkt, payload, r, *walk);
}

} // namespace detail

// Who runs the classification stages (ACL, DPI) of a packet:
// process_packet() itself, or (GPU kernels) the whole block afterwards, with
// acl_apply_block() (acl_block.cuh) and dpi_apply_block() (dpi_block.cuh),
// which give the same fields.
enum class ClassifyStages { kInline, kDeferred };

// Parses one packet into `r`.  Reads at most `caplen` bytes of `bytes`.
// `rss_table`, when given, is RssTable of cfg.rss_key (same hashes, faster).
// `tunnel`, when given, is cleared and, with cfg.decap, receives the tunnels
// walked: `r` then describes the innermost packet (GppTunnelInfo).
GPP_HOST_DEVICE inline void process_packet(const uint8_t *bytes, uint32_t caplen,
                                           uint32_t wirelen, uint32_t linktype,
                                           uint64_t packet_number, uint64_t timestamp_ns,
                                           const CoreConfig &cfg, GppResult &r,
                                           ClassifyStages stages = ClassifyStages::kInline,
                                           const detail::RssTable *rss_table = nullptr,
                                           GppTunnelInfo *tunnel = nullptr) {
  // Value-initialised, not zeroed through another type: kernels keep the
  // record in registers, where a type-punned clear is invisible to the
  // optimiser (it then saw the ACL stage read fields never written).
  r = GppResult{};
  r.packet_number = packet_number;
  r.timestamp_ns = timestamp_ns;
  r.caplen = caplen;
  r.wirelen = wirelen;
  r.acl_rule = -1;
  r.dpi_pattern = -1;
  if (tunnel) *tunnel = GppTunnelInfo{};
  detail::parse_layers(bytes, caplen, wirelen, linktype, cfg, r, cfg.decap ? tunnel : nullptr);
  if (rss_table)
    r.rss_hash = detail::rss_hash(cfg, r, [rss_table](int offset, uint32_t word) {
      return rss_table->word(offset, word);
    });
  else
    r.rss_hash = detail::rss_hash(cfg, r, [&cfg](int offset, uint32_t word) {
      return detail::toeplitz_word(cfg.rss_key, offset, word);
    });
  const bool inline_stages = stages == ClassifyStages::kInline;
  if (cfg.acl && inline_stages) acl_apply(cfg.acl, cfg.acl_default_action, r);
  if (cfg.dpi) {
    r.dpi_scanned = 1;
    if (r.payload_length > 0 && inline_stages)
      dpi_scan(cfg.dpi, bytes + r.payload_offset, r.payload_length, r);
  }
}

} // namespace gpp

