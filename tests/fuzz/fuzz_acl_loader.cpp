// Fuzzes the ACL rule loader (gpu/acl_rules.cpp) and the lookup it builds:
// any text is either refused with a reason or loaded, and for a loaded set
// the tuple-space lookup (acl_classify, what CPU and GPU run) must give the
// brute-force first match (AclRuleSet::first_match) for headers at the
// corners of every rule (its prefixes' first and last addresses, its port
// bounds and one past them, its protocol) and for random headers.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>

#include "acl.h"
#include "acl_rules.h"

namespace {

[[noreturn]] void fail(const std::string &detail) {
  std::fprintf(stderr, "FUZZ FAILURE: acl: %s\n", detail.c_str());
  std::abort();
}

// Sets the bits of `addr` after the first `len` from `fill` (0 or 0xff).
void fill_host_bits(uint8_t *addr, int len, int addr_len, uint8_t fill) {
  for (int bit = len; bit < addr_len * 8; ++bit) {
    const uint8_t mask = uint8_t(0x80u >> (bit % 8));
    addr[bit / 8] = fill ? uint8_t(addr[bit / 8] | mask) : uint8_t(addr[bit / 8] & ~mask);
  }
}

void check(const gpp::AclRuleSet &set, const GppResult &r) {
  const uint32_t fast = gpp::acl_classify(set.blob.data(), r);
  const uint32_t brute = set.first_match(r);
  if (fast != brute)
    fail("acl_classify " + std::to_string(fast) + ", first match " + std::to_string(brute) +
         " (ip version " + std::to_string(r.ip_version) + ", proto " + std::to_string(r.l4_proto) +
         ", ports " + std::to_string(r.sport) + " -> " + std::to_string(r.dport) + ")");
}

GppResult header(uint8_t version, uint8_t proto) {
  GppResult r{};
  r.ip_version = version;
  r.ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED;
  r.l4_proto = proto;
  r.acl_rule = -1;
  r.dpi_pattern = -1;
  return r;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;
  auto set = gpp::parse_acl_rules(text, "fuzz.rules", &error);
  if (!set) {
    if (error.empty()) fail("refused without a reason");
    return 0;
  }
  std::mt19937 rng(static_cast<uint32_t>(std::hash<std::string>()(text)));
  const size_t probed = std::min<size_t>(set->rules.size(), 64);
  for (size_t i = 0; i < probed; ++i) {
    const gpp::ParsedAclRule &x = set->rules[i];
    const int addr_len = x.ip_version == 4 ? 4 : 16;
    for (int corner = 0; corner < 4; ++corner) {
      GppResult r = header(x.ip_version, x.proto_mask ? x.proto : uint8_t(rng()));
      std::memcpy(r.src, x.src, addr_len);
      std::memcpy(r.dst, x.dst, addr_len);
      fill_host_bits(r.src, x.src_len, addr_len, corner & 1 ? 0xff : 0);
      fill_host_bits(r.dst, x.dst_len, addr_len, corner & 2 ? 0xff : 0);
      const uint16_t sports[] = {x.sport_lo, x.sport_hi, uint16_t(x.sport_lo - 1),
                                 uint16_t(x.sport_hi + 1)};
      const uint16_t dports[] = {x.dport_lo, x.dport_hi, uint16_t(x.dport_lo - 1),
                                 uint16_t(x.dport_hi + 1)};
      for (uint16_t sp : sports)
        for (uint16_t dp : dports) {
          r.sport = sp;
          r.dport = dp;
          check(*set, r);
        }
      r.ip_flags = GPP_IP_HEADER_PARSED; // a fragment: no ports
      r.sport = r.dport = 0;
      check(*set, r);
    }
  }
  for (int n = 0; n < 32; ++n) {
    const uint8_t protos[] = {6, 17, 1, 58, uint8_t(rng())};
    GppResult r = header(rng() % 2 ? 4 : 6, protos[rng() % 5]);
    for (uint8_t &b : r.src) b = uint8_t(rng());
    for (uint8_t &b : r.dst) b = uint8_t(rng());
    r.sport = uint16_t(rng());
    r.dport = uint16_t(rng());
    check(*set, r);
  }
  return 0;
}
