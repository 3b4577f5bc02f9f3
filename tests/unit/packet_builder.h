// Builds packets byte by byte for the core tests: link layers, IPv4, IPv6 with
// extension headers, TCP, UDP, ICMP, and the encapsulations of the tunnel walk.  Checksums are computed here with a
// deliberately simple implementation of their own (RFC 1071 by the book), never
// with the core's functions, so a checksum bug in the core cannot hide itself.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gpptest {

using Bytes = std::vector<uint8_t>;

// IP protocol numbers
constexpr uint8_t kHopByHop = 0;
constexpr uint8_t kIcmp = 1;
constexpr uint8_t kTcp = 6;
constexpr uint8_t kUdp = 17;
constexpr uint8_t kGre = 47;
constexpr uint8_t kIpIp = 4;
constexpr uint8_t kIpv6InIp = 41;
constexpr uint8_t kRouting = 43;
constexpr uint8_t kFragment = 44;
constexpr uint8_t kAh = 51;
constexpr uint8_t kIcmpv6 = 58;
constexpr uint8_t kNoNextHeader = 59;
constexpr uint8_t kDstOpts = 60;

// Ethertypes
constexpr uint16_t kEthIpv4 = 0x0800;
constexpr uint16_t kEthArp = 0x0806;
constexpr uint16_t kEthIpv6 = 0x86dd;
constexpr uint16_t kEthVlan = 0x8100;
constexpr uint16_t kEthQinQ = 0x88a8;
constexpr uint16_t kEthQinQOld = 0x9100;
constexpr uint16_t kEthMpls = 0x8847;
constexpr uint16_t kEthTeb = 0x6558; // transparent Ethernet bridging (GRE, GENEVE)
constexpr uint16_t kEthErspan = 0x88be;
constexpr uint16_t kEthErspan3 = 0x22eb;
constexpr uint16_t kEthPppoeSession = 0x8864;
constexpr uint16_t kEthPbb = 0x88e7;
constexpr uint16_t kEthVnTag = 0x8926;
constexpr uint16_t kEthETag = 0x893f;

// UDP ports of the tunnels
constexpr uint16_t kPortVxlan = 4789;
constexpr uint16_t kPortGeneve = 6081;
constexpr uint16_t kPortGtpU = 2152;
constexpr uint16_t kPortTeredo = 3544;
constexpr uint16_t kPortGreInUdp = 4754;

// TCP flags
constexpr uint8_t kFin = 0x01, kSyn = 0x02, kRst = 0x04, kPsh = 0x08, kAck = 0x10,
                  kUrg = 0x20, kEce = 0x40, kCwr = 0x80;

// Text address to bytes (inet_pton); aborts the test program on a typo.
Bytes ipv4_addr(const std::string &text);
Bytes ipv6_addr(const std::string &text);

void append16(Bytes &b, uint16_t v);
void append32(Bytes &b, uint32_t v);
void store16(Bytes &b, size_t at, uint16_t v);
Bytes concat(const Bytes &a, const Bytes &b);
Bytes pattern_bytes(size_t n, uint8_t seed = 0); // deterministic filler

// RFC 1071 checksum of `data` with `initial` (an unfolded 32-bit sum) added in.
uint16_t internet_checksum(const Bytes &data, uint32_t initial = 0);
// Unfolded sum of the IPv4/IPv6 pseudo-header.
uint32_t pseudo_header_sum(const Bytes &src, const Bytes &dst, uint8_t proto, uint32_t length);

// Reference Toeplitz hash written from the Microsoft RSS specification, bit by bit.
uint32_t reference_toeplitz(const uint8_t *key, size_t key_len, const Bytes &input);

// ---- L4 (checksum field left 0; the IP builders fill it) -------------------

struct TcpSpec {
  uint16_t sport = 40000;
  uint16_t dport = 80;
  uint8_t flags = kSyn;
  uint32_t seq = 0x01020304;
  uint32_t ack = 0;
  Bytes options;              // padded with NOPs to a multiple of 4
  int data_offset_words = -1; // -1: computed from the options
  Bytes payload;
};
Bytes tcp(const TcpSpec &spec);
Bytes udp(uint16_t sport, uint16_t dport, const Bytes &payload, int length_field = -1);
// ICMP / ICMPv6: type, code, checksum, then `rest` (rest of header + data).
Bytes icmp(uint8_t type, uint8_t code, const Bytes &rest);

enum class L4Checksum { Fill, Corrupt, Keep };

// ---- IPv4 ------------------------------------------------------------------

struct Ipv4Spec {
  Bytes src = ipv4_addr("192.0.2.1");
  Bytes dst = ipv4_addr("198.51.100.7");
  uint8_t proto = kTcp;
  uint8_t ttl = 64;
  uint16_t id = 0x4242;
  bool dont_fragment = false;
  bool more_fragments = false;
  uint32_t frag_offset_bytes = 0; // multiple of 8
  Bytes options;                  // padded with EOL to a multiple of 4
  int ihl_words = -1;             // -1: computed
  int total_length = -1;          // -1: computed
  uint8_t version = 4;
  bool corrupt_header_checksum = false;
  L4Checksum l4_checksum = L4Checksum::Fill; // TCP/UDP/ICMP checksum field
};
Bytes ipv4(const Ipv4Spec &spec, const Bytes &l4);

