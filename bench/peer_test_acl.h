// The harness's rte_acl against DPDK's own ACL benchmark, dpdk-test-acl
// (app/test-acl of DPDK 22.11, built unchanged by
// ../shared/tools/dpdk-test-acl/build), on the ClassBench acl1 1k rules and
// trace: the single-core rates side by side, and the rule each gives every
// trace line, beside gpupacket's own ACL and a brute-force first match.
#pragma once

#include <string>

#include "acl_rules.h"
#include "peer_workers.h"

namespace peers {

struct TestAclOptions {
  std::string binary;   // dpdk-test-acl
  std::string data_dir; // ../shared/data
  double min_seconds = 0.1;
};

// What the cross-check found (rates 0 where it did not get that far).
struct TestAclResult {
  double test_acl_mpps = 0, harness_mpps = 0; // one core each, the same CPU
  size_t lines = 0, differences = 0;           // trace lines; any answer differing on them
};

// Prints the section; false (with the reason printed) when a tool fails or
// any trace line's answers differ.  Runs the harness's side on the pool's
// worker 0 and test-acl on that worker's CPU.
bool test_acl_cross_check(WorkerPool &pool, const gpp::AclRuleSet &acl1k, const TestAclOptions &opt,
                          TestAclResult *result);

} // namespace peers
