/* gpupacket — the per-packet result record (caps "application/x-packet-results").
 *
 * A results buffer is an array of GppResult, one per packet, in the order of the
 * input batch.  The record has a fixed size and layout on CPU and GPU: the two
 * produce byte-identical records.  Plain C; applications read it from appsink.
 */
#ifndef GPUPACKET_PACKET_RESULT_H
#define GPUPACKET_PACKET_RESULT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define GPP_RESULTS_CAPS_NAME "application/x-packet-results"
#define GPP_MAX_VLANS 4           /* VLAN ids kept per packet, outer first */

/* Problem flags in GppResult.status; 0 means the packet parsed cleanly.
 * X (flag, bit, text name used by packetresultenc, meaning). */
#define GPP_STATUS_FLAGS(X) \
  X (TRUNCATED,        0, "truncated",        "the capture ends inside a header (snap length)") \
  X (BAD_L2,           1, "bad_l2",           "link-layer header malformed: too many VLAN tags or MPLS labels, or cut short by the wire length") \
  X (BAD_IP_VERSION,   2, "bad_ip_version",   "IP version nibble disagrees with the ethertype / link type") \
  X (BAD_IHL,          3, "bad_ihl",          "IPv4 header length below 20 bytes") \
  X (BAD_IP_LENGTH,    4, "bad_ip_length",    "IP total / payload length inconsistent with the header or longer than the frame") \
  X (BAD_FRAGMENT,     5, "bad_fragment",     "fragment would end past 65535 bytes") \
  X (BAD_EXT_HEADER,   6, "bad_ext_header",   "IPv6 extension header runs past the IPv6 payload or its options overrun it") \
  X (EXT_CHAIN_LIMIT,  7, "ext_chain_limit",  "IPv6 extension-header walk gave up after GPP_MAX_IPV6_EXT_HEADERS headers") \
  X (BAD_L4_HEADER,    8, "bad_l4_header",    "TCP data offset below 5, UDP length field wrong, or L4 header longer than the IP payload") \
  X (BAD_IP_OPTIONS,   9, "bad_ip_options",   "IPv4 options overrun the header or have a wrong length") \
  X (BAD_TUNNEL,      10, "bad_tunnel",       "decap=inner: an encapsulation header is malformed or runs past the packet; the walk stopped at the packet that carries it") \
  X (UNKNOWN_TUNNEL,  11, "unknown_tunnel",   "decap=inner: an encapsulation the walk does not open (GRE version, routing or protocol, GENEVE protocol, ERSPAN version, GTP-U non-IP); the walk stopped at the packet that carries it") \
  X (TUNNEL_DEPTH,    12, "tunnel_depth",     "decap=inner: more than GPP_MAX_TUNNEL_DEPTH nested encapsulations; the walk stopped at that depth")

enum {
#define GPP_STATUS_ENUM_(flag, bit, name, meaning) GPP_STATUS_##flag = 1u << (bit),
  GPP_STATUS_FLAGS (GPP_STATUS_ENUM_)
#undef GPP_STATUS_ENUM_
};

/* Walks longer than this stop with GPP_STATUS_EXT_CHAIN_LIMIT (bounds GPU work). */
#define GPP_MAX_IPV6_EXT_HEADERS 255

/* GppResult.ipv4_checksum and .l4_checksum */
enum {
  GPP_CHECKSUM_NONE = 0,       /* no such checksum in this packet */
  GPP_CHECKSUM_UNVERIFIED = 1, /* present but not checked (switched off, fragment, cut by capture) */
  GPP_CHECKSUM_GOOD = 2,
  GPP_CHECKSUM_BAD = 3
};

/* GppResult.ip_flags */
enum {
  GPP_IP_DONT_FRAGMENT = 1u << 0,  /* IPv4 DF */
  GPP_IP_MORE_FRAGMENTS = 1u << 1, /* IPv4 MF or IPv6 fragment header M */
  GPP_IP_FRAGMENT = 1u << 2,       /* part of a fragmented datagram (IPv6: has a fragment header) */
  GPP_IP_L4_PARSED = 1u << 3,      /* sport/dport/tcp_flags/icmp_* hold values */
  GPP_IP_HEADER_PARSED = 1u << 4   /* src/dst/ttl/l4_proto hold values (fixed IP header captured) */
};

