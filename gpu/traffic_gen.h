// Synthetic traffic for packettestsrc and benchmarks: Ethernet frames of a
// chosen size profile over a fixed set of flows, with valid IPv4 and L4
// checksums, optionally with headers drawn from ACL rules and payloads that
// contain DPI patterns, so the classification stages do real work.
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

  TrafficSpec spec_;
  std::mt19937 rng_;
  std::vector<Flow> flows_;
  size_t next_flow_ = 0; // round_robin
  std::vector<size_t> matchable_rules_; // rules a generated header can match
  std::vector<uint8_t> frame_;
};

} // namespace gpp
