// Runs the packet core the way the tests need it: on an exact-size heap copy of
// the packet (so AddressSanitizer catches any read at or past caplen), with
// structural checks on every record, and with every truncation of a crafted
// packet checked against the full packet's verdict.
#pragma once

#include <cstdint>
#include <string>

#include <gpupacket/packet-result.h>

#include "packet_builder.h"
#include "packet_core.h"

namespace gpptest {

gpp::CoreConfig make_config(bool verify_l4 = true, bool symmetric = false,
                            const uint8_t *key = gpp::kDefaultRssKey);

// process_packet() over the first `caplen` bytes of `pkt`, copied into a heap
// block of exactly `caplen` bytes.  With `tunnel`, process_packet() gets it
// (and walks into tunnels when cfg.decap says so).
GppResult run_core(const Bytes &pkt, uint32_t caplen, uint32_t wirelen, uint32_t linktype,
                   const gpp::CoreConfig &cfg, uint64_t packet_number = 1,
                   uint64_t timestamp_ns = 1700000000123456789ull,
                   GppTunnelInfo *tunnel = nullptr);

// Promises every record keeps whatever the input (offsets inside the capture,
// reserved fields zero, ...).  Empty when all hold, else the first broken one.
std::string record_violations(const GppResult &r, uint32_t caplen, uint32_t wirelen);

// Promises of the tunnel walk's record beside its GppResult (types in range
// and none past the count, outer fields only where an IP-borne level was
// walked, all zero and no tunnel flag when `decap` is off).
std::string tunnel_violations(const GppResult &r, const GppTunnelInfo &t, bool decap);

struct Crafted {
  std::string name;
  uint32_t linktype = GPP_LINKTYPE_ETHERNET;
  Bytes bytes;
  uint32_t wirelen = 0; // 0: bytes.size()
  // Bytes the parser needs for its verdict on the full packet: every header it
  // reads, up to the end of the L4 header (TCP options included).  A capture
  // cut before this point must not report status 0; cut at or after it, it
  // must give the full packet's status and header fields.
  uint32_t header_bytes = 0;
  // Teredo is found by a guess (an IPv6 header inside UDP port 3544): cut
  // before header_bytes, the walk may see plain UDP (status 0, no tunnel).
  bool tunnel_guessed = false;

  uint32_t wire() const { return wirelen ? wirelen : static_cast<uint32_t>(bytes.size()); }
};

// Parses the full packet and every truncation of it (lengths 0 .. caplen-1,
// wire length unchanged), recording gtest failures for broken promises.
// Returns the full packet's record.
GppResult parse(const Crafted &c, const gpp::CoreConfig &cfg = make_config());

// Same with the tunnel walk: every record also gets a GppTunnelInfo, checked
// by tunnel_violations() and, cut at or after header_bytes, equal to the full
// packet's.  The full packet's is returned in *tunnel.
GppResult parse(const Crafted &c, const gpp::CoreConfig &cfg, GppTunnelInfo *tunnel);

// Same for a packet given inline.
GppResult parse(const std::string &name, uint32_t linktype, const Bytes &bytes,
                uint32_t header_bytes, uint32_t wirelen = 0,
                const gpp::CoreConfig &cfg = make_config());

// Ethernet/IPv4 and Ethernet/IPv6 helpers shared by several test files.
Bytes eth_ipv4(const Ipv4Spec &ip, const Bytes &l4);
Bytes eth_ipv6(const Ipv6Spec &ip, const Bytes &l4);

// RSS input of the core: addresses, then ports if `with_ports`.
Bytes rss_input(const Bytes &src, const Bytes &dst, bool with_ports, uint16_t sport,
                uint16_t dport);
uint32_t expected_rss(const Bytes &src, const Bytes &dst, bool with_ports, uint16_t sport = 0,
                      uint16_t dport = 0, const uint8_t *key = gpp::kDefaultRssKey);

Bytes addr_of(const uint8_t *field, uint8_t ip_version);

} // namespace gpptest
