// The ACL classifier (gpu/acl.h, gpu/acl_rules.h): rule-file parsing, the
// tuple-space lookup against brute-force first match, and the ACL stage of
// process_packet().
//
// Two oracles: AclRuleSet::first_match (the library's brute force) and
// Reference below, a brute force written here from the rule semantics with its
// own prefix arithmetic, so a shared masking bug cannot hide itself.  The
// rule and trace files come from ../shared/data/acl (see its SOURCES.md),
// found through --shared-data-dir=DIR (set by meson) or GPP_SHARED_DATA_DIR.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

#include "acl_rules.h"
#include "core_harness.h"
#include "shared_data.h"

using namespace gpptest;

namespace {

constexpr uint32_t kNone = gpp::kAclNoRule;

std::string acl_dir() { return test::shared_data_dir() + "/acl"; }

std::shared_ptr<const gpp::AclRuleSet> load(const std::string &name) {
  const std::string dir = acl_dir();
  std::string error;
  auto set = gpp::load_acl_rules(dir + "/" + name, &error);
  if (!set) ADD_FAILURE() << "loading " << name << ": " << error;
  return set;
}

std::shared_ptr<const gpp::AclRuleSet> parse(const std::string &text) {
  std::string error;
  auto set = gpp::parse_acl_rules(text, "test.rules", &error);
  if (!set) ADD_FAILURE() << "parse failed: " << error << "\n" << text;
  return set;
}

// Lines of a trace file, comments and blank lines skipped, split on white space.
std::vector<std::vector<std::string>> trace_lines(const std::string &name) {
  std::vector<std::vector<std::string>> out;
  const std::string path = acl_dir() + "/" + name;
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot open " << path;
    return out;
  }
  std::string line;
  while (std::getline(in, line)) {
    const size_t first = line.find_first_not_of(" \t\r");
    if (first == std::string::npos || line[first] == '#') continue;
    std::istringstream ss(line);
    std::vector<std::string> cols;
    for (std::string c; ss >> c;) cols.push_back(c);
    out.push_back(cols);
  }
  return out;
}

// ---- Headers, records, packets ----------------------------------------------

struct Header {
  uint8_t version = 4;
  uint8_t src[16] = {}, dst[16] = {};
  uint16_t sport = 0, dport = 0;
  uint8_t proto = 6;
};

void set_v4(uint8_t *out, uint32_t host_order) {
  out[0] = static_cast<uint8_t>(host_order >> 24);
  out[1] = static_cast<uint8_t>(host_order >> 16);
  out[2] = static_cast<uint8_t>(host_order >> 8);
  out[3] = static_cast<uint8_t>(host_order);
}

bool has_ports(uint8_t proto) { return proto == kTcp || proto == kUdp; }

// The record process_packet() gives for an unfragmented packet of `h`.
GppResult record_of(const Header &h) {
  GppResult r{};
  r.ip_version = h.version;
  r.ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED;
  r.l4_proto = h.proto;
  std::memcpy(r.src, h.src, 16);
  std::memcpy(r.dst, h.dst, 16);
  if (has_ports(h.proto)) {
    r.sport = h.sport;
    r.dport = h.dport;
  }
  r.acl_rule = -1;
  r.dpi_pattern = -1;
  return r;
}

bool is_ipv6_extension(uint8_t p) { return p == 0 || p == 43 || p == 44 || p == 51 || p == 60; }

Bytes l4_of(const Header &h) {
  if (h.proto == kTcp) {
    TcpSpec t;
    t.sport = h.sport;
    t.dport = h.dport;
    t.flags = kAck;
    t.payload = pattern_bytes(12, 3);
    return tcp(t);
  }
  if (h.proto == kUdp) return udp(h.sport, h.dport, pattern_bytes(12, 5));
  if (h.proto == kIcmp || h.proto == kIcmpv6) return icmp(3, 1, {0, 0, 0, 0, 0x45, 0});
  return pattern_bytes(16, h.proto);
}

// Ethernet / IPv4 or IPv6 / the header's protocol.  IPv6 protocol numbers that
// are extension headers become a hop-by-hop header with no next header.
Bytes packet_of(const Header &h) {
  if (h.version == 4) {
    Ipv4Spec ip;
    ip.src.assign(h.src, h.src + 4);
    ip.dst.assign(h.dst, h.dst + 4);
    ip.proto = h.proto;
    return eth_ipv4(ip, l4_of(h));
  }
  Ipv6Spec ip;
  ip.src.assign(h.src, h.src + 16);
  ip.dst.assign(h.dst, h.dst + 16);
  ip.proto = h.proto;
  if (is_ipv6_extension(h.proto)) {
    ip.exts = {hop_by_hop()};
    ip.proto = kNoNextHeader;
    return eth_ipv6(ip, {});
  }
  return eth_ipv6(ip, l4_of(h));
}

GppResult run(const Bytes &pkt, const gpp::CoreConfig &cfg) {
  return run_core(pkt, static_cast<uint32_t>(pkt.size()), static_cast<uint32_t>(pkt.size()),
                  GPP_LINKTYPE_ETHERNET, cfg);
}

gpp::CoreConfig acl_config(const gpp::AclRuleSet &set, uint8_t default_action) {
  gpp::CoreConfig cfg = make_config();
  cfg.acl = set.blob.data();
  cfg.acl_default_action = default_action;
  return cfg;
}

std::string describe(const Header &h) {
  char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
  const int af = h.version == 4 ? AF_INET : AF_INET6;
  inet_ntop(af, h.src, s, sizeof s);
  inet_ntop(af, h.dst, d, sizeof d);
  std::ostringstream o;
  o << s << " -> " << d << " " << h.sport << " -> " << h.dport << " proto " << int(h.proto);
  return o.str();
}

int32_t as_rule(uint32_t idx) { return idx == kNone ? -1 : static_cast<int32_t>(idx); }

// ---- The independent oracle ---------------------------------------------------

// Brute-force first match with its own prefix masks (two 64-bit words per
// address).  `ports_always`: ClassBench semantics (ports match whatever the
// protocol); otherwise the classifier's (ports are 0 unless TCP or UDP).
class Reference {
public:
  explicit Reference(const std::vector<gpp::ParsedAclRule> &rules) {
    for (const gpp::ParsedAclRule &p : rules) {
      Flat f;
      f.version = p.ip_version;
      load(p.src, p.ip_version, f.src);
      load(p.dst, p.ip_version, f.dst);
      mask(p.src_len, p.ip_version, f.src_mask);
      mask(p.dst_len, p.ip_version, f.dst_mask);
      f.slo = p.sport_lo, f.shi = p.sport_hi, f.dlo = p.dport_lo, f.dhi = p.dport_hi;
      f.proto = p.proto, f.proto_mask = p.proto_mask;
      flat_.push_back(f);
    }
  }

  bool matches(uint32_t idx, const Header &h, bool ports_always = false) const {
    uint64_t s[2], d[2];
    load(h.src, h.version, s);
    load(h.dst, h.version, d);
    return match(flat_[idx], h, s, d, ports_always);
  }

  uint32_t first_match(const Header &h, bool ports_always = false) const {
    uint64_t s[2], d[2];
    load(h.src, h.version, s);
    load(h.dst, h.version, d);
    for (uint32_t i = 0; i < flat_.size(); ++i)
      if (match(flat_[i], h, s, d, ports_always)) return i;
    return kNone;
  }

private:
  struct Flat {
    uint8_t version;
    uint64_t src[2], dst[2], src_mask[2], dst_mask[2];
    uint16_t slo, shi, dlo, dhi;
    uint8_t proto, proto_mask;
  };
  std::vector<Flat> flat_;