/* GppResult.acl_action */
enum { GPP_ACL_NONE = 0, GPP_ACL_ALLOW = 1, GPP_ACL_DROP = 2 };

typedef struct GppResult {
  uint64_t packet_number;   /* 1-based number in the stream, like tshark's frame.number */
  uint64_t timestamp_ns;    /* capture time from the batch descriptor */
  uint32_t status;          /* GPP_STATUS_* flags, 0 = ok */
  uint32_t rss_hash;        /* Toeplitz hash; 0 for non-IP packets */
  uint32_t caplen;
  uint32_t wirelen;
  uint16_t ethertype;       /* L3 ethertype after all VLAN tags; 0 = none (raw IP, loopback, 802.3 LLC) */
  uint16_t vlan_ids[GPP_MAX_VLANS]; /* outer first, 802.1ad S-tags included */
  uint8_t vlan_count;       /* entries used in vlan_ids */
  uint8_t ip_version;       /* 4, 6, or 0 when no IP header was found */
  uint8_t l4_proto;         /* upper-layer protocol after IPv6 extension headers */
  uint8_t ipv4_checksum;    /* GPP_CHECKSUM_* */
  uint8_t l4_checksum;      /* GPP_CHECKSUM_* for TCP, UDP, ICMP, ICMPv6 */
  uint8_t ip_flags;         /* GPP_IP_* */
  uint16_t frag_offset;     /* fragment offset in bytes (IPv4 or IPv6 fragment header) */
  uint16_t sport;           /* TCP/UDP/SCTP ports (GPP_IP_L4_PARSED) */
  uint16_t dport;
  uint8_t tcp_flags;        /* TCP flags byte (CWR..FIN) */
  uint8_t ttl;              /* IPv4 TTL / IPv6 hop limit */
  uint8_t icmp_type;        /* ICMP / ICMPv6 type and code (GPP_IP_L4_PARSED) */
  uint8_t icmp_code;
  uint8_t ipv6_ext_count;   /* IPv6 extension headers walked (saturates at 255) */
  uint8_t mpls_label_count; /* MPLS labels skipped before the IP header */
  uint16_t l3_offset;       /* first byte of the IP header in the packet */
  uint32_t l4_offset;       /* first byte of the upper-layer header; 0 if none */
  uint32_t payload_length;  /* captured L4 payload bytes (after TCP/UDP header) */
  uint8_t src[16];          /* outer IP addresses; IPv4 uses the first 4 bytes */
  uint8_t dst[16];
  int32_t acl_rule;         /* ACL stage: first matching rule index, -1 = none */
  uint8_t acl_action;       /* GPP_ACL_* (GPP_ACL_NONE: no ACL ran) */
  uint8_t dpi_scanned;      /* 1 when the DPI stage ran (dpi_pattern/dpi_hits mean something) */
  uint8_t reserved0[2];
  int32_t dpi_pattern;      /* DPI stage: smallest matching pattern id, -1 = none */
  uint32_t dpi_hits;        /* DPI stage: occurrences of all patterns */
  uint32_t payload_offset;  /* first byte of the L4 payload; 0 if none */
  uint32_t ip_length;       /* the datagram's length by its IP header: IPv4 total length, IPv6 40 +
                             * payload length (jumbogram: 40 + its jumbo length); 0 without one */
} GppResult;

#ifdef __cplusplus
static_assert (sizeof (GppResult) == 128, "GppResult is a fixed 128-byte record");
#else
_Static_assert (sizeof (GppResult) == 128, "GppResult is a fixed 128-byte record");
#endif

/* ---- decap=inner: the tunnels walked ------------------------------------
 *
 * With gpupacketproc's decap=inner the main fields of GppResult describe the
 * innermost packet the walk reached, and each record has a GppTunnelInfo.
 * The results caps then say record-size=176 (GPP_RESULTS_RECORD_SIZE_TUNNELS)
 * instead of 128, and a buffer of N packets holds N GppResult followed by N
 * GppTunnelInfo (two planes: the GppResult plane is laid out exactly as with
 * record-size=128).  A reader that knows only record-size=128 does not link
 * to such a stream (not-negotiated) instead of misreading it.
 *
 * X (type, value, text name used by packetresultenc, what it is and its id). */
