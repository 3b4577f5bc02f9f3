// libpcap speaks DLT_ values; the batch format and caps carry LINKTYPE_
// values (those of the pcap file format).  They differ only for raw IP:
// DLT_RAW is 12 or 14 by platform, LINKTYPE_RAW is 101.  The one mapping for
// the pcap elements, the tests and the bench.  Header-only; needs libpcap.
#pragma once

#include <pcap/pcap.h>

#include <cstdint>

#include <gpupacket/packet-batch.h>

namespace gpp {

inline uint32_t linktype_from_dlt(int dlt) {
  return dlt == DLT_RAW ? GPP_LINKTYPE_RAW : static_cast<uint32_t>(dlt);
}

inline int dlt_from_linktype(uint32_t linktype) {
  return linktype == GPP_LINKTYPE_RAW ? DLT_RAW : static_cast<int>(linktype);
}

// The LINKTYPE_ value of an open capture.
inline uint32_t linktype_of(pcap_t *pcap) { return linktype_from_dlt(pcap_datalink(pcap)); }

} // namespace gpp