  static void load(const uint8_t *a, uint8_t version, uint64_t *w) {
    w[0] = w[1] = 0;
    const int n = version == 4 ? 4 : 16;
    for (int i = 0; i < n; ++i) w[i / 8] |= uint64_t(a[i]) << (56 - 8 * (i % 8));
  }
  static void mask(int len, uint8_t version, uint64_t *m) {
    m[0] = m[1] = 0;
    const int bits = version == 4 ? 32 : 128;
    for (int b = 0; b < len && b < bits; ++b) m[b / 64] |= uint64_t(1) << (63 - b % 64);
  }
  static bool match(const Flat &f, const Header &h, const uint64_t *s, const uint64_t *d,
                    bool ports_always) {
    if (f.version != h.version) return false;
    if (((s[0] ^ f.src[0]) & f.src_mask[0]) || ((s[1] ^ f.src[1]) & f.src_mask[1])) return false;
    if (((d[0] ^ f.dst[0]) & f.dst_mask[0]) || ((d[1] ^ f.dst[1]) & f.dst_mask[1])) return false;
    const bool ports = ports_always || has_ports(h.proto);
    const uint16_t sp = ports ? h.sport : 0, dp = ports ? h.dport : 0;
    if (sp < f.slo || sp > f.shi || dp < f.dlo || dp > f.dhi) return false;
    return (h.proto & f.proto_mask) == (f.proto & f.proto_mask);
  }
};

// ---- Header generation (ClassBench style) -----------------------------------------

using Rng = std::mt19937_64;

// A random address whose first `len` bits are those of `prefix`.
void address_in(const uint8_t *prefix, int len, int addr_len, Rng &rng, uint8_t *out) {
  for (int i = 0; i < addr_len; ++i) {
    const int bits = len - 8 * i;
    const uint8_t r = static_cast<uint8_t>(rng());
    if (bits >= 8) out[i] = prefix[i];
    else if (bits <= 0) out[i] = r;
    else {
      const uint8_t m = static_cast<uint8_t>(0xff << (8 - bits));
      out[i] = static_cast<uint8_t>((prefix[i] & m) | (r & ~m));
    }
  }
  for (int i = addr_len; i < 16; ++i) out[i] = 0;
}

uint16_t port_in(uint16_t lo, uint16_t hi, Rng &rng) {
  switch (rng() % 3) {
  case 0: return lo;
  case 1: return hi;
  default: return static_cast<uint16_t>(lo + rng() % (uint32_t(hi) - lo + 1));
  }
}

const uint8_t kAnyProtos[] = {kTcp, kUdp, kIcmp, kGre};

// A header the rule matches under ClassBench semantics.
Header header_in(const gpp::ParsedAclRule &r, Rng &rng) {
  Header h;
  h.version = r.ip_version;
  const int n = r.ip_version == 4 ? 4 : 16;
  address_in(r.src, r.src_len, n, rng, h.src);
  address_in(r.dst, r.dst_len, n, rng, h.dst);
  h.sport = port_in(r.sport_lo, r.sport_hi, rng);
  h.dport = port_in(r.dport_lo, r.dport_hi, rng);
  if (r.proto_mask == 0) h.proto = kAnyProtos[rng() % 4];
  else h.proto = static_cast<uint8_t>((rng() & ~r.proto_mask) | (r.proto & r.proto_mask));
  return h;
}

Header random_header(uint8_t version, Rng &rng) {
  Header h;
  h.version = version;
  const int n = version == 4 ? 4 : 16;
  for (int i = 0; i < n; ++i) h.src[i] = static_cast<uint8_t>(rng()), h.dst[i] = static_cast<uint8_t>(rng());
  h.sport = static_cast<uint16_t>(rng());
  h.dport = static_cast<uint16_t>(rng());
  h.proto = kAnyProtos[rng() % 4];
  return h;
}

// Runs `h` as a packet through process_packet and checks every view of the
// ACL stage: the record's fields, acl_classify and both brute forces.  Returns
// the rule index (kNone for none).
// The GPU's way (acl_block.cuh): every tuple probed on its own, with no
// bound, in reverse order here, hits combined with min.  It must equal the
// in-order search with its early exits.
uint32_t classify_any_order(const uint8_t *blob, const GppResult &r) {
  if (!gpp::acl_classifiable(r)) return kNone;
  const gpp::AclView v(blob);
  uint32_t best = kNone;
  for (uint32_t t = v.h->tuple_count; t-- > 0;)
    best = std::min(best, gpp::acl_probe(v, t, r, gpp::acl_ports(r), kNone));
  return best;
}

uint32_t check_header(const gpp::AclRuleSet &set, const Reference &ref, const Header &h,
                      const std::string &what) {
  const uint8_t default_action = GPP_ACL_DROP;
  const gpp::CoreConfig cfg = acl_config(set, default_action);
  const GppResult r = run(packet_of(h), cfg);
  const uint32_t brute = set.first_match(r);
  const uint32_t tss = gpp::acl_classify(set.blob.data(), r);
  const uint32_t mine = ref.first_match(h);
  EXPECT_EQ(r.acl_rule, as_rule(brute)) << what << ": " << describe(h);
  EXPECT_EQ(tss, brute) << what << ": " << describe(h);
  EXPECT_EQ(classify_any_order(set.blob.data(), r), brute) << what << ": " << describe(h);
  if (!is_ipv6_extension(h.proto) || h.version == 4) {
    EXPECT_EQ(brute, mine) << what << ": " << describe(h);
    EXPECT_EQ(r.l4_proto, h.proto) << what;
  }
  EXPECT_EQ(r.acl_action, brute == kNone ? default_action : set.rules[brute].action)
      << what << ": " << describe(h);
  return brute;
}

// ---- 1. DPDK test-acl inputs ------------------------------------------------------

void run_dpdk(const std::string &rules_file, const std::string &trace_file, uint8_t version,
              size_t rule_count, size_t line_count, size_t no_match_lines) {
  auto set = load(rules_file);
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), rule_count);
  const Reference ref(set->rules);
  const auto lines = trace_lines(trace_file);
  ASSERT_EQ(lines.size(), line_count);
  size_t matched = 0, unmatched = 0;
  for (size_t n = 0; n < lines.size(); ++n) {
    const auto &c = lines[n];
    ASSERT_EQ(c.size(), 6u) << trace_file << " line " << n;
    Header h;
    h.version = version;
    if (version == 4) {
      set_v4(h.src, static_cast<uint32_t>(std::stoul(c[0], nullptr, 16)));
      set_v4(h.dst, static_cast<uint32_t>(std::stoul(c[1], nullptr, 16)));
    } else {
      ASSERT_EQ(inet_pton(AF_INET6, c[0].c_str(), h.src), 1) << c[0];
      ASSERT_EQ(inet_pton(AF_INET6, c[1].c_str(), h.dst), 1) << c[1];
    }
    h.sport = static_cast<uint16_t>(std::stoul(c[2]));
    h.dport = static_cast<uint16_t>(std::stoul(c[3]));
    h.proto = static_cast<uint8_t>(std::stoul(c[4], nullptr, 0));
    const uint32_t expected = static_cast<uint32_t>(std::stoul(c[5]));
    const std::string what = trace_file + " line " + std::to_string(n) + " (" + describe(h) + ")";

    for (const uint8_t default_action : {uint8_t(GPP_ACL_DROP), uint8_t(GPP_ACL_ALLOW)}) {
      const gpp::CoreConfig cfg = acl_config(*set, default_action);
      const GppResult r = run(packet_of(h), cfg);
      ASSERT_TRUE(r.ip_flags & GPP_IP_HEADER_PARSED) << what;
      EXPECT_EQ(r.acl_rule, as_rule(expected)) << what;
      EXPECT_EQ(r.acl_action, expected == kNone ? default_action : set->rules[expected].action)
          << what;
      EXPECT_EQ(gpp::acl_classify(set->blob.data(), r), expected) << what;
      EXPECT_EQ(set->first_match(r), expected) << what;
      EXPECT_EQ(classify_any_order(set->blob.data(), r), expected) << what;
    }
    // The trace's own 5-tuple, protocol number as written, straight to the classifier.
    const GppResult rec = record_of(h);
    EXPECT_EQ(gpp::acl_classify(set->blob.data(), rec), expected) << what;
    EXPECT_EQ(classify_any_order(set->blob.data(), rec), expected) << what;
    EXPECT_EQ(set->first_match(rec), expected) << what;
    EXPECT_EQ(ref.first_match(h), expected) << what;
    (expected == kNone ? unmatched : matched)++;
  }
  EXPECT_EQ(unmatched, no_match_lines);
  EXPECT_EQ(matched + unmatched, line_count);
}