#define GPP_MAX_TUNNEL_DEPTH 4  /* encapsulation levels walked, at most */
#define GPP_TUNNEL_TYPES(X) \
  X (VXLAN,   1, "vxlan",  "VXLAN (UDP 4789, or the element's vxlan-ports); id: the VNI") \
  X (GENEVE,  2, "geneve", "GENEVE (UDP 6081), options skipped; id: the VNI") \
  X (GRE,     3, "gre",    "GRE (IP protocol 47, or UDP 4754 as RFC 8086) with IPv4, IPv6 or Ethernet (NVGRE) inside; id: the key, 0 without one") \
  X (ERSPAN,  4, "erspan", "ERSPAN type I, II or III over GRE; id: the session id (type I: 0)") \
  X (GTPU,    5, "gtpu",   "GTP-U version 1 G-PDU (UDP 2152), extension headers skipped; id: the TEID") \
  X (IPIP,    6, "ipip",   "IPv4 or IPv6 in IPv4 or IPv6 (IP protocol 4 or 41); id: 0") \
  X (TEREDO,  7, "teredo", "Teredo (UDP 3544): IPv6 in UDP, authentication and origin headers skipped; id: 0") \
  X (PPPOE,   8, "pppoe",  "PPPoE session (ethertype 0x8864) with PPP IPv4 or IPv6; id: the session id") \
  X (PBB,     9, "pbb",    "802.1ah provider backbone bridging (0x88e7); id: the I-SID") \
  X (VNTAG,  10, "vntag",  "VN-Tag (0x8926); id: the destination VIF") \
  X (ETAG,   11, "etag",   "802.1BR E-Tag (0x893f); id: the E-CID (extension << 12 | base)")

enum {
#define GPP_TUNNEL_ENUM_(type, value, name, meaning) GPP_TUNNEL_##type = (value),
  GPP_TUNNEL_TYPES (GPP_TUNNEL_ENUM_)
#undef GPP_TUNNEL_ENUM_
};

#define GPP_RESULTS_RECORD_SIZE 128          /* caps record-size: GppResult only */
#define GPP_RESULTS_RECORD_SIZE_TUNNELS 176  /* caps record-size: GppResult + GppTunnelInfo planes */

typedef struct GppTunnelInfo {
  uint32_t tunnel_id;       /* the innermost level's id (see GPP_TUNNEL_TYPES); 0 where it has none */
  uint8_t tunnel_count;     /* levels walked through to the packet of the main fields; 0: none */
  uint8_t tunnel_types[GPP_MAX_TUNNEL_DEPTH]; /* GPP_TUNNEL_* per level, outermost first; 0 past tunnel_count */
  uint8_t outer_ip_version; /* 4 or 6: the IP header that carries the innermost IP-borne tunnel
                             * (every type but PPPoE, PBB, VN-Tag and E-Tag); 0: none walked */
  uint8_t outer_l4_proto;   /* its protocol: 17 (UDP tunnels), 47 (GRE, ERSPAN), 4 or 41 (IP-in-IP) */
  uint8_t reserved0;
  uint16_t outer_sport;     /* its UDP ports for UDP tunnels, else 0 */
  uint16_t outer_dport;
  uint8_t outer_src[16];    /* its addresses; IPv4 uses the first 4 bytes */
  uint8_t outer_dst[16];
} GppTunnelInfo;

#ifdef __cplusplus
static_assert (sizeof (GppTunnelInfo) == 48, "GppTunnelInfo is a fixed 48-byte record");
static_assert (GPP_RESULTS_RECORD_SIZE_TUNNELS == sizeof (GppResult) + sizeof (GppTunnelInfo),
    "a tunnel record is a GppResult and a GppTunnelInfo");
#else
_Static_assert (sizeof (GppTunnelInfo) == 48, "GppTunnelInfo is a fixed 48-byte record");
_Static_assert (GPP_RESULTS_RECORD_SIZE_TUNNELS == sizeof (GppResult) + sizeof (GppTunnelInfo),
    "a tunnel record is a GppResult and a GppTunnelInfo");
#endif

/* The GppTunnelInfo plane of a record-size=176 buffer of `size` bytes. */
static inline const GppTunnelInfo *
gpp_results_tunnels (const void *data, size_t size)
{
  const size_t n = size / GPP_RESULTS_RECORD_SIZE_TUNNELS;
  return (const GppTunnelInfo *) ((const uint8_t *) data + n * sizeof (GppResult));
}

#ifdef __cplusplus
}
#endif
#endif /* GPUPACKET_PACKET_RESULT_H */
