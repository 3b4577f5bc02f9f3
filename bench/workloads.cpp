#include "workloads.h"

#include <arpa/inet.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

namespace gppbench {

RuleSets::~RuleSets() {
  if (!acl10k_path.empty()) unlink(acl10k_path.c_str());
}

bool catch_all(const gpp::ParsedAclRule &r) {
  return !r.src_len && !r.dst_len && !r.proto_mask && !r.sport_lo && r.sport_hi == 65535 &&
         !r.dport_lo && r.dport_hi == 65535;
}

namespace {

std::string rule_line(const gpp::ParsedAclRule &r) {
  char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN], line[256];
  const int family = r.ip_version == 4 ? AF_INET : AF_INET6;
  inet_ntop(family, r.src, src, sizeof src);
  inet_ntop(family, r.dst, dst, sizeof dst);
  std::snprintf(line, sizeof line, "@%s/%u\t%s/%u\t%u : %u\t%u : %u\t0x%02X/0x%02X\t%s\n", src,
                r.src_len, dst, r.dst_len, r.sport_lo, r.sport_hi, r.dport_lo, r.dport_hi, r.proto,
                r.proto_mask, r.action == GPP_ACL_DROP ? "drop" : "allow");
  return line;
}

// XORs `noise` into the address bits below the first octet and inside the prefix.
void vary(uint8_t *addr, unsigned prefix_len, unsigned addr_bytes, uint64_t noise) {
  for (unsigned byte = 1; byte < addr_bytes; ++byte, noise >>= 8) {
    const int bits = static_cast<int>(prefix_len) - 8 * static_cast<int>(byte);
    if (bits <= 0) break;
    const uint8_t inside = bits >= 8 ? 0xff : static_cast<uint8_t>(0xff00u >> bits);
    addr[byte] ^= static_cast<uint8_t>(noise) & inside;
  }
}

} // namespace

std::string derive_acl10k(const std::vector<const gpp::AclRuleSet *> &sources) {
  std::vector<const gpp::ParsedAclRule *> base;
  const gpp::ParsedAclRule *last = nullptr;
  for (const auto *s : sources)
    for (const auto &r : s->rules) {
      if (!catch_all(r)) base.push_back(&r);
      else if (!last) last = &r;
    }
  std::string text = "# gpupacket-bench: derived 10k rule set (bench/workloads.h)\n";
  if (base.empty()) return text;
  const size_t specific = last ? kAcl10kRules - 1 : kAcl10kRules;
  for (size_t i = 0; i < specific; ++i) {
    gpp::ParsedAclRule r = *base[i % base.size()];
    const uint64_t variant = i / base.size();
    if (variant) {
      std::mt19937_64 mix(variant * 1000003u + i);
      const unsigned bytes = r.ip_version == 4 ? 4 : 16;
      vary(r.src, r.src_len, bytes, mix());
      vary(r.dst, r.dst_len, bytes, mix());
    }
    text += rule_line(r);
  }
  if (last) text += rule_line(*last);
  return text;
}

bool load_rule_sets(const std::string &data_dir, RuleSets *out, std::string *error) {
  out->acl1k_path = data_dir + "/acl/classbench_acl1_1k.rules";
  out->dpi_path = data_dir + "/dpi/et_open_emerging-scan.rules";
  out->acl1k = gpp::load_acl_rules(out->acl1k_path, error);
  if (!out->acl1k) return false;
  out->dpi = gpp::load_dpi_patterns(out->dpi_path, error);
  if (!out->dpi) return false;
  auto fw1 = gpp::load_acl_rules(data_dir + "/acl/classbench_fw1_1k.rules", error);
  if (!fw1) return false;
  auto ipc1 = gpp::load_acl_rules(data_dir + "/acl/classbench_ipc1_1k.rules", error);
  if (!ipc1) return false;
  const std::string text = derive_acl10k({out->acl1k.get(), fw1.get(), ipc1.get()});

  const char *tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/gpupacket-bench-acl10k-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) {
    *error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  out->acl10k_path = name.data();
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written) {
    *error = out->acl10k_path + ": cannot write";
    return false;
  }
  out->acl10k = gpp::load_acl_rules(out->acl10k_path, error);
  return out->acl10k != nullptr;
}

const std::vector<Workload> &workloads() {
  static const std::vector<Workload> w = {
      {"parse+rss", false, false, false},
      {"+acl1k", true, false, false},
      {"+acl10k", false, true, false},
      {"+dpi", false, false, true},
      {"full", false, true, true},
  };
  return w;
}

const Workload *find_workload(const std::string &name) {
  for (const Workload &w : workloads())
    if (name == w.name) return &w;
  return nullptr;
}

gpp::CoreConfig workload_config(const Workload &w, const RuleSets &sets) {
  gpp::CoreConfig c{};
  std::memcpy(c.rss_key, gpp::kDefaultRssKey, sizeof c.rss_key);
  const gpp::AclRuleSet *acl = w.acl10k ? sets.acl10k.get() : w.acl1k ? sets.acl1k.get() : nullptr;
  c.acl = acl ? acl->blob.data() : nullptr;
  c.acl_default_action = acl ? GPP_ACL_ALLOW : GPP_ACL_NONE;
  c.dpi = w.dpi ? sets.dpi->blob.data() : nullptr;
  return c;
}

const std::vector<Profile> &profiles() {
  static const std::vector<Profile> p = {
      {"64B", gpp::TrafficProfile::Small, "64"},
      {"imix", gpp::TrafficProfile::Imix, "imix"},
      {"1500B", gpp::TrafficProfile::Large, "1500"},
  };
  return p;
}

const char *const kTrafficDescription =
    "IPv4 TCP/UDP frames (gpu/traffic_gen.h): 25% of the headers lie inside a random "
    "ClassBench acl1-1k rule, 25% inside a random rule of the derived 10k set, 50% come from "
    "4096 random flows; 50% of the TCP/UDP payloads carry a random ET Open scan pattern where "
    "it fits (rarely in 64-byte frames)";

std::vector<std::vector<uint8_t>> make_traffic(const RuleSets &sets, gpp::TrafficProfile profile,
                                               size_t packets, uint32_t seed) {
  gpp::TrafficSpec spec;
  spec.profile = profile;
  spec.flows = 4096;
  spec.dpi = sets.dpi.get();
  spec.dpi_rate = 0.5;
  spec.seed = seed;
  gpp::TrafficGenerator plain(spec);
  spec.acl_rate = 1;
  spec.acl = sets.acl1k.get();
  spec.seed = seed + 1;
  gpp::TrafficGenerator from_1k(spec);
  spec.acl = sets.acl10k.get();
  spec.seed = seed + 2;
  gpp::TrafficGenerator from_10k(spec);
  std::mt19937 pick(seed + 3);
  std::vector<std::vector<uint8_t>> frames;
  frames.reserve(packets);
  for (size_t i = 0; i < packets; ++i) {
    const uint32_t quarter = pick() % 4;
    frames.push_back(quarter == 0 ? from_1k.next() : quarter == 1 ? from_10k.next() : plain.next());
  }
  return frames;
}

} // namespace gppbench