TEST(AclDpdk, Ipv4Rules5) {
  run_dpdk("dpdk_acl1v4_5_rule", "dpdk_acl1v4_5_trace", 4, 5, 5, 0);
  auto set = load("dpdk_acl1v4_5_rule");
  ASSERT_TRUE(set);
  // Spot-check the parse: rule 3 is @2.1.0.0/16 16.32.1.0/24 1000 : 2000 0 : 65535 0/0.
  const gpp::ParsedAclRule &r = set->rules[3];
  EXPECT_EQ(r.ip_version, 4);
  EXPECT_EQ(Bytes(r.src, r.src + 4), ipv4_addr("2.1.0.0"));
  EXPECT_EQ(r.src_len, 16);
  EXPECT_EQ(Bytes(r.dst, r.dst + 4), ipv4_addr("16.32.1.0"));
  EXPECT_EQ(r.dst_len, 24);
  EXPECT_EQ(r.sport_lo, 1000);
  EXPECT_EQ(r.sport_hi, 2000);
  EXPECT_EQ(r.dport_lo, 0);
  EXPECT_EQ(r.dport_hi, 65535);
  EXPECT_EQ(r.proto_mask, 0);
  EXPECT_EQ(r.action, GPP_ACL_ALLOW);
}

TEST(AclDpdk, Ipv6Rule1) {
  run_dpdk("dpdk_acl1v6_1_rule", "dpdk_acl1v6_1_trace", 6, 1, 2, 1);
  auto set = load("dpdk_acl1v6_1_rule");
  ASSERT_TRUE(set);
  const gpp::ParsedAclRule &r = set->rules[0];
  EXPECT_EQ(r.ip_version, 6);
  EXPECT_EQ(Bytes(r.src, r.src + 16), ipv6_addr("9baa:cead:8000::e300:ff:fe04:c5a8"));
  EXPECT_EQ(r.src_len, 33);
  EXPECT_EQ(r.dst_len, 33);
  EXPECT_EQ(r.dport_lo, 1526);
  EXPECT_EQ(r.dport_hi, 1526);
}

TEST(AclDpdk, NoAclConfiguredLeavesFieldsEmpty) {
  Header h;
  set_v4(h.src, 0x10200101);
  set_v4(h.dst, 0x02010304);
  const GppResult r = run(packet_of(h), make_config());
  EXPECT_EQ(r.acl_rule, -1);
  EXPECT_EQ(r.acl_action, GPP_ACL_NONE);
}

// ---- 2. ClassBench acl1 with its trace ------------------------------------------------

TEST(AclClassBench, Acl1TraceMatchesBruteForceFirstMatch) {
  auto set = load("classbench_acl1_1k.rules");
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), 953u);
  const Reference ref(set->rules);
  const auto lines = trace_lines("classbench_acl1_1k.trace");
  ASSERT_EQ(lines.size(), 11069u);
  const gpp::CoreConfig cfg = acl_config(*set, GPP_ACL_DROP);
  size_t not_first = 0, not_first_classbench = 0, failures = 0;
  for (size_t n = 0; n < lines.size() && failures < 20; ++n) {
    const auto &c = lines[n];
    ASSERT_EQ(c.size(), 7u) << "trace line " << n;
    Header h;
    set_v4(h.src, static_cast<uint32_t>(std::stoul(c[0])));
    set_v4(h.dst, static_cast<uint32_t>(std::stoul(c[1])));
    h.sport = static_cast<uint16_t>(std::stoul(c[2]));
    h.dport = static_cast<uint16_t>(std::stoul(c[3]));
    h.proto = static_cast<uint8_t>(std::stoul(c[4]));
    const uint32_t rule = static_cast<uint32_t>(std::stoul(c[6]));
    ASSERT_LT(rule, set->rules.size());
    const std::string what = "trace line " + std::to_string(n) + " (" + describe(h) + ")";

    const GppResult r = run(packet_of(h), cfg);
    const uint32_t brute = set->first_match(r);
    const bool ok = r.acl_rule == as_rule(brute) && brute == ref.first_match(h) &&
                    gpp::acl_classify(set->blob.data(), r) == brute &&
                    classify_any_order(set->blob.data(), r) == brute && brute <= rule &&
                    ref.matches(rule, h) &&
                    r.acl_action == (brute == kNone ? uint8_t(GPP_ACL_DROP) : set->rules[brute].action);
    if (!ok) {
      ++failures;
      ADD_FAILURE() << what << ": acl_rule " << r.acl_rule << ", first_match " << as_rule(brute)
                    << ", reference " << as_rule(ref.first_match(h)) << ", trace RULE " << rule
                    << (ref.matches(rule, h) ? "" : " (does not match!)");
    }
    if (brute != rule) ++not_first;
    // ClassBench's own semantics (ports compared whatever the protocol).
    const uint32_t cb = ref.first_match(h, true);
    EXPECT_TRUE(cb <= rule && ref.matches(rule, h, true)) << what;
    if (cb != rule) ++not_first_classbench;
  }
  // SOURCES.md: for 282 lines an earlier rule than the generating one matches.
  EXPECT_EQ(not_first, 282u);
  EXPECT_EQ(not_first_classbench, 282u);
}

// ---- 3. Generated headers ---------------------------------------------------------------

void run_generated(const std::string &rules_file, size_t rule_count) {
  auto set = load(rules_file);
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), rule_count);
  const Reference ref(set->rules);
  Rng rng(0x5eed0000 + rule_count);
  size_t headers = 0, own_rule = 0, none = 0;
  for (uint32_t i = 0; i < set->rules.size(); ++i) {
    for (int k = 0; k < 20; ++k, ++headers) {
      const Header h = header_in(set->rules[i], rng);
      const uint32_t got = check_header(*set, ref, h, rules_file + " rule " + std::to_string(i));
      // Under ClassBench semantics the generating rule matches, so the first match is at or before it.
      EXPECT_LE(ref.first_match(h, true), i) << describe(h);
      if (got == i) ++own_rule;
      if (::testing::Test::HasFailure()) return;
    }
  }
  for (int k = 0; k < 20000; ++k, ++headers) {
    const Header h = random_header(4, rng);
    if (check_header(*set, ref, h, rules_file + " random header") == kNone) ++none;
    if (::testing::Test::HasFailure()) return;
  }
  std::printf("[ %s: %zu headers, %zu matched by their own rule, %zu random ones matched nothing ]\n",
              rules_file.c_str(), headers, own_rule, none);
}

TEST(AclClassBench, Fw1GeneratedHeaders) { run_generated("classbench_fw1_1k.rules", 857); }
TEST(AclClassBench, Ipc1GeneratedHeaders) { run_generated("classbench_ipc1_1k.rules", 974); }

