// Fuzzes the packet core (gpu/packet_core.h) across link types, with the ACL
// and DPI stages on, with and without the tunnel walk (kFlagDecap), against
// slow reference code:
// - every record keeps the core's promises (core_harness's record_violations,
//   and with the walk tunnel_violations) on an exact-size heap copy of the
//   frame, so ASan sees any read past caplen, and again on a shorter capture
//   of the same frame; with the walk, the record without it (decap 0, or no
//   GppTunnelInfo) is the one of the core without a tunnel argument;
// - the RSS hash equals a bit-by-bit Toeplitz hash of the record's own
//   addresses and ports (either order with symmetric RSS), and the core's
//   table-driven hash equals its direct one;
// - the ACL result equals the brute-force first match (AclRuleSet::first_match)
//   and the DPI result the naive scan of the payload (naive_scan);
// - the stages change nothing but their own fields.
// Input layout: fuzz_common.h.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "acl_rules.h"
#include "core_harness.h"
#include "dpi_patterns.h"
#include "fuzz_common.h"
#include "packet_core.h"

namespace {

// Small sets with rules and patterns the seeds' traffic hits.
const char kRules[] =
    "@10.0.0.0/8 0.0.0.0/0 0 : 65535 0 : 65535 0x06/0xFF drop\n"
    "@0.0.0.0/0 0.0.0.0/0 0 : 65535 53 : 53 0x11/0xFF allow\n"
    "@0.0.0.0/0 192.168.0.0/16 1024 : 65535 80 : 443 0/0 drop\n"
    "@2001:db8::/32 ::/0 0 : 65535 0 : 65535 0/0 drop\n"
    "@::/0 ::/0 0 : 65535 22 : 22 0x06/0xFF allow\n"
    "@0.0.0.0/0 0.0.0.0/0 0 : 65535 0 : 65535 0x01/0xFF drop\n";
const char kPatterns[] =
    "GET \n"
    "HTTP/1.\n"
    "|00 00 00|\n"
    "alert tcp any any -> any any (content:\"host:\"; nocase; sid:1;)\n"
    "SSH-\n"
    "a\n";

struct Sets {
  std::shared_ptr<const gpp::AclRuleSet> acl;
  std::shared_ptr<const gpp::DpiPatternSet> dpi;
};

const Sets &sets() {
  static const Sets s = [] {
    Sets out;
    std::string error;
    out.acl = gpp::parse_acl_rules(kRules, "fuzz.rules", &error);
    out.dpi = gpp::parse_dpi_patterns(kPatterns, "fuzz.patterns", &error);
    if (!out.acl || !out.dpi) {
      std::fprintf(stderr, "fuzz sets: %s\n", error.c_str());
      std::abort();
    }
    return out;
  }();
  return s;
}

[[noreturn]] void fail(const char *what, const std::string &detail) {
  std::fprintf(stderr, "FUZZ FAILURE: %s: %s\n", what, detail.c_str());
  std::abort();
}

// With `tunnel`, the core gets a GppTunnelInfo (and walks with cfg.decap).
GppResult parse(const uint8_t *frame, uint32_t caplen, uint32_t wirelen, uint32_t linktype,
                const gpp::CoreConfig &cfg, const gpp::detail::RssTable *table = nullptr,
                GppTunnelInfo *tunnel = nullptr) {
  // An exact-size heap block: one byte past caplen is an ASan report.
  std::unique_ptr<uint8_t[]> copy(new uint8_t[caplen ? caplen : 1]);
  if (caplen) std::memcpy(copy.get(), frame, caplen);
  GppResult r;
  gpp::process_packet(copy.get(), caplen, wirelen, linktype, 7, 1700000000000000000ull, cfg, r,
                      gpp::ClassifyStages::kInline, table, tunnel);
  return r;
}

bool same(const GppResult &a, const GppResult &b) { return std::memcmp(&a, &b, sizeof a) == 0; }
bool same(const GppTunnelInfo &a, const GppTunnelInfo &b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void check_rss(const GppResult &r, const gpp::CoreConfig &cfg) {
  if (r.ip_version != 4 && r.ip_version != 6) return;
  if (r.status & GPP_STATUS_BAD_IP_VERSION) return;
  const bool with_ports = (r.l4_proto == 6 || r.l4_proto == 17) &&
                          (r.ip_flags & GPP_IP_L4_PARSED) && !(r.ip_flags & GPP_IP_FRAGMENT);
  const gpptest::Bytes src = gpptest::addr_of(r.src, r.ip_version);
  const gpptest::Bytes dst = gpptest::addr_of(r.dst, r.ip_version);
  const uint16_t sp = with_ports ? r.sport : 0, dp = with_ports ? r.dport : 0;
  const uint32_t forward = gpptest::expected_rss(src, dst, with_ports, sp, dp, cfg.rss_key);
  const uint32_t reverse = gpptest::expected_rss(dst, src, with_ports, dp, sp, cfg.rss_key);
  if (r.rss_hash != forward && !(cfg.symmetric_rss && r.rss_hash == reverse))
    fail("rss", "hash " + std::to_string(r.rss_hash) + ", reference " + std::to_string(forward));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2) return 0;
  const uint32_t linktype = gppfuzz::kLinktypes[data[0] % gppfuzz::kLinktypeCount];
  const uint8_t flags = data[1];
  const uint8_t *frame = data + 2;
  const uint32_t caplen = static_cast<uint32_t>(size - 2);
  const uint32_t wirelen = caplen + (flags >> 4); // sometimes longer on the wire

  gpp::CoreConfig cfg = gpptest::make_config(flags & gppfuzz::kFlagVerifyL4,
                                             flags & gppfuzz::kFlagSymmetric);
  cfg.vxlan_ports[0] = gpp::kVxlanPort;
  if (flags & gppfuzz::kFlagVxlanLinux) cfg.vxlan_ports[1] = 8472;
  const bool decap = flags & gppfuzz::kFlagDecap;
  cfg.decap = decap;
  GppTunnelInfo walked{};
  GppTunnelInfo *const tunnel = decap ? &walked : nullptr;
  const GppResult plain = parse(frame, caplen, wirelen, linktype, cfg, nullptr, tunnel);
  std::string broken = gpptest::record_violations(plain, caplen, wirelen);
  if (broken.empty()) broken = gpptest::tunnel_violations(plain, walked, decap);
  if (!broken.empty()) fail("record", broken);
  if (decap) { // without the walk: the record of the core without a tunnel argument
    gpp::CoreConfig off = cfg;
    off.decap = 0;
    GppTunnelInfo none{};
    const GppResult before = parse(frame, caplen, wirelen, linktype, off);
    if (!same(before, parse(frame, caplen, wirelen, linktype, off, nullptr, &none)) ||
        !same(none, GppTunnelInfo{}))
      fail("decap 0", "a GppTunnelInfo changed the record, or was filled");
    if (!same(before, parse(frame, caplen, wirelen, linktype, cfg)))
      fail("decap 1", "without a GppTunnelInfo, the record differs from decap 0's");
  }
  if (!gpp::linktype_supported(linktype) && plain.ip_version != 0)
    fail("linktype", "an unsupported link type gave an IP record");
  check_rss(plain, cfg);
  static const std::unique_ptr<gpp::detail::RssTable> table = [] {
    auto t = std::make_unique<gpp::detail::RssTable>();
    t->fill(gpp::kDefaultRssKey, 0, 1); // the key make_config() sets
    return t;
  }();
  GppTunnelInfo tabled_walk{};
  const GppResult tabled = parse(frame, caplen, wirelen, linktype, cfg, table.get(),
                                 decap ? &tabled_walk : nullptr);
  if (!same(tabled, plain) || !same(tabled_walk, walked)) fail("rss table", "records differ");

  // A shorter capture of the same frame keeps the promises too.
  const uint32_t cut = caplen ? (flags * 131u + caplen) % caplen : 0;
  GppTunnelInfo cut_walk{};
  const GppResult cut_record = parse(frame, cut, wirelen, linktype, cfg, nullptr, decap ? &cut_walk : nullptr);
  broken = gpptest::record_violations(cut_record, cut, wirelen);
  if (broken.empty()) broken = gpptest::tunnel_violations(cut_record, cut_walk, decap);
  if (!broken.empty()) fail(("record, cut at " + std::to_string(cut)).c_str(), broken);

  // The classification stages against their slow references.
  const Sets &s = sets();
  cfg.acl = s.acl->blob.data();
  cfg.acl_default_action = GPP_ACL_ALLOW;
  cfg.dpi = s.dpi->blob.data();
  GppTunnelInfo staged_walk{};
  GppResult staged = parse(frame, caplen, wirelen, linktype, cfg, nullptr, decap ? &staged_walk : nullptr);
  if (!same(staged_walk, walked)) fail("stages", "changed the tunnel record");
  const uint32_t brute = s.acl->first_match(plain);
  const int32_t want_rule = brute == gpp::kAclNoRule ? -1 : static_cast<int32_t>(brute);
  const uint8_t want_action =
      brute == gpp::kAclNoRule ? uint8_t(GPP_ACL_ALLOW) : s.acl->rules[brute].action;
  if (staged.acl_rule != want_rule || staged.acl_action != want_action)
    fail("acl", "rule " + std::to_string(staged.acl_rule) + ", first match " +
                    std::to_string(want_rule));
  int32_t naive_pattern = -1;
  uint32_t naive_hits = 0;
  if (plain.payload_length > 0)
    s.dpi->naive_scan(frame + plain.payload_offset, plain.payload_length, &naive_pattern,
                      &naive_hits);
  if (staged.dpi_pattern != naive_pattern || staged.dpi_hits != naive_hits)
    fail("dpi", "pattern " + std::to_string(staged.dpi_pattern) + " hits " +
                    std::to_string(staged.dpi_hits) + ", naive " + std::to_string(naive_pattern) +
                    " / " + std::to_string(naive_hits));
  // Nothing else changes: clear the stages' fields and compare.
  staged.acl_rule = -1;
  staged.acl_action = 0;
  staged.dpi_pattern = -1;
  staged.dpi_hits = 0;
  staged.dpi_scanned = 0;
  if (!same(staged, plain)) fail("stages", "changed other fields");
  return 0;
}
