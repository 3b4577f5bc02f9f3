/* gpupacket — the flow record: one conversation, both directions.
 *
 * A flow is keyed by IP version, the two endpoints (address and port), the IP
 * protocol, the outer VLAN id and, with gpupacketproc's decap=inner, the
 * tunnel id (GppTunnelInfo.tunnel_id: two tenants' equal tuples in two VNIs
 * are two flows); ICMP and ICMPv6 keep type and code in the
 * responder's port (type << 8 | code, as NetFlow and IPFIX exporters do), so a
 * request and its reply are flows of their own.  Counters are kept per
 * direction; the initiator is the source of the flow's first packet (the one
 * with the lowest packet number).  The record has a fixed size and layout on
 * CPU and GPU.  Plain C, like packet-result.h.
 */
#ifndef GPUPACKET_FLOW_RECORD_H
#define GPUPACKET_FLOW_RECORD_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why a flow record was written: IPFIX's flowEndReason values (RFC 5102). */
enum {
  GPP_FLOW_END_IDLE = 1,     /* idle timeout: no packet for idle-timeout */
  GPP_FLOW_END_ACTIVE = 2,   /* active timeout: the flow lasted active-timeout */
  GPP_FLOW_END_OF_FLOW = 3,  /* TCP: a RST, or a FIN each way */
  GPP_FLOW_END_FORCED = 4,   /* end of stream (EOS) or the element stopping */
  GPP_FLOW_END_NO_ROOM = 5   /* lack of resources: evicted from a full flow table */
};

typedef struct GppFlowRecord {
  uint64_t start_ns;         /* earliest capture time of its packets */
  uint64_t end_ns;           /* latest */
  uint64_t first_packet;     /* packet number of the flow's first packet */
  uint64_t packets[2];       /* [0] initiator to responder, [1] back */
  uint64_t bytes[2];         /* IP bytes (each packet's ip_length), same directions */
  uint8_t src[16];           /* initiator's address (IPv4: first 4 bytes) */
  uint8_t dst[16];           /* responder's */
  uint16_t sport;            /* initiator's port (0 for ICMP and port-less protocols) */
  uint16_t dport;            /* responder's port; ICMP: type << 8 | code */
  uint16_t vlan_id;          /* outer VLAN id, 0 = untagged */
  uint8_t ip_version;        /* 4 or 6 */
  uint8_t l4_proto;
  uint8_t tcp_flags[2];      /* OR of the TCP flags each way */
  uint8_t end_reason;        /* GPP_FLOW_END_* */
  uint8_t acl_action;        /* of the first packet (GPP_ACL_*; 0: no ACL ran) */
  int32_t acl_rule;          /* of the first packet: first matching rule, -1 = none */
  int32_t dpi_pattern;       /* smallest pattern id in any packet of the flow, -1 = none */
  uint32_t dpi_hits;         /* pattern occurrences over the flow's packets */
  uint32_t rss_hash;         /* of the first packet */
  uint8_t community_id[20];  /* SHA-1 digest of the flow's Community ID (v1); text: "1:" + base64 */
  uint32_t tunnel_id;        /* decap=inner: its packets' GppTunnelInfo.tunnel_id; else 0 */
  uint8_t reserved[4];       /* 0; keeps the record free of implicit padding */
} GppFlowRecord;

#ifdef __cplusplus
static_assert (sizeof (GppFlowRecord) == 144, "GppFlowRecord is a fixed 144-byte record");
#else
_Static_assert (sizeof (GppFlowRecord) == 144, "GppFlowRecord is a fixed 144-byte record");
#endif

#ifdef __cplusplus
}
#endif
#endif /* GPUPACKET_FLOW_RECORD_H */