// A random 10,000-rule set, IPv4 and IPv6, with addresses drawn from a few
// networks so rules overlap, share tuples and share hash keys.
std::string random_rule_set(Rng &rng, size_t count) {
  std::vector<std::array<uint8_t, 16>> v4_nets(24), v6_nets(12);
  for (auto &n : v4_nets)
    for (auto &b : n) b = static_cast<uint8_t>(rng());
  for (auto &n : v6_nets)
    for (auto &b : n) b = static_cast<uint8_t>(rng());
  // Every length occurs, but most rules use a few common ones, as in real
  // ACLs (and ClassBench): a few hundred tuples rather than thousands.
  auto prefix_len = [&](int max) -> int {
    const uint64_t x = rng() % 100;
    if (x < 3) return 0;
    if (x < 6) return static_cast<int>(rng() % (max + 1));
    const int common4[] = {8, 16, 16, 24, 24, 24, 32, 32, 32, 32};
    const int common6[] = {32, 48, 48, 64, 64, 64, 128, 128, 128, 128};
    return max == 32 ? common4[rng() % 10] : common6[rng() % 10];
  };
  const uint16_t well_known[] = {22, 25, 53, 80, 123, 161, 443, 1521, 3306, 8080};
  auto port_range = [&](uint16_t *lo, uint16_t *hi) {
    const uint64_t x = rng() % 100;
    if (x < 45) *lo = 0, *hi = 65535;
    else if (x < 70) *lo = *hi = rng() % 2 ? well_known[rng() % 10] : static_cast<uint16_t>(rng());
    else if (x < 80) *lo = 1024, *hi = 65535;
    else if (x < 85) *lo = 0, *hi = 1023;
    else if (x < 88) *lo = *hi = 0;
    else {
      uint16_t a = static_cast<uint16_t>(rng()), b = static_cast<uint16_t>(rng());
      if (a > b) std::swap(a, b);
      *lo = a, *hi = b;
    }
  };
  std::ostringstream text;
  text << "# generated: " << count << " rules\n";
  for (size_t i = 0; i < count; ++i) {
    const bool v6 = rng() % 5 == 0;
    const int addr_len = v6 ? 16 : 4;
    char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
    uint8_t sa[16], da[16];
    const int sl = prefix_len(v6 ? 128 : 32), dl = prefix_len(v6 ? 128 : 32);
    const auto &nets = v6 ? v6_nets : v4_nets;
    // Mostly inside a known network (its first 8..addr bits kept), sometimes anywhere.
    const int keep_s = rng() % 5 ? static_cast<int>(8 + rng() % (8 * addr_len - 7)) : 0;
    const int keep_d = rng() % 5 ? static_cast<int>(8 + rng() % (8 * addr_len - 7)) : 0;
    address_in(nets[rng() % nets.size()].data(), keep_s, addr_len, rng, sa);
    address_in(nets[rng() % nets.size()].data(), keep_d, addr_len, rng, da);
    inet_ntop(v6 ? AF_INET6 : AF_INET, sa, s, sizeof s);
    inet_ntop(v6 ? AF_INET6 : AF_INET, da, d, sizeof d);
    uint16_t slo, shi, dlo, dhi;
    port_range(&slo, &shi);
    port_range(&dlo, &dhi);
    const uint64_t p = rng() % 100;
    char proto[32];
    if (p < 30) std::snprintf(proto, sizeof proto, "0x00/0x00");
    else if (p < 90) std::snprintf(proto, sizeof proto, "0x%02x/0xFF", kAnyProtos[rng() % 4]);
    else if (p < 95) std::snprintf(proto, sizeof proto, "6/0xfe"); // 6 and 7
    else std::snprintf(proto, sizeof proto, "16/240");             // 16..31
    text << "@" << s << "/" << sl << "\t" << d << "/" << dl << "\t" << slo << " : " << shi << "\t"
         << dlo << " : " << dhi << "\t" << proto << (rng() % 3 ? "" : "\t0x0000/0x0000")
         << (rng() % 2 ? " drop" : " allow") << "\n";
  }
  return text.str();
}

TEST(AclGenerated, TenThousandRulesAgainstBruteForce) {
  Rng rng(20240611);
  auto set = parse(random_rule_set(rng, 10000));
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), 10000u);
  const Reference ref(set->rules);
  const auto *hdr = reinterpret_cast<const gpp::AclBlobHeader *>(set->blob.data());

  // Headers: half inside a random rule, half near the rules' networks or anywhere.
  std::vector<Header> headers;
  const size_t kHeaders = 200000;
  headers.reserve(kHeaders);
  for (size_t i = 0; i < kHeaders; ++i) {
    const gpp::ParsedAclRule &base = set->rules[rng() % set->rules.size()];
    Header h = header_in(base, rng);
    if (i % 2) {
      // Keep only part of the rule's prefix: often another rule's, often none.
      const int n = h.version == 4 ? 4 : 16;
      const Header r = random_header(h.version, rng);
      address_in(h.src, static_cast<int>(rng() % (8 * n + 1)), n, rng, h.src);
      address_in(h.dst, static_cast<int>(rng() % (8 * n + 1)), n, rng, h.dst);
      if (i % 8 == 1) h = r;
    }
    if (i % 16 == 3) h.proto = static_cast<uint8_t>(rng()); // any protocol number
    headers.push_back(h);
  }
  std::vector<GppResult> records;
  records.reserve(headers.size());
  for (const Header &h : headers) records.push_back(record_of(h));

  using Clock = std::chrono::steady_clock;
  auto seconds_since = [](Clock::time_point t) {
    return std::chrono::duration<double>(Clock::now() - t).count();
  };
  // The reference brute force for every header runs on a second thread while
  // this one times the tuple space search.
  std::vector<uint32_t> mine(records.size());
  double ref_s = 0;
  std::thread reference_thread([&] {
    const auto start = Clock::now();
    for (size_t i = 0; i < records.size(); ++i) mine[i] = ref.first_match(headers[i]);
    ref_s = seconds_since(start);
  });
  std::vector<uint32_t> tss(records.size());
  auto t = Clock::now();
  for (size_t i = 0; i < records.size(); ++i) tss[i] = gpp::acl_classify(set->blob.data(), records[i]);
  const double tss_s = seconds_since(t);
  // ... and every 32nd against the library's (slower) one.
  const size_t kStride = 32;
  std::vector<uint32_t> brute(records.size(), kNone);
  t = Clock::now();
  for (size_t i = 0; i < records.size(); i += kStride) brute[i] = set->first_match(records[i]);
  const double brute_s = seconds_since(t);
  reference_thread.join();

  size_t failures = 0, matched = 0;
  double index_sum = 0;
  for (size_t i = 0; i < records.size() && failures < 20; ++i) {
    const bool sampled_brute = i % kStride == 0;
    const uint32_t any_order = sampled_brute ? classify_any_order(set->blob.data(), records[i]) : mine[i];
    if (tss[i] != mine[i] || (sampled_brute && (brute[i] != mine[i] || any_order != mine[i]))) {
      ++failures;
      ADD_FAILURE() << "header " << i << " (" << describe(headers[i]) << "): acl_classify "
                    << as_rule(tss[i]) << ", reference " << as_rule(mine[i])
                    << (sampled_brute ? ", any order " + std::to_string(as_rule(any_order)) : "")
                    << (i % kStride ? "" : ", first_match " + std::to_string(as_rule(brute[i])));
    }
    if (mine[i] != kNone) ++matched, index_sum += mine[i];
  }
  // Both outcomes well represented.
  EXPECT_GT(matched, records.size() / 4);
  EXPECT_LT(matched, records.size() * 9 / 10);

  // A sample through whole packets (the ACL stage of process_packet).
  for (size_t i = 0; i < headers.size() && !HasFailure(); i += 97) {
    const Header &h = headers[i];
    if (h.version == 6 && is_ipv6_extension(h.proto)) continue;
    const GppResult r = run(packet_of(h), acl_config(*set, GPP_ACL_DROP));
    EXPECT_EQ(r.acl_rule, as_rule(mine[i])) << describe(h);
    EXPECT_EQ(r.acl_action, mine[i] == kNone ? uint8_t(GPP_ACL_DROP) : set->rules[mine[i]].action);
  }

  const size_t sampled = (records.size() + kStride - 1) / kStride;
  std::printf("[ 10000 rules, %u tuples, blob %u bytes; %zu/%zu headers matched, mean first "
              "match %.0f ]\n",
              hdr->tuple_count, hdr->total_size, matched, records.size(),
              matched ? index_sum / matched : 0.0);
  std::printf("[ lookups/s: tuple space search %.2f M, brute force first_match %.3f M "
              "(%.0fx slower), test reference brute force %.3f M ]\n",
              records.size() / tss_s / 1e6, sampled / brute_s / 1e6,
              (brute_s / sampled) / (tss_s / records.size()), records.size() / ref_s / 1e6);
}

