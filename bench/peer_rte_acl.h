// DPDK rte_acl set up as DPDK's own benchmark, app/test-acl, sets it up, so
// that the harness's rte_acl figures can be checked against dpdk-test-acl's
// (peer_test_acl.h) on the same rules and trace:
//   - the input is test-acl's struct ipv4_5tuple (proto; src, dst, sport,
//     dport in network byte order), the field definitions are its ipv4_defs
//     (same types, sizes, offsets and input indices 0, 2, 3, 4, 4);
//   - rule n (1-based, rule lines in file order) has priority
//     RTE_ACL_MAX_PRIORITY - n, userdata n and every category; the context is
//     built with 3 categories (test-acl's default --bldcat) and classified
//     with 1 (its default --runcat).  So a result is the 1-based first-match
//     rule, 0 = none.
// What differs: test-acl adds rules one at a time from its own parse of the
// text (rte_acl_add_rules per line), the harness adds all rules of
// gpupacket's parse at once; the built trie does not depend on that.
#pragma once

#include <rte_acl.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <gpupacket/packet-result.h>

#include "acl_rules.h"

namespace peers {

// test-acl's struct ipv4_5tuple, field for field.
struct Tuple {
  uint8_t proto;
  uint32_t src, dst;     // network byte order
  uint16_t sport, dport; // network byte order
};
static_assert(sizeof(Tuple) == 16, "test-acl's ipv4_5tuple is 16 bytes");

// The rte_acl input for a parsed packet: ports only where gpupacket has
// them (TCP/UDP with the L4 header captured), as gpp::acl_classify sees it.
Tuple tuple_of(const GppResult &r);
// A parsed-IPv4 record of a tuple (host-order ports), for gpp::acl_classify.
GppResult record_of(const Tuple &t);

struct RteAclDeleter {
  void operator()(rte_acl_ctx *ctx) const { rte_acl_free(ctx); }
};
using RteAcl = std::unique_ptr<rte_acl_ctx, RteAclDeleter>;

// The IPv4 rules of `acl` in a context named `name`, rule i (0-based) as
// n = i + 1; IPv6 rules are left out (the input is IPv4) without renumbering
// the others.  Null and *error on failure.
RteAcl build_rte_acl(const gpp::AclRuleSet &acl, const char *name, std::string *error);

// rte_acl's result (1-based, 0 = none) as gpupacket's rule index (kAclNoRule = none).
inline uint32_t rule_of(uint32_t userdata) { return userdata == 0 ? gpp::kAclNoRule : userdata - 1; }

// Classifies tuples[first, first + count) in bursts of 64, results into
// out[0, count); builds the pointer array per burst, as test-acl does.
void classify(const rte_acl_ctx *ctx, const Tuple *tuples, size_t first, size_t count, uint32_t *out);

} // namespace peers
