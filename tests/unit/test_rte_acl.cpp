// The ACL stage against DPDK's rte_acl, the field's reference classifier, on
// every packet of every capture in ../shared/data/pcap, with the real
// ClassBench sets (the three 10k sets and the three 1k sets): for each IPv4
// packet whose IP header parsed, gpupacket's first-match rule must be the one
// rte_acl answers for the same 5-tuple (bench/peer_rte_acl.h builds rte_acl
// as DPDK's own test-acl does: rule n has priority MAX - n).  rte_acl takes
// IPv4 only; IPv6 packets are counted, not compared.  A second pass uses
// rules drawn from the captures' own addresses and ports, so that most
// packets match a rule other than the catch-all.
//
//   test-acl-rte-acl DATA_DIR
#include <rte_eal.h>
#include <rte_errno.h>

#include <pcap/pcap.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "acl_rules.h"
#include "capture_file.h"
#include "packet_core.h"
#include "pcap_linktype.h"
#include "peer_rte_acl.h"

namespace {

struct Packet {
  std::vector<uint8_t> bytes;
  uint32_t wirelen;
  uint32_t linktype;
  std::string capture;
};

std::vector<Packet> read_captures(const std::string &dir) {
  std::vector<Packet> out;
  for (const std::string &name : gpptest::capture_names(dir)) {
    uint32_t linktype = 0;
    std::vector<gpptest::CapturedPacket> packets;
    std::string error;
    // A capture libpcap cannot open has no packets to compare.
    if (!gpptest::read_pcap(dir + "/" + name, &linktype, &packets, &error)) continue;
    for (gpptest::CapturedPacket &p : packets)
      out.push_back({std::move(p.bytes), p.wirelen, linktype, name});
  }
  return out;
}

// IPv4 rules from the captures' own 5-tuples: exact source and destination,
// the packet's protocol and ports widened to ranges, in capture order, then
// a catch-all.  Rules differ in prefix lengths and ranges so that first
// match, not any match, decides.
std::string rules_from_traffic(const std::vector<GppResult> &records) {
  std::string text;
  size_t n = 0;
  for (const GppResult &r : records) {
    if (r.ip_version != 4 || !(r.ip_flags & GPP_IP_HEADER_PARSED) || n >= 3000) continue;
    const unsigned len_src = 32 - (n % 4) * 8, len_dst = 32 - ((n / 4) % 3) * 8;
    const bool ports = (r.l4_proto == 6 || r.l4_proto == 17) && (r.ip_flags & GPP_IP_L4_PARSED);
    const unsigned sp = ports ? r.sport : 0, dp = ports ? r.dport : 0;
    char line[200];
    std::snprintf(line, sizeof line, "@%u.%u.%u.%u/%u\t%u.%u.%u.%u/%u\t%u : %u\t%u : %u\t0x%02x/0x%s\n",
                  r.src[0], r.src[1], r.src[2], r.src[3], len_src, r.dst[0], r.dst[1], r.dst[2],
                  r.dst[3], len_dst, n % 2 ? 0u : sp, n % 2 ? 65535u : sp,
                  dp >= 10 ? dp - 10 : 0, std::min(dp + 10, 65535u), r.l4_proto,
                  n % 5 == 4 ? "00" : "FF");
    text += line;
    ++n;
  }
  text += "@0.0.0.0/0\t0.0.0.0/0\t0 : 65535\t0 : 65535\t0x00/0x00\n";
  return text;
}

// Compares every IPv4 packet's rule with rte_acl's; returns mismatches.
size_t compare(const std::string &name, const gpp::AclRuleSet &set,
               const std::vector<Packet> &packets) {
  std::string error;
  peers::RteAcl ctx = peers::build_rte_acl(set, name.c_str(), &error);
  if (!ctx) {
    std::printf("FAIL %s: %s\n", name.c_str(), error.c_str());
    return 1;
  }
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
  cfg.acl = set.blob.data();
  cfg.acl_default_action = GPP_ACL_ALLOW;
  size_t compared = 0, matched = 0, v6 = 0, mismatches = 0;
  uint64_t number = 0;
  for (const Packet &p : packets) {
    GppResult r;
    gpp::process_packet(p.bytes.data(), static_cast<uint32_t>(p.bytes.size()), p.wirelen,
                        p.linktype, ++number, 0, cfg, r);
    if (r.ip_version == 6) ++v6;
    if (r.ip_version != 4 || !(r.ip_flags & GPP_IP_HEADER_PARSED)) continue;
    const peers::Tuple tuple = peers::tuple_of(r);
    const uint8_t *data[1] = {reinterpret_cast<const uint8_t *>(&tuple)};
    uint32_t result = 0;
    if (rte_acl_classify(ctx.get(), data, &result, 1, 1) != 0) {
      std::printf("FAIL %s: rte_acl_classify failed\n", name.c_str());
      return mismatches + 1;
    }
    const uint32_t theirs = peers::rule_of(result);
    const auto mine = static_cast<uint32_t>(r.acl_rule);
    ++compared;
    // Not counting the sets' last rule, the catch-all every packet matches.
    matched += theirs != gpp::kAclNoRule && theirs + 1 != set.rules.size();
    if (mine != theirs && ++mismatches <= 5)
      std::printf("MISMATCH %s: %s packet %llu (proto %u, ports %u -> %u, status 0x%x): "
                  "gpupacket rule %d, rte_acl rule %d\n",
                  name.c_str(), p.capture.c_str(), static_cast<unsigned long long>(number),
                  r.l4_proto, r.sport, r.dport, r.status, static_cast<int>(mine),
                  static_cast<int>(theirs));
  }
  std::printf("%s %s: %zu rules, %zu IPv4 packets compared (%zu matching a rule before the last), "
              "%zu IPv6 "
              "not compared, %zu mismatching\n",
              mismatches ? "FAIL" : "ok  ", name.c_str(), set.rules.size(), compared, matched, v6,
              mismatches);
  if (compared == 0) {
    std::printf("FAIL %s: no packet compared\n", name.c_str());
    return 1;
  }
  return mismatches;
}

} // namespace

