// What the benchmark grid runs, shared by gpupacket-bench and
// gpupacket-cpu-peers so both measure the same rules and the same traffic:
// the rule sets (ClassBench acl1 1k, a derived 10k set, ET Open scan
// patterns), the five workloads and the synthetic traffic of the three
// profiles.  No CUDA here.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "acl_rules.h"
#include "dpi_patterns.h"
#include "packet_core.h"
#include "traffic_gen.h"

namespace gppbench {

// The rule and pattern sets of the workloads, loaded from DATA_DIR
// (../shared/data).  The 10k set is derived (see derive_acl10k) and written
// to a temporary file so that gpupacketproc's acl-rules property can load it
// too; the destructor removes that file.
struct RuleSets {
  std::shared_ptr<const gpp::AclRuleSet> acl1k, acl10k;
  std::shared_ptr<const gpp::DpiPatternSet> dpi;
  std::string acl1k_path, acl10k_path, dpi_path;

  RuleSets() = default;
  RuleSets(const RuleSets &) = delete;
  RuleSets &operator=(const RuleSets &) = delete;
  ~RuleSets();
};

constexpr size_t kAcl10kRules = 10000;

// Whether a rule matches every packet (ClassBench files end with one).
bool catch_all(const gpp::ParsedAclRule &r);

// The 10k rule set as rule-file text: the rules of ClassBench acl1, fw1 and
// ipc1 (1k each, in that order) without their catch-all rules, then variants
// of those rules in turn, then the first catch-all, kAcl10kRules in all.
// Variant v of a rule XORs the bits of each address below its first octet
// and inside its prefix with a value fixed by (v, rule number), keeping
// prefix lengths, ports and protocol.  Deterministic.
std::string derive_acl10k(const std::vector<const gpp::AclRuleSet *> &sources);

bool load_rule_sets(const std::string &data_dir, RuleSets *out, std::string *error);

// The workloads of the grid, lightest first.
struct Workload {
  const char *name;
  bool acl1k, acl10k, dpi;
};
const std::vector<Workload> &workloads();
const Workload *find_workload(const std::string &name);
// Core settings of a workload: the element's defaults (default RSS key,
// symmetric-rss and verify-l4-checksum off, default action allow) plus the
// workload's host blobs (the GPU engines upload them once per set).
gpp::CoreConfig workload_config(const Workload &w, const RuleSets &sets);

// The frame-size profiles of the grid.
struct Profile {
  const char *name;          // "64B", "imix", "1500B"
  gpp::TrafficProfile traffic;
  const char *testsrc_nick;  // packettestsrc's profile
};
const std::vector<Profile> &profiles();

// One sentence on the traffic mix, for the reports.
extern const char *const kTrafficDescription;

// `packets` frames of a profile: 25% of the headers from a random acl1-1k
// rule, 25% from a random rule of the 10k set, 50% from 4096 random flows;
// 50% of the TCP/UDP payloads carry a random pattern of the DPI set where it
// fits.  Deterministic for a seed.
std::vector<std::vector<uint8_t>> make_traffic(const RuleSets &sets, gpp::TrafficProfile profile,
                                               size_t packets, uint32_t seed);

} // namespace gppbench