// ---- IPv6 ------------------------------------------------------------------

struct Ext {
  uint8_t proto; // this header's protocol number
  Bytes bytes;   // bytes[0] (next header) is written by ipv6()
};
Ext hop_by_hop(size_t length = 8); // PadN-filled options header, length multiple of 8
Ext dest_options(size_t length = 8);
Ext hop_by_hop_jumbo(uint32_t jumbo_length);
Ext routing_header(uint8_t type, uint8_t segments_left, const std::vector<Bytes> &addresses);
Ext fragment_header(uint32_t offset_bytes, bool more, uint32_t id = 0xabcdef01);
Ext auth_header(size_t icv_length = 12); // AH: 12 fixed bytes + ICV

struct Ipv6Spec {
  Bytes src = ipv6_addr("2001:db8::1");
  Bytes dst = ipv6_addr("2001:db8:ffff::2");
  uint8_t hop_limit = 63;
  std::vector<Ext> exts;
  uint8_t proto = kTcp; // upper-layer protocol after the extension headers
  int payload_length = -1;
  uint8_t version = 6;
  L4Checksum l4_checksum = L4Checksum::Fill;
  Bytes checksum_dst; // pseudo-header destination; empty: dst
};
Bytes ipv6(const Ipv6Spec &spec, const Bytes &l4);

// ---- Link layers -------------------------------------------------------------

struct VlanTag {
  uint16_t tpid;
  uint16_t tci;
};
Bytes ethernet(uint16_t ethertype, const Bytes &payload, const std::vector<VlanTag> &tags = {});
// MPLS label stack over Ethernet; the bottom-of-stack bit goes on the last label.
Bytes mpls_ethernet(const std::vector<uint32_t> &labels, const Bytes &payload);
Bytes linux_sll(uint16_t protocol, const Bytes &payload);
Bytes linux_sll2(uint16_t protocol, const Bytes &payload);
// BSD loopback header: the address family in little- or big-endian order.
Bytes loopback(uint32_t family, bool little_endian, const Bytes &payload);

// ---- Encapsulations: each returns its header(s) followed by `inner` ----------

// VXLAN (RFC 7348): flags with I set, the VNI.  Goes in UDP to kPortVxlan.
Bytes vxlan(uint32_t vni, const Bytes &inner);

struct GeneveSpec {
  uint32_t vni = 0x123456;
  uint16_t protocol = kEthTeb;
  uint8_t option_words = 0; // 4-byte words of options (filled with one padded TLV)
  uint8_t version = 0;
};
Bytes geneve(const GeneveSpec &spec, const Bytes &inner);

struct GreSpec {
  uint16_t protocol = kEthIpv4;
  bool checksum = false; // the checksum is computed over the header and `inner`
  bool key = false;
  uint32_t key_value = 0;
  bool sequence = false;
  uint32_t sequence_value = 0;
  bool routing = false;
  uint8_t version = 0;
};
Bytes gre(const GreSpec &spec, const Bytes &inner);

// ERSPAN type II (version 1) and III (version 2) headers; type I is GRE
// kEthErspan without a sequence number and no header of its own.
Bytes erspan2(uint16_t session, const Bytes &frame, uint8_t version = 1);
Bytes erspan3(uint16_t session, const Bytes &frame, bool platform_header = false,
              uint8_t version = 2);

struct GtpExtension {
  uint8_t type;  // the type the previous header names
  Bytes content; // 4n - 2 bytes: the length and next-type bytes are added
};
struct GtpSpec {
  uint32_t teid = 0x01020304;
  uint8_t message_type = 0xff; // G-PDU
  uint8_t flags = 0x30;        // version 1, protocol type GTP; 0x07: S, PN, E
  bool sequence = false;       // the 4 optional bytes without the E flag (S set)
  std::vector<GtpExtension> extensions; // sets E
};
Bytes gtp(const GtpSpec &spec, const Bytes &inner);

struct TeredoSpec {
  bool origin = false;   // origin indication (8 bytes)
  bool auth = false;     // authentication header before it
  uint8_t id_length = 0; // its client identifier and authentication value
  uint8_t auth_length = 0;
};
Bytes teredo(const TeredoSpec &spec, const Bytes &ipv6_packet);

// PPPoE session header and PPP protocol: goes after ethertype kEthPppoeSession.
Bytes pppoe_session(uint16_t session, uint16_t ppp_protocol, const Bytes &inner,
                    int length_field = -1);
// 802.1ah I-TAG and the customer frame: goes after ethertype kEthPbb.
Bytes pbb_itag(uint32_t isid, const Bytes &customer_frame);
// VN-Tag / E-Tag and the next ethertype: goes after kEthVnTag / kEthETag.
Bytes vntag(uint16_t dst_vif, uint16_t ethertype, const Bytes &inner);
Bytes etag(uint16_t ecid_base, uint8_t ecid_ext, uint16_t ethertype, const Bytes &inner);

} // namespace gpptest