// ---- Blob layout ------------------------------------------------------------------------

TEST(AclBlob, LayoutIsConsistent) {
  for (const char *name : {"classbench_acl1_1k.rules", "classbench_fw1_1k.rules",
                           "dpdk_acl1v6_1_rule"}) {
    auto set = load(name);
    ASSERT_TRUE(set);
    const uint8_t *b = set->blob.data();
    const auto *h = reinterpret_cast<const gpp::AclBlobHeader *>(b);
    ASSERT_GE(set->blob.size(), sizeof(gpp::AclBlobHeader));
    EXPECT_EQ(h->magic, gpp::kAclBlobMagic);
    EXPECT_EQ(h->total_size, set->blob.size());
    EXPECT_EQ(h->rule_count, set->rules.size());
    for (uint32_t off : {h->rules_offset, h->tuples_offset, h->slots_offset, h->entries_offset,
                         h->entry_rules_offset}) {
      EXPECT_EQ(off % 16, 0u) << name;
      EXPECT_LE(off, h->total_size) << name;
    }
    const auto *rules = reinterpret_cast<const gpp::AclRule *>(b + h->rules_offset);
    for (uint32_t i = 0; i < h->rule_count; ++i) {
      const gpp::ParsedAclRule &p = set->rules[i];
      EXPECT_TRUE(rules[i].sport_lo == p.sport_lo && rules[i].sport_hi == p.sport_hi &&
                  rules[i].dport_lo == p.dport_lo && rules[i].dport_hi == p.dport_hi &&
                  rules[i].proto == p.proto && rules[i].proto_mask == p.proto_mask &&
                  rules[i].action == p.action)
          << name << " rule " << i;
    }
    const auto *tuples = reinterpret_cast<const gpp::AclTuple *>(b + h->tuples_offset);
    const auto *slots = reinterpret_cast<const gpp::AclSlot *>(b + h->slots_offset);
    const auto *entries = reinterpret_cast<const uint32_t *>(b + h->entries_offset);
    const uint32_t slot_count = (h->entries_offset - h->slots_offset) / sizeof(gpp::AclSlot);
    const uint32_t entry_count = h->rule_count; // every rule in exactly one slot (checked below)
    ASSERT_GE(h->entry_rules_offset, h->entries_offset + entry_count * sizeof(uint32_t)) << name;
    // The long slots' bitmap indexes come last.
    ASSERT_EQ(h->index_offset % 16, 0u) << name;
    ASSERT_GE(h->index_offset, h->entry_rules_offset + entry_count * sizeof(gpp::AclRule)) << name;
    ASSERT_LE(h->index_offset, h->total_size) << name;
    ASSERT_EQ((h->total_size - h->index_offset) % sizeof(uint32_t), 0u) << name;
    // One tag a slot, between the entries' rules and the indexes.
    ASSERT_GE(h->tags_offset, h->entry_rules_offset + entry_count * sizeof(gpp::AclRule)) << name;
    ASSERT_LE(h->tags_offset + slot_count, h->index_offset) << name;
    const uint8_t *tags = b + h->tags_offset;
    const uint32_t index_words = (h->total_size - h->index_offset) / sizeof(uint32_t);
    const auto *entry_rules = reinterpret_cast<const gpp::AclRule *>(b + h->entry_rules_offset);
    std::vector<int> seen(h->rule_count, 0);
    for (uint32_t t = 0; t < h->tuple_count; ++t) {
      const gpp::AclTuple &tu = tuples[t];
      if (t) {
        EXPECT_LT(tuples[t - 1].min_rule, tu.min_rule) << name;
      }
      EXPECT_EQ((tu.slot_mask + 1) & tu.slot_mask, 0u) << name << ": table size not a power of 2";
      ASSERT_LE(tu.slot_offset + tu.slot_mask + 1, slot_count) << name;
      uint32_t used = 0, smallest = kNone;
      for (uint32_t s = 0; s <= tu.slot_mask; ++s) {
        const gpp::AclSlot &slot = slots[tu.slot_offset + s];
        const int addr_len = tu.ip_version == 4 ? 4 : 16;
        EXPECT_EQ(tags[tu.slot_offset + s],
                  slot.count ? gpp::acl_slot_tag(gpp::acl_hash(slot.src, slot.dst, addr_len)) : 0)
            << name << ": tag of slot " << s;
        if (!slot.count) continue;
        ++used;
        ASSERT_LE(slot.first + slot.count, entry_count) << name;
        // Long slots, and only they, have a bitmap index inside the blob.
        EXPECT_EQ(slot.index != 0, slot.count >= gpp::kAclIndexMinRules) << name;
        if (slot.index) {
          ASSERT_LE(slot.index - 1 + sizeof(gpp::AclSlotIndex) / 4, index_words) << name;
          gpp::AclSlotIndex x;
          std::memcpy(&x, b + h->index_offset + 4 * (slot.index - 1), sizeof x);
          EXPECT_EQ(x.words, (slot.count + 31) / 32) << name;
          EXPECT_LE(x.rows + (x.sport_count + x.dport_count + 256) * x.words, index_words) << name;
        }
        for (uint32_t e = 0; e < slot.count; ++e) {
          const uint32_t idx = entries[slot.first + e];
          ASSERT_LT(idx, h->rule_count);
          if (e) {
            EXPECT_LT(entries[slot.first + e - 1], idx) << name;
          }
          const gpp::ParsedAclRule &p = set->rules[idx];
          EXPECT_TRUE(p.ip_version == tu.ip_version &&
                      gpp::acl_coarse_length(p.src_len, p.ip_version) == tu.src_len &&
                      gpp::acl_coarse_length(p.dst_len, p.ip_version) == tu.dst_len)
              << name << " rule " << idx << " in the wrong tuple";
          EXPECT_EQ(0, std::memcmp(&entry_rules[slot.first + e], &rules[idx], sizeof(gpp::AclRule)))
              << name << ": entry rule " << slot.first + e << " is not a copy of rule " << idx;
          ++seen[idx];
          smallest = std::min(smallest, idx);
        }
      }
      EXPECT_LT(used, tu.slot_mask + 1) << name << ": a full table never ends a probe";
      EXPECT_EQ(smallest, tu.min_rule) << name;
    }
    for (uint32_t i = 0; i < h->rule_count; ++i) EXPECT_EQ(seen[i], 1) << name << " rule " << i;
  }
  // Every built set has its own generation.
  auto a = parse("@1.2.3.4/32 5.6.7.8/32 0 : 65535 0 : 65535 6/0xff\n");
  auto b = parse("@1.2.3.4/32 5.6.7.8/32 0 : 65535 0 : 65535 6/0xff\n");
  ASSERT_TRUE(a && b);
  EXPECT_NE(reinterpret_cast<const gpp::AclBlobHeader *>(a->blob.data())->generation,
            reinterpret_cast<const gpp::AclBlobHeader *>(b->blob.data())->generation);
}

