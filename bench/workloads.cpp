#include "workloads.h"

#include "pcap_linktype.h"
#include "read_file.h"

#include <arpa/inet.h>
#include <pcap/pcap.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>

namespace gppbench {

RuleSets::~RuleSets() {
  if (!temp_path.empty()) unlink(temp_path.c_str());
}

const AclSet *RuleSets::find_acl(const char *name) const {
  auto it = name ? acl.find(name) : acl.end();
  return it == acl.end() ? nullptr : &it->second;
}

const DpiSet *RuleSets::find_dpi(const char *name) const {
  auto it = name ? dpi.find(name) : dpi.end();
  return it == dpi.end() ? nullptr : &it->second;
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

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

bool load_dpi(const std::string &path, gpp::DpiSelect select, const std::string &description,
              DpiSet *out, std::string *error) {
  const auto t = std::chrono::steady_clock::now();
  out->path = path;
  out->select = select;
  out->patterns = gpp::load_dpi_patterns(path, error, select);
  out->load_seconds = seconds_since(t);
  out->description = description + " (" +
                     std::to_string(out->patterns ? out->patterns->patterns.size() : 0) +
                     " patterns, dpi-select=" + gpp::dpi_select_name(select) + ")";
  return out->patterns != nullptr;
}

// The TCP/UDP payloads of every capture in `dir`, in file name order, at
// most kPerCapture bytes of each so that no capture dominates (a DHCP flood
// of mostly zero bytes is 65% of all their payload bytes).
constexpr size_t kPerCapture = 16 << 10;

std::string capture_payloads(const std::string &dir, std::string *error) {
  std::vector<std::string> files;
  if (!gpp::files_in(dir, {".pcap", ".pcapng"}, &files, error)) return "";
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
  std::string out, taken;
  for (const std::string &f : files) {
    char errbuf[PCAP_ERRBUF_SIZE];
    pcap_t *pc = pcap_open_offline((dir + "/" + f).c_str(), errbuf);
    if (!pc) continue; // a capture libpcap cannot read adds nothing
    const uint32_t linktype = gpp::linktype_of(pc);
    pcap_pkthdr *h = nullptr;
    const u_char *bytes = nullptr;
    while (pcap_next_ex(pc, &h, &bytes) == 1) {
      GppResult r{};
      gpp::process_packet(bytes, h->caplen, h->len, linktype, 0, 0, cfg, r);
      if ((r.l4_proto == 6 || r.l4_proto == 17) && r.payload_length &&
          r.payload_offset + r.payload_length <= h->caplen)
        taken.append(reinterpret_cast<const char *>(bytes) + r.payload_offset, r.payload_length);
      if (taken.size() >= kPerCapture) break;
    }
    out += taken.substr(0, kPerCapture);
    taken.clear();
    pcap_close(pc);
  }
  if (out.empty()) *error = dir + ": no TCP/UDP payloads in its captures";
  return out;
}

} // namespace

std::string http_text(size_t bytes) {
  static const char *const kMethods[] = {"GET", "GET", "GET", "POST", "HEAD"};
  static const char *const kWords[] = {
      "index", "images", "static", "api", "v1", "users", "login", "search", "news", "article",
      "assets", "js", "css", "cart", "product", "account", "download", "update", "blog", "page"};
  static const char *const kExt[] = {".html", ".php", ".js", ".css", ".png", ".jpg", "", ".json"};
  static const char *const kAgents[] = {
      "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) "
      "Chrome/120.0.0.0 Safari/537.36",
      "Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/605.1.15 (KHTML, like Gecko) "
      "Version/17.1 Safari/605.1.15",
      "Mozilla/5.0 (X11; Linux x86_64; rv:121.0) Gecko/20100101 Firefox/121.0",
      "curl/7.88.1", "python-requests/2.31.0"};
  static const char *const kHosts[] = {"www.example.com", "cdn.example.net", "api.example.org",
                                       "shop.example.com", "news.example.net"};
  static const char *const kTypes[] = {"text/html; charset=UTF-8", "application/json",
                                       "text/css", "application/javascript", "image/png"};
  std::mt19937 rng(20241201);
  auto pick = [&rng](const auto &list) { return list[rng() % (sizeof list / sizeof list[0])]; };
  auto path = [&] {
    std::string p;
    for (unsigned i = 0, n = 1 + rng() % 3; i < n; ++i) p += std::string("/") + pick(kWords);
    p += pick(kExt);
    if (rng() % 3 == 0) p += "?id=" + std::to_string(rng() % 100000) + "&q=" + pick(kWords);
    return p;
  };
  std::string out;
  while (out.size() < bytes) {
    const std::string method = pick(kMethods);
    out += method + " " + path() + " HTTP/1.1\r\nHost: " + pick(kHosts) +
           "\r\nUser-Agent: " + pick(kAgents) +
           "\r\nAccept: text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
           "\r\nAccept-Language: en-US,en;q=0.5\r\nAccept-Encoding: gzip, deflate, br"
           "\r\nConnection: keep-alive\r\nCookie: session=" +
           std::to_string(rng()) + "; theme=" + pick(kWords) + "\r\n";
    if (method == "POST")
      out += "Content-Type: application/x-www-form-urlencoded\r\nContent-Length: 32\r\n\r\n"
             "user=" + std::string(pick(kWords)) + "&pass=" + std::to_string(rng() % 1000000);
    out += "\r\n";
    std::string body = "<!DOCTYPE html>\n<html><head><title>" + std::string(pick(kWords)) +
                       "</title><link rel=\"stylesheet\" href=\"" + path() +
                       "\"></head>\n<body>\n";
    for (unsigned i = 0, n = 5 + rng() % 40; i < n; ++i) {
      body += rng() % 4 ? "<p>" : "<a href=\"" + path() + "\">";
      for (unsigned k = 0, m = 3 + rng() % 12; k < m; ++k) body += std::string(pick(kWords)) + " ";
      body += rng() % 4 ? "</p>\n" : "</a>\n";
    }
    body += "<script src=\"" + path() + "\"></script>\n</body></html>\n";
    out += "HTTP/1.1 200 OK\r\nServer: nginx/1.24.0\r\nDate: Mon, 02 Dec 2024 10:00:00 GMT"
           "\r\nContent-Type: " + std::string(pick(kTypes)) +
           "\r\nContent-Length: " + std::to_string(body.size()) +
           "\r\nCache-Control: max-age=3600\r\nConnection: keep-alive\r\n\r\n" + body;
  }
  out.resize(bytes);
  return out;
}

bool load_rule_sets(const std::string &data_dir, RuleSets *out, std::string *error,
                    bool realistic) {
  const std::string acl_dir = data_dir + "/acl/";
  auto load_acl = [&](const char *name, const std::string &file, const char *description) {
    AclSet &s = out->acl[name];
    s.path = acl_dir + file;
    s.rules = gpp::load_acl_rules(s.path, error);
    s.description = std::string(description) + " (" +
                    std::to_string(s.rules ? s.rules->rules.size() : 0) + " rules)";
    return s.rules != nullptr;
  };
  if (!load_acl("acl1k", "classbench_acl1_1k.rules", "ClassBench acl1 1k")) return false;
  if (!load_dpi(data_dir + "/dpi/et_open_emerging-scan.rules", gpp::DpiSelect::All,
                "ET Open emerging-scan, every content", &out->dpi["scan"], error))
    return false;
  auto fw1 = gpp::load_acl_rules(acl_dir + "classbench_fw1_1k.rules", error);
  if (!fw1) return false;
  auto ipc1 = gpp::load_acl_rules(acl_dir + "classbench_ipc1_1k.rules", error);
  if (!ipc1) return false;
  const std::string text = derive_acl10k({out->acl["acl1k"].rules.get(), fw1.get(), ipc1.get()});

  const char *tmp = std::getenv("TMPDIR");
  std::string path = std::string(tmp && *tmp ? tmp : "/tmp") + "/gpupacket-bench-acl10k-XXXXXX";
  std::vector<char> name(path.begin(), path.end());
  name.push_back('\0');
  const int fd = mkstemp(name.data());
  if (fd < 0) {
    *error = path + ": cannot create: " + std::strerror(errno);
    return false;
  }
  out->temp_path = name.data();
  const bool written = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  close(fd);
  if (!written) {
    *error = out->temp_path + ": cannot write";
    return false;
  }
  AclSet &derived = out->acl["acl10k"];
  derived.path = out->temp_path;
  derived.rules = gpp::load_acl_rules(derived.path, error);
  derived.description = "derived 10k set (bench/workloads.h)";
  if (!derived.rules) return false;
  if (!realistic) return true;

  if (!load_acl("acl1_10k", "classbench_acl1_10k.rules", "ClassBench acl1 10k") ||
      !load_acl("fw1_10k", "classbench_fw1_10k.rules", "ClassBench fw1 10k") ||
      !load_acl("ipc1_10k", "classbench_ipc1_10k.rules", "ClassBench ipc1 10k"))
    return false;
  if (!load_dpi(data_dir + "/dpi/et_open_2024", gpp::DpiSelect::FastPattern,
                "ET Open 2024, one fast pattern per rule", &out->dpi["et2024"], error))
    return false;
  out->payloads["pcap"] = capture_payloads(data_dir + "/pcap", error);
  if (out->payloads["pcap"].empty()) return false;
  out->payloads["http"] = http_text(1 << 20);
  return true;
}

const std::vector<Workload> &workloads() {
  static const std::vector<Workload> w = {
      {"parse+rss", nullptr, nullptr, false},
      {"+acl1k", "acl1k", nullptr, false},
      {"+acl10k", "acl10k", nullptr, false},
      {"+dpi", nullptr, "scan", false},
      {"full", "acl10k", "scan", false},
      {"+acl1_10k", "acl1_10k", nullptr, true},
      {"+fw1_10k", "fw1_10k", nullptr, true},
      {"+ipc1_10k", "ipc1_10k", nullptr, true},
      {"+et2024", nullptr, "et2024", true},
      {"acl1+et2024", "acl1_10k", "et2024", true},
      {"fw1+et2024", "fw1_10k", "et2024", true},
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
  const AclSet *acl = sets.find_acl(w.acl);
  const DpiSet *dpi = sets.find_dpi(w.dpi);
  c.acl = acl ? acl->rules->blob.data() : nullptr;
  c.acl_default_action = acl ? GPP_ACL_ALLOW : GPP_ACL_NONE;
  c.dpi = dpi ? dpi->patterns->blob.data() : nullptr;
  return c;
}

const std::vector<Profile> &profiles() {
  using T = gpp::TrafficProfile;
  static const std::vector<Profile> p = {
      {"64B", T::Small, "64", Payload::Random, false},
      {"imix", T::Imix, "imix", Payload::Random, false},
      {"1500B", T::Large, "1500", Payload::Random, false},
      {"pcap-imix", T::Imix, "imix", Payload::Pcap, true},
      {"pcap-1500B", T::Large, "1500", Payload::Pcap, true},
      {"http-imix", T::Imix, "imix", Payload::Http, true},
      {"http-1500B", T::Large, "1500", Payload::Http, true},
      {"dense-imix", T::Imix, "imix", Payload::Dense, true},
      {"dense-1500B", T::Large, "1500", Payload::Dense, true},
  };
  return p;
}

const Profile *find_profile(const std::string &name) {
  for (const Profile &p : profiles())
    if (name == p.name) return &p;
  return nullptr;
}

std::vector<Cell> stress_cells() {
  std::vector<Cell> cells;
  for (const Profile &p : profiles())
    for (const Workload &w : workloads())
      if (!p.realistic && !w.realistic) cells.push_back({&p, &w});
  return cells;
}

bool realistic_full(const Workload &w) { return w.realistic && w.acl && w.dpi; }

std::vector<Cell> realistic_cells() {
  std::vector<Cell> cells;
  // The realistic ACL sets on 64-byte packets, and parse+RSS beside them: the
  // ACL stage's cost is read against it (the bench's targets).
  for (const Workload &w : workloads())
    if ((w.realistic && !w.dpi) || (!w.acl && !w.dpi)) cells.push_back({find_profile("64B"), &w});
  for (const Profile &p : profiles())
    for (const Workload &w : workloads())
      if (w.realistic && w.dpi && (p.realistic || (realistic_full(w) && p.traffic == gpp::TrafficProfile::Small)))
        cells.push_back({&p, &w});
  return cells;
}

const char *const kTrafficDescription =
    "IPv4 TCP/UDP frames (gpu/traffic_gen.h): 25% of the headers lie inside a random "
    "ClassBench acl1-1k rule, 25% inside a random rule of the derived 10k set, 50% come from "
    "4096 random flows; random payload bytes, 50% of the TCP/UDP payloads carry a random ET "
    "Open scan pattern where it fits (rarely in 64-byte frames)";

const char *const kRealisticTrafficDescription =
    "IPv4 TCP/UDP frames: 50% of the headers lie inside a random rule of the workload's own "
    "ACL set (ClassBench draws), 50% come from 4096 random flows; payloads by profile: pcap = "
    "slices of the TCP/UDP payloads of the real captures in ../shared/data/pcap (at most 16 KiB "
    "of each), http = "
    "generated HTTP/1.1 requests and responses (headers, HTML), dense = random bytes with an "
    "ET Open 2024 fast pattern every 128 bytes of every payload (the worst case)";

std::string payload_description(Payload p) {
  switch (p) {
  case Payload::Pcap: return "carved from real captures";
  case Payload::Http: return "HTTP-like text";
  case Payload::Dense: return "a pattern every 128 bytes";
  default: return "random bytes";
  }
}

std::vector<std::vector<uint8_t>> make_traffic(const RuleSets &sets, gpp::TrafficProfile profile,
                                               size_t packets, uint32_t seed) {
  gpp::TrafficSpec spec;
  spec.profile = profile;
  spec.flows = 4096;
  spec.dpi = sets.find_dpi("scan")->patterns.get();
  spec.dpi_rate = 0.5;
  spec.seed = seed;
  gpp::TrafficGenerator plain(spec);
  spec.acl_rate = 1;
  spec.acl = sets.find_acl("acl1k")->rules.get();
  spec.seed = seed + 1;
  gpp::TrafficGenerator from_1k(spec);
  spec.acl = sets.find_acl("acl10k")->rules.get();
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

namespace {

// A seed fixed by a name (FNV-1a): the same cell gets the same traffic in
// every program.
uint32_t seed_of(const std::string &name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return h;
}

uint32_t stress_seed(const Profile &p) {
  const auto &all = profiles();
  return static_cast<uint32_t>(&p - all.data()) + 1; // as the grid has always seeded them
}

} // namespace

std::string traffic_key(const Cell &c) {
  if (!c.workload->realistic) return c.profile->name;
  return std::string(c.profile->name) + "/" + (c.workload->acl ? c.workload->acl : "-") + "/" +
         (c.profile->payload == Payload::Dense && c.workload->dpi ? c.workload->dpi : "-");
}

std::vector<std::vector<uint8_t>> cell_traffic(const RuleSets &sets, const Cell &c,
                                               size_t packets) {
  if (!c.workload->realistic)
    return make_traffic(sets, c.profile->traffic, packets, stress_seed(*c.profile));
  const uint32_t seed = seed_of(traffic_key(c));
  gpp::TrafficSpec spec;
  spec.profile = c.profile->traffic;
  spec.flows = 4096;
  spec.seed = seed;
  const char *source = c.profile->payload == Payload::Pcap   ? "pcap"
                       : c.profile->payload == Payload::Http ? "http"
                                                             : nullptr;
  if (source) spec.payload_source = &sets.payloads.at(source);
  const DpiSet *dpi = sets.find_dpi(c.workload->dpi);
  if (c.profile->payload == Payload::Dense && dpi) {
    spec.dpi = dpi->patterns.get();
    spec.dpi_every = 128;
  }
  gpp::TrafficGenerator plain(spec);
  const AclSet *acl = sets.find_acl(c.workload->acl);
  std::unique_ptr<gpp::TrafficGenerator> from_rules;
  if (acl) {
    spec.acl = acl->rules.get();
    spec.acl_rate = 1;
    spec.seed = seed + 1;
    from_rules = std::make_unique<gpp::TrafficGenerator>(spec);
  }
  std::mt19937 pick(seed + 2);
  std::vector<std::vector<uint8_t>> frames;
  frames.reserve(packets);
  for (size_t i = 0; i < packets; ++i)
    frames.push_back(from_rules && pick() % 2 ? from_rules->next() : plain.next());
  return frames;
}

} // namespace gppbench
