// What the benchmarks run, shared by gpupacket-bench and gpupacket-cpu-peers
// so both measure the same rules and the same traffic: the rule and pattern
// sets, the workloads, the traffic profiles and the cells (profile x
// workload) of the two grids.  No CUDA here.
//
// Two kinds of workload:
// - stress (the grid since the first benchmarks): ClassBench acl1 1k, a
//   derived 10k ACL set, every content of ET Open's emerging-scan.rules
//   (1- and 2-byte literals included) over uniformly random payloads;
// - realistic (what IDS and firewall users load): the real ClassBench 10k
//   sets (acl1, fw1, ipc1) with headers drawn from each set's own rules, and
//   the ET Open 2024 ruleset read as an IDS reads it (one fast pattern per
//   rule), over payloads carved from real captures, HTTP-like text, and a
//   worst case where every payload carries patterns.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "acl_rules.h"
#include "dpi_patterns.h"
#include "packet_core.h"
#include "traffic_gen.h"

namespace gppbench {

struct AclSet {
  std::string path, description;
  std::shared_ptr<const gpp::AclRuleSet> rules;
};

struct DpiSet {
  std::string path, description;
  gpp::DpiSelect select = gpp::DpiSelect::All;
  std::shared_ptr<const gpp::DpiPatternSet> patterns;
  double load_seconds = 0; // reading, selecting and building the automata
};

// The rule and pattern sets of the workloads, loaded from DATA_DIR
// (../shared/data), and the payload sources of the realistic profiles.  The
// derived 10k set is written to a temporary file so that gpupacketproc's
// acl-rules property can load it too; the destructor removes that file.
struct RuleSets {
  // ACL sets by name: "acl1k" (ClassBench acl1 1k), "acl10k" (derived),
  // "acl1_10k", "fw1_10k", "ipc1_10k" (the real ClassBench 10k sets).
  std::map<std::string, AclSet> acl;
  // DPI sets by name: "scan" (every content of emerging-scan.rules),
  // "et2024" (ET Open 2024, one fast pattern per rule).
  std::map<std::string, DpiSet> dpi;
  // Payload sources: "pcap" (the TCP/UDP payloads of every capture in
  // DATA_DIR/pcap, in file order), "http" (generated HTTP/1.1 text).
  std::map<std::string, std::string> payloads;

  const AclSet *find_acl(const char *name) const;
  const DpiSet *find_dpi(const char *name) const;

  RuleSets() = default;
  RuleSets(const RuleSets &) = delete;
  RuleSets &operator=(const RuleSets &) = delete;
  ~RuleSets();

  std::string temp_path; // the derived set's file, removed by the destructor
};

constexpr size_t kAcl10kRules = 10000;

// Whether a rule matches every packet (ClassBench files end with one).
bool catch_all(const gpp::ParsedAclRule &r);

// The derived 10k rule set as rule-file text: the rules of ClassBench acl1,
// fw1 and ipc1 (1k each, in that order) without their catch-all rules, then
// variants of those rules in turn, then the first catch-all, kAcl10kRules in
// all.  Variant v of a rule XORs the bits of each address below its first
// octet and inside its prefix with a value fixed by (v, rule number),
// keeping prefix lengths, ports and protocol.  Deterministic.
std::string derive_acl10k(const std::vector<const gpp::AclRuleSet *> &sources);

// Loads every set; `realistic` false skips the realistic ones (the ET Open
// 2024 automata take seconds to build).
bool load_rule_sets(const std::string &data_dir, RuleSets *out, std::string *error,
                    bool realistic = true);

// HTTP/1.1 requests and responses as text, deterministic, about `bytes` long.
std::string http_text(size_t bytes);

struct Workload {
  const char *name;
  const char *acl; // RuleSets::acl key, or nullptr
  const char *dpi; // RuleSets::dpi key, or nullptr
  bool realistic;
};
// Stress workloads first (lightest first), then the realistic ones.
const std::vector<Workload> &workloads();
const Workload *find_workload(const std::string &name);
// Core settings of a workload: the element's defaults (default RSS key,
// symmetric-rss and verify-l4-checksum off, default action allow) plus the
// workload's host blobs (the GPU engines upload them once per set).
gpp::CoreConfig workload_config(const Workload &w, const RuleSets &sets);

enum class Payload { Random, Pcap, Http, Dense };

// Traffic profiles: frame sizes, and what the payloads hold.
struct Profile {
  const char *name;          // "64B", "imix", "1500B", "pcap-imix", ...
  gpp::TrafficProfile traffic;
  const char *testsrc_nick;  // packettestsrc's profile
  Payload payload;
  bool realistic;
};
const std::vector<Profile> &profiles();
const Profile *find_profile(const std::string &name);

// A grid cell: a profile and a workload measured together.
struct Cell {
  const Profile *profile;
  const Workload *workload;
};
// Stress grid: every stress profile with every stress workload.
std::vector<Cell> stress_cells();
// Realistic grid: 64-byte frames with each real ACL set alone and with the
// full workloads, and each realistic payload profile with ET Open 2024 alone
// and with acl1_10k / fw1_10k (the full workloads).
std::vector<Cell> realistic_cells();
// The full workloads of the realistic grid (ACL + DPI), for the targets.
bool realistic_full(const Workload &w);

// One sentence on each kind of traffic, for the reports.
extern const char *const kTrafficDescription;
extern const char *const kRealisticTrafficDescription;
std::string payload_description(Payload p);

// `packets` frames of a stress profile: 25% of the headers from a random
// acl1-1k rule, 25% from a random rule of the derived 10k set, 50% from 4096
// random flows; 50% of the TCP/UDP payloads carry a random pattern of the
// scan set where it fits.  Deterministic for a seed.
std::vector<std::vector<uint8_t>> make_traffic(const RuleSets &sets, gpp::TrafficProfile profile,
                                               size_t packets, uint32_t seed);

// `packets` frames of a cell.  Stress cells: make_traffic with the profile's
// seed (every stress workload of a profile sees the same frames).  Realistic
// cells: half the headers from the workload's ACL set (when it has one), half
// from 4096 random flows; payloads from the profile's source; with Dense,
// a pattern of the workload's DPI set every 128 bytes of every payload.  The
// frames of n packets are the first n of any larger count.
std::vector<std::vector<uint8_t>> cell_traffic(const RuleSets &sets, const Cell &cell,
                                               size_t packets);
// Cells whose traffic is the same share a key.
std::string traffic_key(const Cell &cell);

} // namespace gppbench