// ---- 4. Packets without ports --------------------------------------------------------

// Rules: for each destination network a dport 1:65535 rule first (must never
// match a portless packet), then dport 0:0, then catch-alls.
const char kPortlessRules[] =
    "@10.0.0.0/8  10.1.0.0/16  0 : 65535  1 : 65535  0x06/0xFF drop\n"   // 0
    "@10.0.0.0/8  10.1.0.0/16  0 : 65535  0 : 0      0x06/0xFF allow\n"  // 1
    "@10.0.0.0/8  10.2.0.0/16  0 : 65535  1 : 65535  0x01/0xFF drop\n"   // 2
    "@10.0.0.0/8  10.2.0.0/16  0 : 0      0 : 0      0x01/0xFF allow\n"  // 3
    "@2001:db8::/32  2001:db8:1::/48  0 : 65535  1 : 65535  17/0xff drop\n" // 4
    "@2001:db8::/32  2001:db8:1::/48  0 : 0      0 : 0      17/0xff allow\n" // 5
    "@2001:db8::/32  2001:db8:2::/48  0 : 65535  1 : 65535  58/0xff drop\n" // 6
    "@2001:db8::/32  2001:db8:2::/48  0 : 65535  0 : 0      58/0xff allow\n" // 7
    "@::/0  ::/0  0 : 65535  0 : 65535  0/0 drop\n"                          // 8
    "@0.0.0.0/0  0.0.0.0/0  0 : 65535  0 : 65535  0/0 drop\n";               // 9

struct PortlessCase {
  std::string name;
  Bytes packet;
  int32_t rule;
};

TEST(AclPortless, IcmpFragmentsAndNonIp) {
  auto set = parse(kPortlessRules);
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), 10u);
  const Bytes src4 = ipv4_addr("10.9.8.7"), src6 = ipv6_addr("2001:db8:5::7");

  TcpSpec t;
  t.sport = 40000;
  t.dport = 80;
  const Bytes tcp80 = tcp(t);
  Ipv4Spec ip;
  ip.src = src4;
  ip.dst = ipv4_addr("10.1.2.3");
  ip.proto = kTcp;

  std::vector<PortlessCase> cases;
  cases.push_back({"unfragmented TCP to port 80", eth_ipv4(ip, tcp80), 0});
  {
    Ipv4Spec f = ip;
    f.more_fragments = true;
    cases.push_back({"first IPv4 fragment uses its ports", eth_ipv4(f, tcp80), 0});
    f.frag_offset_bytes = 8;
    // The bytes where ports would be are non-zero, yet the fragment has no ports.
    cases.push_back({"middle IPv4 fragment: ports 0", eth_ipv4(f, pattern_bytes(24, 0x11)), 1});
    f.more_fragments = false;
    f.frag_offset_bytes = 1480;
    cases.push_back({"last IPv4 fragment: ports 0", eth_ipv4(f, pattern_bytes(24, 0x21)), 1});
  }
  {
    Ipv4Spec i = ip;
    i.dst = ipv4_addr("10.2.0.1");
    i.proto = kIcmp;
    // Type 3 code 1 (not 0): they must not be taken for ports.
    cases.push_back({"ICMP: ports 0", eth_ipv4(i, icmp(3, 1, pattern_bytes(8, 1))), 3});
    cases.push_back({"ICMP echo: ports 0", eth_ipv4(i, icmp(8, 0, pattern_bytes(8, 2))), 3});
  }
  {
    Ipv6Spec v;
    v.src = src6;
    v.dst = ipv6_addr("2001:db8:1::9");
    v.proto = kUdp;
    const Bytes udp53 = udp(5353, 53, pattern_bytes(8));
    cases.push_back({"unfragmented IPv6 UDP", eth_ipv6(v, udp53), 4});
    v.exts = {fragment_header(0, true)};
    cases.push_back({"first IPv6 fragment uses its ports", eth_ipv6(v, udp53), 4});
    v.exts = {fragment_header(64, true)};
    cases.push_back({"later IPv6 fragment: ports 0", eth_ipv6(v, pattern_bytes(16, 0x31)), 5});
    v.exts = {hop_by_hop(), fragment_header(64, false)};
    cases.push_back({"last IPv6 fragment after hop-by-hop: ports 0",
                     eth_ipv6(v, pattern_bytes(16, 0x41)), 5});
    v.exts = {};
    v.dst = ipv6_addr("2001:db8:2::9");
    v.proto = kIcmpv6;
    cases.push_back({"ICMPv6: ports 0", eth_ipv6(v, icmp(128, 0, pattern_bytes(8, 3))), 7});
    v.proto = kGre;
    cases.push_back({"IPv6 GRE: only the catch-all", eth_ipv6(v, pattern_bytes(8)), 8});
  }
  {
    Ipv4Spec g = ip;
    g.dst = ipv4_addr("192.0.2.1");
    g.proto = kGre;
    cases.push_back({"IPv4 GRE: only the IPv4 catch-all", eth_ipv4(g, pattern_bytes(8)), 9});
  }
  cases.push_back({"ARP matches nothing", ethernet(kEthArp, pattern_bytes(28)), -1});
  cases.push_back({"802.3 LLC frame matches nothing", Bytes{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11,
                                                            0, 20, 0xaa, 0xaa, 3, 0, 0, 0, 8, 0},
                   -1});

  for (const uint8_t def : {uint8_t(GPP_ACL_DROP), uint8_t(GPP_ACL_ALLOW)}) {
    const gpp::CoreConfig cfg = acl_config(*set, def);
    for (const PortlessCase &c : cases) {
      const GppResult r = run(c.packet, cfg);
      EXPECT_EQ(r.acl_rule, c.rule) << c.name;
      EXPECT_EQ(r.acl_action, c.rule < 0 ? def : set->rules[c.rule].action) << c.name;
      EXPECT_EQ(set->first_match(r), c.rule < 0 ? kNone : uint32_t(c.rule)) << c.name;
    }
  }

  // A hand-made record: ICMP with stray port values still matches with ports 0;
  // TCP whose ports were never parsed (GPP_IP_L4_PARSED clear) likewise.
  Header h;
  std::memcpy(h.src, src4.data(), 4);
  const Bytes d = ipv4_addr("10.2.3.4");
  std::memcpy(h.dst, d.data(), 4);
  h.proto = kIcmp;
  GppResult r = record_of(h);
  r.sport = 7;
  r.dport = 9;
  EXPECT_EQ(gpp::acl_classify(set->blob.data(), r), 3u);
  const Bytes d1 = ipv4_addr("10.1.3.4");
  std::memcpy(r.dst, d1.data(), 4);
  r.l4_proto = kTcp;
  r.sport = 40000;
  r.dport = 80;
  EXPECT_EQ(gpp::acl_classify(set->blob.data(), r), 0u);
  r.ip_flags &= ~GPP_IP_L4_PARSED;
  EXPECT_EQ(gpp::acl_classify(set->blob.data(), r), 1u);
  EXPECT_EQ(set->first_match(r), 1u);
  // No IP header parsed: nothing, even with catch-alls.
  r.ip_flags = 0;
  EXPECT_EQ(gpp::acl_classify(set->blob.data(), r), kNone);
  EXPECT_EQ(set->first_match(r), kNone);
}