int main(int argc, char **argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s DATA_DIR\n", argv[0]);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  // EAL without hugepages, PCI or shared files: rte_acl only needs memory.
  const char *eal_args[] = {argv[0], "-l", "0", "--no-huge", "--no-pci", "--no-shconf",
                            "-m", "256", "--log-level=error", "--no-telemetry"};
  if (rte_eal_init(sizeof eal_args / sizeof *eal_args, const_cast<char **>(eal_args)) < 0) {
    std::printf("SKIP: rte_eal_init failed: %s\n", rte_strerror(rte_errno));
    return 77;
  }
  const std::string data = argv[1];
  const std::vector<Packet> packets = read_captures(data + "/pcap");
  if (packets.empty()) {
    std::printf("FAIL: no packets under %s/pcap\n", data.c_str());
    return 1;
  }
  size_t failures = 0;
  for (const char *file : {"classbench_acl1_10k.rules", "classbench_fw1_10k.rules",
                           "classbench_ipc1_10k.rules", "classbench_acl1_1k.rules",
                           "classbench_fw1_1k.rules", "classbench_ipc1_1k.rules"}) {
    std::string error;
    auto set = gpp::load_acl_rules(data + "/acl/" + file, &error);
    if (!set) {
      std::printf("FAIL %s: %s\n", file, error.c_str());
      ++failures;
      continue;
    }
    failures += compare(file, *set, packets);
  }
  // Rules drawn from the traffic: first match among many that match.
  {
    gpp::CoreConfig cfg{};
    std::vector<GppResult> records(packets.size());
    uint64_t number = 0;
    for (size_t i = 0; i < packets.size(); ++i)
      gpp::process_packet(packets[i].bytes.data(), static_cast<uint32_t>(packets[i].bytes.size()),
                          packets[i].wirelen, packets[i].linktype, ++number, 0, cfg, records[i]);
    std::string error;
    auto set = gpp::parse_acl_rules(rules_from_traffic(records), "traffic.rules", &error);
    if (!set) {
      std::printf("FAIL traffic.rules: %s\n", error.c_str());
      ++failures;
    } else {
      failures += compare("rules from the traffic", *set, packets);
    }
  }
  rte_eal_cleanup();
  std::printf(failures ? "FAILED\n" : "PASS\n");
  return failures ? 1 : 0;
}
