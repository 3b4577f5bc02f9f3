// ACL rule files: parsing (ClassBench / DPDK test-acl syntax plus an optional
// action) and building the flat lookup blob of acl.h.  Host only.
//
// A rule line:
//   @SRC/LEN  DST/LEN  SPORT_LO : SPORT_HI  DPORT_LO : DPORT_HI  PROTO/MASK  [FLAGS/MASK]  [allow|drop]
// Addresses are IPv4 dotted quads or IPv6 (any inet_pton form); ports are
// decimal; PROTO and MASK are 0x.. hex or decimal (mask 0 = any protocol);
// FLAGS/MASK (two hex numbers) is accepted and ignored, as DPDK's test-acl does.  Rules are numbered from
// 0 in file order, counting rule lines only; blank lines and lines starting
// with '#' are skipped.  A rule without an action allows.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acl.h"

namespace gpp {

struct ParsedAclRule {
  uint8_t ip_version = 4;
  uint8_t src[16] = {}, dst[16] = {};
  uint8_t src_len = 0, dst_len = 0;
  uint16_t sport_lo = 0, sport_hi = 65535, dport_lo = 0, dport_hi = 65535;
  uint8_t proto = 0, proto_mask = 0;
  uint8_t action = GPP_ACL_ALLOW;
};

class AclRuleSet {
public:
  std::vector<ParsedAclRule> rules;
  std::vector<uint8_t> blob; // acl.h layout, 16-byte aligned sections

  // Brute-force first match over `rules` (the test oracle).
  uint32_t first_match(const GppResult &r) const;
};

constexpr size_t kMaxAclRules = 1000000;

// Parses rule text; `name` is used in messages ("NAME:LINE: problem").
std::shared_ptr<const AclRuleSet> parse_acl_rules(const std::string &text, const std::string &name,
                                                  std::string *error);

// Reads and parses a rule file (at most 256 MiB).
std::shared_ptr<const AclRuleSet> load_acl_rules(const std::string &path, std::string *error);

} // namespace gpp