TEST(AclPortless, ProtocolMasks) {
  // PROTO bits outside MASK are ignored (7/0xFE is 6 or 7; 0x1f/0xF0 is 16..31).
  auto set = parse("@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 7/0xFE drop\n"
                   "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x1f/0xF0\n"
                   "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 47/255 drop\n");
  ASSERT_TRUE(set);
  const Reference ref(set->rules);
  Header h;
  set_v4(h.src, 0x01020304);
  set_v4(h.dst, 0x05060708);
  const std::pair<uint8_t, uint32_t> cases[] = {{6, 0},     {7, 0},     {17, 1},   {16, 1},
                                                {31, 1},    {32, kNone}, {47, 2},   {1, kNone},
                                                {0, kNone}, {255, kNone}};
  for (const auto &c : cases) {
    h.proto = c.first;
    h.sport = 1000;
    h.dport = 2000;
    const GppResult r = run(packet_of(h), acl_config(*set, GPP_ACL_ALLOW));
    EXPECT_EQ(r.acl_rule, as_rule(c.second)) << "proto " << int(c.first);
    EXPECT_EQ(set->first_match(r), c.second) << "proto " << int(c.first);
    EXPECT_EQ(ref.first_match(h), c.second) << "proto " << int(c.first);
    EXPECT_EQ(r.acl_action, c.second == kNone || c.second == 1 ? GPP_ACL_ALLOW : GPP_ACL_DROP)
        << "proto " << int(c.first);
  }
}

// ---- 5. The parser ---------------------------------------------------------------------

const char kRule[] = "@192.0.2.0/24\t198.51.100.0/24\t0 : 65535\t80 : 80\t";

TEST(AclParser, ActionsAndOptionalFlags) {
  auto set = parse(std::string(kRule) + "0x06/0xFF\n" +                  // 0: no action: allow
                   kRule + "0x06/0xFF drop\n" +                          // 1
                   kRule + "0x06/0xFF allow\n" +                         // 2
                   kRule + "0x06/0xFF\t0x0000/0x0200\n" +                // 3: flags ignored
                   kRule + "0x06/0xFF\t0x1000/0x1000\tdrop\n" +          // 4
                   kRule + "0x06/0xFF 0x0000/0x0000 allow  \r\n" +       // 5: CRLF, trailing blanks
                   "@1.2.3.4/32 5.6.7.8/32 1:2 3:4 17/255 drop\n");      // 6: no spaces round ':'
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), 7u);
  const uint8_t actions[] = {GPP_ACL_ALLOW, GPP_ACL_DROP, GPP_ACL_ALLOW, GPP_ACL_ALLOW,
                             GPP_ACL_DROP,  GPP_ACL_ALLOW, GPP_ACL_DROP};
  for (size_t i = 0; i < 7; ++i) EXPECT_EQ(set->rules[i].action, actions[i]) << "rule " << i;
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(set->rules[i].proto, 6);
    EXPECT_EQ(set->rules[i].proto_mask, 0xff);
    EXPECT_EQ(set->rules[i].dport_lo, 80);
    EXPECT_EQ(set->rules[i].dport_hi, 80);
  }
  const gpp::ParsedAclRule &r6 = set->rules[6];
  EXPECT_EQ(r6.sport_lo, 1);
  EXPECT_EQ(r6.sport_hi, 2);
  EXPECT_EQ(r6.dport_lo, 3);
  EXPECT_EQ(r6.dport_hi, 4);
  EXPECT_EQ(r6.proto, 17);
  EXPECT_EQ(r6.src_len, 32);

  // The flags do not take part in matching: a packet to port 80 hits rule 0
  // whatever its TCP flags; with rule 0 gone (rule 1 first) it is dropped.
  Header h;
  set_v4(h.src, 0xc0000205);
  set_v4(h.dst, 0xc6336409);
  h.sport = 1234;
  h.dport = 80;
  EXPECT_EQ(run(packet_of(h), acl_config(*set, GPP_ACL_NONE)).acl_rule, 0);
  auto dropped = parse(std::string(kRule) + "0x06/0xFF\t0x1000/0x1000\tdrop\n");
  ASSERT_TRUE(dropped);
  const GppResult r = run(packet_of(h), acl_config(*dropped, GPP_ACL_ALLOW));
  EXPECT_EQ(r.acl_rule, 0);
  EXPECT_EQ(r.acl_action, GPP_ACL_DROP);
}

TEST(AclParser, CommentsAndBlankLinesAreNotNumbered) {
  auto set = parse("# header comment\n"
                   "\n"
                   "   \t \n"
                   "@10.0.0.0/8 0.0.0.0/0 0 : 65535 0 : 65535 0/0 drop\n"
                   "   # indented comment\n"
                   "\r\n"
                   "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0/0 allow\n"
                   "  @20.0.0.0/8 0.0.0.0/0 0 : 65535 0 : 65535 0/0 drop\n"
                   "# trailing comment without newline");
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), 3u);
  Header h;
  set_v4(h.src, 0x0a000001);
  set_v4(h.dst, 0x01010101);
  GppResult r = run(packet_of(h), acl_config(*set, GPP_ACL_NONE));
  EXPECT_EQ(r.acl_rule, 0);
  EXPECT_EQ(r.acl_action, GPP_ACL_DROP);
  set_v4(h.src, 0x14000001); // 20.0.0.1: rule 1 (a catch-all) comes first
  r = run(packet_of(h), acl_config(*set, GPP_ACL_NONE));
  EXPECT_EQ(r.acl_rule, 1);
  EXPECT_EQ(r.acl_action, GPP_ACL_ALLOW);
  EXPECT_EQ(set->rules[2].src_len, 8);

  // Line numbers in errors are physical lines, comments and blanks included.
  std::string error;
  EXPECT_FALSE(gpp::parse_acl_rules("# c\n\n@1.2.3.4/32 5.6.7.8/32 0 : 65535 0 : 65535 0/0\n"
                                    "  # c\n@1.2.3.4/32 5.6.7.8/32 0 : 65535 0 : 70000 0/0\n",
                                    "numbered.rules", &error));
  EXPECT_EQ(error.rfind("numbered.rules:5: ", 0), 0u) << error;
}

TEST(AclParser, DecimalAndHexProtocols) {
  auto set = parse("@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 17/255\n"
                   "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x11/0xFF\n"
                   "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0X2f/0Xff\n"
                   "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0/0\n"
                   "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 255/0x0f\n");
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), 5u);
  EXPECT_EQ(set->rules[0].proto, 17);
  EXPECT_EQ(set->rules[0].proto_mask, 255);
  EXPECT_EQ(set->rules[1].proto, 17);
  EXPECT_EQ(set->rules[1].proto_mask, 255);
  EXPECT_EQ(set->rules[2].proto, 47);
  EXPECT_EQ(set->rules[2].proto_mask, 255);
  EXPECT_EQ(set->rules[3].proto_mask, 0);
  EXPECT_EQ(set->rules[4].proto, 255);
  EXPECT_EQ(set->rules[4].proto_mask, 15);
}

TEST(AclParser, Ipv6Forms) {
  auto set = parse("@2001:db8::/32 ::/0 0 : 65535 0 : 65535 0/0\n"
                   "@::ffff:10.0.0.0/104 2001:DB8:0:0:0:0:0:1/128 0 : 65535 0 : 65535 0/0\n"
                   "@2001:0db8:0000:0000:0000:0000:0000:00ff/120 ::1/0 0 : 65535 0 : 65535 0/0\n");
  ASSERT_TRUE(set);
  ASSERT_EQ(set->rules.size(), 3u);
  EXPECT_EQ(set->rules[0].ip_version, 6);
  EXPECT_EQ(set->rules[1].src_len, 104);
  EXPECT_EQ(Bytes(set->rules[1].dst, set->rules[1].dst + 16), ipv6_addr("2001:db8::1"));
  EXPECT_EQ(set->rules[2].src_len, 120);
}

