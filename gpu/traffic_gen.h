// Synthetic traffic for packettestsrc and benchmarks: Ethernet frames of a
// chosen size profile over a fixed set of flows, with valid IPv4 and L4
// checksums, optionally with headers drawn from ACL rules and payloads that
// contain DPI patterns, so the classification stages do real work, and
// optionally every frame inside tunnels (TrafficSpec::tunnels).
// Deterministic for a given seed.  Host only.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "acl_rules.h"
#include "dpi_patterns.h"

namespace gpp {

enum class TrafficProfile : int {
  Small = 0, // 64-byte frames, IPv4 UDP/TCP
  Large = 1, // 1500-byte frames, IPv4 UDP/TCP
  Imix = 2,  // 7:4:1 of 64, 576 and 1500 bytes, IPv4
  Mix = 3    // realistic: IPv4/IPv6, TCP/UDP/ICMP, some VLAN tags, some fragments, IMIX sizes
};

// An encapsulation around every generated frame, for the tunnel walk
// (CoreConfig.decap).  Each wraps the frame built so far, an Ethernet frame,
// into a new one: outer Ethernet and IPv4 (addresses from the inner flow, so
// a flow keeps its tunnel endpoints), then
enum class TrafficTunnel : uint8_t {
  Vxlan,  // UDP to 4789 (source port from the inner flow, checksum 0) and VXLAN: +50 bytes
  Geneve, // UDP to 6081 and GENEVE without options, Ethernet inside: +50 bytes
  Gre,    // GRE with a key, Ethernet inside (NVGRE, protocol 0x6558): +42 bytes
  GtpU,   // UDP 2152 to 2152 and a GTP-U G-PDU of the frame's IP packet (its
          // Ethernet header and tags dropped): +36 bytes for an untagged frame
  IpIp,   // the frame's IP packet in IPv4 (protocol 4 or 41): +20 bytes for an untagged frame
};

// The names the benchmarks and tests take (`--traffic vxlan`, "vxlan,gre"):
// one table, so the names, the parser and the overheads agree.  All-VXLAN
// traffic of 64-byte inner frames, 114 bytes on the wire:
//   gpp::TrafficSpec spec;
//   spec.profile = gpp::TrafficProfile::Small;
//   if (!gpp::parse_traffic_tunnels("vxlan", &spec.tunnels)) ... // an unknown name
//   gpp::TrafficGenerator gen(spec);
struct TrafficTunnelName {
  TrafficTunnel tunnel;
  const char *name;
};
inline constexpr TrafficTunnelName kTrafficTunnels[] = {
    {TrafficTunnel::Vxlan, "vxlan"}, {TrafficTunnel::Geneve, "geneve"}, {TrafficTunnel::Gre, "gre"},
    {TrafficTunnel::GtpU, "gtpu"},   {TrafficTunnel::IpIp, "ipip"},
};

// "vxlan" or a comma-separated nest, outermost first ("vxlan,gre,ipip"; ""
// or "none": plain frames) into `out`; false (out untouched) on an unknown
// name or more levels than the tunnel walk follows (GPP_MAX_TUNNEL_DEPTH).
bool parse_traffic_tunnels(const std::string &text, std::vector<TrafficTunnel> *out);

// Bytes a frame grows by inside `tunnels`: 50 for {Vxlan}, so the Small
// profile's 64-byte frames are 114 bytes on the wire.  GtpU and IpIp drop
// the inner Ethernet header: counted for an untagged frame.
uint32_t tunnel_overhead(const std::vector<TrafficTunnel> &tunnels);

struct TrafficSpec {
  TrafficProfile profile = TrafficProfile::Mix;
  uint32_t flows = 1024;
  uint32_t seed = 1;
  double acl_rate = 0;                 // share of packets whose header comes from a rule
                                       // (one it can match: see matchable_rules_)
  const AclRuleSet *acl = nullptr;
  double dpi_rate = 0;                 // share of packets carrying a pattern
  const DpiPatternSet *dpi = nullptr;
  // Payload bytes: random unless a source is given, then a slice of it from a
  // random offset (wrapping): text or payloads carved from captures.
  const std::string *payload_source = nullptr;
  // > 0: the worst case for DPI: every TCP/UDP payload carries a pattern
  // about every dpi_every bytes (dpi_rate is then ignored).
  uint32_t dpi_every = 0;
  // Flows in turn (0, 1, 2, ...) rather than drawn at random: `flows`
  // packets then hold every flow once.
  bool round_robin = false;
  // Every frame inside these tunnels, outermost first (parse_traffic_tunnels).
  // The frames inside are the frames generated without them (same seed,
  // same bytes), so profile sizes are those of the inner frame: Small inside
  // {Vxlan} is 114 bytes on the wire.  One exception: an inner UDP port on
  // which the tunnel walk opens a tunnel (4789, 6081, 2152, 4754, 3544) moves
  // one up, so that the walk stops at the frame inside.  Empty: plain frames.
  std::vector<TrafficTunnel> tunnels;
};

class TrafficGenerator {
public:
  explicit TrafficGenerator(const TrafficSpec &spec);

  // The next frame (its bytes; captured length = wire length).
  const std::vector<uint8_t> &next();

private:
  struct Flow {
    uint8_t ip_version;
    uint8_t proto;
    uint8_t src[16], dst[16];
    uint16_t sport, dport;
    uint16_t vlan; // 0 = untagged
  };

  Flow flow_from_rule(const ParsedAclRule &rule);
  uint32_t frame_length();
  void build(const Flow &f, uint32_t length, bool fragment);
  void encapsulate(const Flow &f); // frame_ inside spec_.tunnels

  TrafficSpec spec_;
  std::mt19937 rng_;
  std::vector<Flow> flows_;
  size_t next_flow_ = 0; // round_robin
  std::vector<size_t> matchable_rules_; // rules a generated header can match
  std::vector<uint8_t> frame_;
  std::vector<uint8_t> wrapped_; // encapsulate()'s scratch
};

} // namespace gpp