TEST(AclParser, ErrorsNameFileAndLine) {
  const std::string ok = "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff\n";
  const struct {
    const char *what;
    std::string line;
  } cases[] = {
      {"missing '@'", "1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff"},
      {"bad IPv4 address", "@1.2.3.256/24 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff"},
      {"short IPv4 address", "@1.2.3/24 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff"},
      {"bad IPv6 address", "@2001:db8::g/32 ::/0 0 : 65535 0 : 65535 6/0xff"},
      {"no prefix length", "@1.2.3.0 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff"},
      {"empty prefix length", "@1.2.3.0/ 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff"},
      {"non-numeric prefix length", "@1.2.3.0/2x 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff"},
      {"negative prefix length", "@1.2.3.0/-1 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff"},
      {"IPv4 prefix > 32", "@1.2.3.0/24 5.6.7.0/33 0 : 65535 0 : 65535 6/0xff"},
      {"IPv6 prefix > 128", "@2001:db8::/129 ::/0 0 : 65535 0 : 65535 6/0xff"},
      {"missing destination", "@1.2.3.0/24"},
      {"source port > 65535", "@1.2.3.0/24 5.6.7.0/24 0 : 65536 0 : 65535 6/0xff"},
      {"destination port > 65535", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 99999 : 99999 6/0xff"},
      {"source lo > hi", "@1.2.3.0/24 5.6.7.0/24 100 : 99 0 : 65535 6/0xff"},
      {"destination lo > hi", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 443 : 80 6/0xff"},
      {"negative port", "@1.2.3.0/24 5.6.7.0/24 -1 : 65535 0 : 65535 6/0xff"},
      {"missing ':' in a range", "@1.2.3.0/24 5.6.7.0/24 0 65535 0 : 65535 6/0xff"},
      {"IPv4 source, IPv6 destination", "@1.2.3.0/24 2001:db8::/32 0 : 65535 0 : 65535 6/0xff"},
      {"IPv6 source, IPv4 destination", "@2001:db8::/32 1.2.3.0/24 0 : 65535 0 : 65535 6/0xff"},
      {"unknown trailing word", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff permit"},
      {"text after the action", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff drop allow"},
      {"flags after the action",
       "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 6/0xff drop 0x0000/0x0200"},
      {"missing proto/mask", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535"},
      {"missing proto/mask before the action", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 drop"},
      {"proto without mask", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 6"},
      {"proto without mask, then action", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 6 drop"},
      {"proto > 255", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 256/0xff"},
      {"mask > 255", "@1.2.3.0/24 5.6.7.0/24 0 : 65535 0 : 65535 6/0x100"},
  };
  for (const auto &c : cases) {
    std::string error;
    // The bad rule is line 4, after a rule, a comment and a blank line.
    const std::string text = ok + "# comment\n\n" + c.line + "\n" + ok;
    auto set = gpp::parse_acl_rules(text, "bad.rules", &error);
    EXPECT_FALSE(set) << c.what << ": accepted \"" << c.line << "\"";
    EXPECT_EQ(error.rfind("bad.rules:4: ", 0), 0u) << c.what << ": message \"" << error << "\"";
    EXPECT_GT(error.size(), std::string("bad.rules:4: ").size()) << c.what;
  }
}

TEST(AclParser, FilesThatCannotBeRead) {
  std::string error;
  const std::string missing = "/nonexistent-gpp-dir/none.rules";
  EXPECT_FALSE(gpp::load_acl_rules(missing, &error));
  EXPECT_NE(error.find(missing), std::string::npos) << error;

  char dir_template[] = "/tmp/gpp-acl-test-XXXXXX";
  const char *dir = mkdtemp(dir_template);
  ASSERT_TRUE(dir);
  error.clear();
  auto set = gpp::load_acl_rules(dir, &error);
  EXPECT_FALSE(set) << "a directory loaded as " << (set ? set->rules.size() : 0) << " rules";
  EXPECT_NE(error.find(dir), std::string::npos) << error;
  // The message must say what is wrong: not a size (on ext4 a directory's
  // end offset is LLONG_MAX, which used to come out as "... bytes is too large").
  EXPECT_EQ(error.find("too large"), std::string::npos) << error;

  // A file's errors name the file and the line.
  const std::string bad = std::string(dir) + "/bad.rules";
  {
    std::ofstream f(bad);
    f << "# one\n@1.2.3.4/32 5.6.7.8/32 0 : 65535 0 : 65535 6/0xff\n@1.2.3.4/40 x\n";
  }
  error.clear();
  EXPECT_FALSE(gpp::load_acl_rules(bad, &error));
  EXPECT_EQ(error.rfind(bad + ":3: ", 0), 0u) << error;

  // An empty file: an empty set that matches nothing.
  const std::string empty = std::string(dir) + "/empty.rules";
  { std::ofstream f(empty); }
  error.clear();
  auto none = gpp::load_acl_rules(empty, &error);
  ASSERT_TRUE(none) << error;
  EXPECT_TRUE(none->rules.empty());
  Header h;
  set_v4(h.src, 0x0a000001);
  set_v4(h.dst, 0x0a000002);
  const GppResult r = run(packet_of(h), acl_config(*none, GPP_ACL_DROP));
  EXPECT_EQ(r.acl_rule, -1);
  EXPECT_EQ(r.acl_action, GPP_ACL_DROP);

  std::remove(bad.c_str());
  std::remove(empty.c_str());
  rmdir(dir);
}

TEST(AclParser, EmptyTextMatchesNothing) {
  for (const char *text : {"", "\n\n", "# only a comment\n   \n# another\n"}) {
    auto set = parse(text);
    ASSERT_TRUE(set) << "\"" << text << "\"";
    EXPECT_TRUE(set->rules.empty());
    const auto *hdr = reinterpret_cast<const gpp::AclBlobHeader *>(set->blob.data());
    EXPECT_EQ(hdr->magic, gpp::kAclBlobMagic);
    EXPECT_EQ(hdr->rule_count, 0u);
    EXPECT_EQ(hdr->tuple_count, 0u);
    Header h4, h6;
    h6.version = 6;
    h6.proto = kUdp;
    h6.src[0] = 0x20;
    for (const Header &h : {h4, h6}) {
      const GppResult r = run(packet_of(h), acl_config(*set, GPP_ACL_ALLOW));
      EXPECT_EQ(r.acl_rule, -1);
      EXPECT_EQ(r.acl_action, GPP_ACL_ALLOW);
      EXPECT_EQ(set->first_match(r), kNone);
    }
  }
}

} // namespace

TEST(AclParser, FieldsMustBeWholeTokens) {
  std::string error;
  // "6/255drop" is not PROTO/MASK followed by an action, "/+8" no prefix length.
  EXPECT_FALSE(gpp::parse_acl_rules("@1.2.3.0/24 0.0.0.0/0 0 : 65535 0 : 65535 6/255drop\n",
                                    "t.rules", &error));
  EXPECT_NE(error.find("t.rules:1:"), std::string::npos) << error;
  EXPECT_FALSE(gpp::parse_acl_rules("@1.2.3.0/+8 0.0.0.0/0 0 : 65535 0 : 65535 6/255\n",
                                    "t.rules", &error));
  EXPECT_NE(error.find("t.rules:1:"), std::string::npos) << error;
  EXPECT_TRUE(gpp::parse_acl_rules("@1.2.3.0/24 0.0.0.0/0 0 : 65535 0 : 65535 6/255 drop\n",
                                   "t.rules", &error))
      << error;
}
