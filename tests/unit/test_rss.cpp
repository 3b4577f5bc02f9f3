// Toeplitz RSS hash against the Intel/Microsoft verification vectors of
// ../shared/data/rss/toeplitz_vectors.csv, read at run time.  The data
// directory comes from the test's command line (--shared-data-dir=DIR, set by
// meson) or the GPP_SHARED_DATA_DIR environment variable.
#include <gtest/gtest.h>

#include <memory>
#include <random>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "core_harness.h"
#include "shared_data.h"

using namespace gpptest;

namespace {


struct RssVector {
  std::string src_text, dst_text;
  Bytes src, dst;
  uint16_t sport, dport;
  uint32_t hash_ip_only, hash_ip_l4;
  bool v6;
};

// Parses the CSV; adds a test failure (and returns what it has) on any problem.
std::vector<RssVector> load_vectors() {
  std::vector<RssVector> out;
  const std::string dir = test::shared_data_dir();
  const std::string path = dir + "/rss/toeplitz_vectors.csv";
  std::ifstream in(path);
  if (!in) {
    ADD_FAILURE() << "cannot open " << path;
    return out;
  }
  std::string line;
  int line_no = 0;
  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> cols;
    std::stringstream ss(line);
    std::string col;
    while (std::getline(ss, col, ',')) cols.push_back(col);
    if (cols.size() != 6) {
      ADD_FAILURE() << path << ":" << line_no << ": expected 6 columns, got " << cols.size();
      continue;
    }
    if (cols[0] == "src_addr") continue; // a header line without '#'
    RssVector v;
    v.v6 = cols[0].find(':') != std::string::npos;
    v.src_text = cols[0];
    v.dst_text = cols[2];
    v.src = v.v6 ? ipv6_addr(cols[0]) : ipv4_addr(cols[0]);
    v.dst = v.v6 ? ipv6_addr(cols[2]) : ipv4_addr(cols[2]);
    v.sport = static_cast<uint16_t>(std::stoul(cols[1]));
    v.dport = static_cast<uint16_t>(std::stoul(cols[3]));
    v.hash_ip_only = static_cast<uint32_t>(std::stoul(cols[4], nullptr, 16));
    v.hash_ip_l4 = static_cast<uint32_t>(std::stoul(cols[5], nullptr, 16));
    out.push_back(v);
  }
  return out;
}

const std::vector<RssVector> &vectors() {
  static const std::vector<RssVector> v = load_vectors();
  return v;
}

std::string describe(const RssVector &v) {
  return v.src_text + ":" + std::to_string(v.sport) + " -> " + v.dst_text + ":" +
         std::to_string(v.dport);
}

// Ethernet / IP / L4 packet for one vector, src and dst swapped when `reverse`.
Bytes vector_packet(const RssVector &v, uint8_t proto, bool reverse = false) {
  const Bytes &src = reverse ? v.dst : v.src;
  const Bytes &dst = reverse ? v.src : v.dst;
  const uint16_t sport = reverse ? v.dport : v.sport;
  const uint16_t dport = reverse ? v.sport : v.dport;
  Bytes l4;
  if (proto == kTcp) {
    TcpSpec t;
    t.sport = sport;
    t.dport = dport;
    t.flags = kAck;
    t.payload = pattern_bytes(10);
    l4 = tcp(t);
  } else if (proto == kUdp) {
    l4 = udp(sport, dport, pattern_bytes(10));
  } else {
    l4 = icmp(v.v6 ? 128 : 8, 0, pattern_bytes(12));
  }
  if (v.v6) {
    Ipv6Spec ip;
    ip.src = src;
    ip.dst = dst;
    ip.proto = proto;
    return eth_ipv6(ip, l4);
  }
  Ipv4Spec ip;
  ip.src = src;
  ip.dst = dst;
  ip.proto = proto;
  return eth_ipv4(ip, l4);
}

uint32_t l4_header_len(uint8_t proto) { return proto == kTcp ? 20 : proto == kUdp ? 8 : 4; }

GppResult parse_vector(const RssVector &v, uint8_t proto, const gpp::CoreConfig &cfg,
                       bool reverse = false) {
  const Bytes pkt = vector_packet(v, proto, reverse);
  const uint32_t headers = (v.v6 ? 54 : 34) + l4_header_len(proto);
  return parse(describe(v) + (reverse ? " reversed" : ""), GPP_LINKTYPE_ETHERNET, pkt, headers, 0,
               cfg);
}

const uint8_t kOtherKey[gpp::kRssKeySize] = {
    0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef, 0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54,
    0x32, 0x10, 0x0f, 0x1e, 0x2d, 0x3c, 0x4b, 0x5a, 0x69, 0x78, 0x87, 0x96, 0xa5, 0xb4,
    0xc3, 0xd2, 0xe1, 0xf0, 0x11, 0x22, 0x33, 0x44, 0x55, 0x66, 0x77, 0x88};

} // namespace

TEST(RssVectors, FileHasIpv4AndIpv6Rows) {
  size_t v4 = 0, v6 = 0;
  for (const RssVector &v : vectors()) (v.v6 ? v6 : v4)++;
  EXPECT_GE(v4, 5u);
  EXPECT_GE(v6, 3u);
}

TEST(RssVectors, DefaultKeyIsTheVerificationSuiteKey) {
  const uint8_t expected[gpp::kRssKeySize] = {
      0x6d, 0x5a, 0x56, 0xda, 0x25, 0x5b, 0x0e, 0xc2, 0x41, 0x67, 0x25, 0x3d, 0x43, 0xa3,
      0x8f, 0xb0, 0xd0, 0xca, 0x2b, 0xcb, 0xae, 0x7b, 0x30, 0xb4, 0x77, 0xcb, 0x2d, 0xa3,
      0x80, 0x30, 0xf2, 0x0c, 0x6a, 0x42, 0xb7, 0x3b, 0xbe, 0xac, 0x01, 0xfa};
  EXPECT_EQ(0, std::memcmp(expected, gpp::kDefaultRssKey, sizeof expected));
}

TEST(RssVectors, ToeplitzFunctionDirectly) {
  ASSERT_FALSE(vectors().empty());
  for (const RssVector &v : vectors()) {
    SCOPED_TRACE(describe(v));
    const Bytes ip_only = rss_input(v.src, v.dst, false, 0, 0);
    const Bytes ip_l4 = rss_input(v.src, v.dst, true, v.sport, v.dport);
    EXPECT_EQ(v.hash_ip_only, gpp::detail::toeplitz(gpp::kDefaultRssKey, ip_only.data(),
                                                    static_cast<int>(ip_only.size())));
    EXPECT_EQ(v.hash_ip_l4, gpp::detail::toeplitz(gpp::kDefaultRssKey, ip_l4.data(),
                                                  static_cast<int>(ip_l4.size())));
    // The test's own reference agrees too (so it can be trusted for other keys below).
    EXPECT_EQ(v.hash_ip_l4, reference_toeplitz(gpp::kDefaultRssKey, gpp::kRssKeySize, ip_l4));
  }
}

TEST(RssVectors, ToeplitzWithOtherKeyMatchesReference) {
  ASSERT_FALSE(vectors().empty());
  for (const RssVector &v : vectors()) {
    const Bytes in = rss_input(v.src, v.dst, true, v.sport, v.dport);
    EXPECT_EQ(reference_toeplitz(kOtherKey, gpp::kRssKeySize, in),
              gpp::detail::toeplitz(kOtherKey, in.data(), static_cast<int>(in.size())))
        << describe(v);
  }
  EXPECT_EQ(0u, gpp::detail::toeplitz(kOtherKey, Bytes(36, 0).data(), 36));
  // Every length up to 36 bytes, whole words or not.
  std::mt19937 rng(7);
  for (int len = 1; len <= 36; ++len) {
    Bytes in(len);
    for (auto &b : in) b = static_cast<uint8_t>(rng());
    for (const uint8_t *key : {gpp::kDefaultRssKey, kOtherKey})
      EXPECT_EQ(reference_toeplitz(key, gpp::kRssKeySize, in), gpp::detail::toeplitz(key, in.data(), len))
          << len << " bytes";
  }
}

// rss_hash() XORs per-word contributions; the sum over the words of any
// input must equal the byte-wise hash, for every key offset a word can take.
TEST(RssVectors, ToeplitzWordsSumToTheByteHash) {
  std::mt19937 rng(36);
  for (const uint8_t *key : {gpp::kDefaultRssKey, kOtherKey}) {
    for (int trial = 0; trial < 2000; ++trial) {
      const int words = 1 + static_cast<int>(rng() % 9); // up to 36 bytes
      Bytes in(4 * words);
      uint32_t by_words = 0;
      for (int w = 0; w < words; ++w) {
        const uint32_t word = trial < 64 ? uint32_t{1} << (trial % 32) : static_cast<uint32_t>(rng());
        for (int b = 0; b < 4; ++b) in[4 * w + b] = static_cast<uint8_t>(word >> (24 - 8 * b));
        by_words ^= gpp::detail::toeplitz_word(key, 4 * w, word);
      }
      ASSERT_EQ(reference_toeplitz(key, gpp::kRssKeySize, in), by_words) << words << " words";
    }
  }
}

// The persistent kernel hashes through an RssTable: every word at every
// offset an input word can take must hash as toeplitz_word() does.
TEST(RssVectors, TableHashesLikeTheKey) {
  std::mt19937 rng(40);
  auto table = std::make_unique<gpp::detail::RssTable>();
  for (const uint8_t *key : {gpp::kDefaultRssKey, kOtherKey}) {
    table->fill(key, 0, 1);
    for (int offset = 0; offset + 4 <= gpp::detail::kRssMaxInputBytes; offset += 4)
      for (int trial = 0; trial < 4000; ++trial) {
        const uint32_t word = trial < 32 ? uint32_t{1} << trial : static_cast<uint32_t>(rng());
        ASSERT_EQ(gpp::detail::toeplitz_word(key, offset, word), table->word(offset, word))
            << "offset " << offset << " word " << word;
      }
  }
  // And whole packets: the verification vectors through process_packet().
  table->fill(gpp::kDefaultRssKey, 0, 1);
  const gpp::CoreConfig cfg = make_config();
  for (const RssVector &v : vectors()) {
    const GppResult r = parse_vector(v, kTcp, cfg);
    EXPECT_EQ(v.hash_ip_l4, gpp::detail::rss_hash(cfg, r, [&](int offset, uint32_t word) {
                return table->word(offset, word);
              })) << describe(v);
  }
}

TEST(RssVectors, TcpPacketsHashAddressesAndPorts) {
  ASSERT_FALSE(vectors().empty());
  for (const RssVector &v : vectors()) {
    const GppResult r = parse_vector(v, kTcp, make_config());
    EXPECT_EQ(0u, r.status) << describe(v);
    EXPECT_EQ(v.hash_ip_l4, r.rss_hash) << describe(v);
  }
}

TEST(RssVectors, UdpPacketsHashAddressesAndPorts) {
  ASSERT_FALSE(vectors().empty());
  for (const RssVector &v : vectors())
    EXPECT_EQ(v.hash_ip_l4, parse_vector(v, kUdp, make_config()).rss_hash) << describe(v);
}

TEST(RssVectors, IcmpHashesAddressesOnly) {
  ASSERT_FALSE(vectors().empty());
  for (const RssVector &v : vectors()) {
    const GppResult r = parse_vector(v, v.v6 ? kIcmpv6 : kIcmp, make_config());
    EXPECT_EQ(0u, r.status) << describe(v);
    EXPECT_EQ(v.hash_ip_only, r.rss_hash) << describe(v);
  }
}

TEST(RssVectors, FragmentsHashAddressesOnly) {
  ASSERT_FALSE(vectors().empty());
  for (const RssVector &v : vectors()) {
    SCOPED_TRACE(describe(v));
    TcpSpec t;
    t.sport = v.sport;
    t.dport = v.dport;
    if (v.v6) {
      Ipv6Spec ip;
      ip.src = v.src;
      ip.dst = v.dst;
      ip.proto = kTcp;
      ip.exts = {fragment_header(0, true)};
      GppResult r = parse("ipv6 first fragment", GPP_LINKTYPE_ETHERNET, eth_ipv6(ip, tcp(t)),
                          54 + 8 + 20);
      EXPECT_EQ(v.sport, r.sport);
      EXPECT_EQ(v.hash_ip_only, r.rss_hash);
      ip.exts = {fragment_header(1232, false)};
      r = parse("ipv6 later fragment", GPP_LINKTYPE_ETHERNET, eth_ipv6(ip, pattern_bytes(40)),
                54 + 8);
      EXPECT_EQ(v.hash_ip_only, r.rss_hash);
    } else {
      Ipv4Spec ip;
      ip.src = v.src;
      ip.dst = v.dst;
      ip.proto = kTcp;
      ip.more_fragments = true;
      GppResult r = parse("ipv4 first fragment", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, tcp(t)),
                          54);
      EXPECT_EQ(v.sport, r.sport); // ports parsed ...
      EXPECT_EQ(v.hash_ip_only, r.rss_hash); // ... but not hashed
      ip.frag_offset_bytes = 1480;
      r = parse("ipv4 non-first fragment", GPP_LINKTYPE_ETHERNET,
                eth_ipv4(ip, pattern_bytes(40)), 34);
      EXPECT_EQ(0, r.sport);
      EXPECT_EQ(v.hash_ip_only, r.rss_hash);
    }
  }
}

TEST(RssVectors, ConfiguredKeyIsUsed) {
  ASSERT_FALSE(vectors().empty());
  const gpp::CoreConfig cfg = make_config(true, false, kOtherKey);
  for (const RssVector &v : vectors()) {
    const GppResult r = parse_vector(v, kTcp, cfg);
    EXPECT_EQ(expected_rss(v.src, v.dst, true, v.sport, v.dport, kOtherKey), r.rss_hash)
        << describe(v);
    EXPECT_NE(v.hash_ip_l4, r.rss_hash) << describe(v);
  }
}

TEST(SymmetricRss, BothDirectionsHashAlike) {
  ASSERT_FALSE(vectors().empty());
  const gpp::CoreConfig sym = make_config(true, true);
  for (uint8_t proto : {kTcp, kUdp}) {
    for (const RssVector &v : vectors()) {
      SCOPED_TRACE(describe(v) + (proto == kTcp ? " tcp" : " udp"));
      const GppResult fwd = parse_vector(v, proto, sym);
      const GppResult rev = parse_vector(v, proto, sym, true);
      EXPECT_EQ(fwd.rss_hash, rev.rss_hash);
      // It is the hash of one of the two orientations, ports included.
      const uint32_t as_is = expected_rss(v.src, v.dst, true, v.sport, v.dport);
      const uint32_t swapped = expected_rss(v.dst, v.src, true, v.dport, v.sport);
      EXPECT_TRUE(fwd.rss_hash == as_is || fwd.rss_hash == swapped) << std::hex << fwd.rss_hash;
    }
  }
}

TEST(SymmetricRss, AddressOnlyHashesAreSymmetricToo) {
  ASSERT_FALSE(vectors().empty());
  const gpp::CoreConfig sym = make_config(true, true);
  for (const RssVector &v : vectors()) {
    const uint8_t proto = v.v6 ? kIcmpv6 : kIcmp;
    const GppResult fwd = parse_vector(v, proto, sym);
    const GppResult rev = parse_vector(v, proto, sym, true);
    EXPECT_EQ(fwd.rss_hash, rev.rss_hash) << describe(v);
    EXPECT_TRUE(fwd.rss_hash == v.hash_ip_only ||
                fwd.rss_hash == expected_rss(v.dst, v.src, false))
        << describe(v);
  }
}

TEST(SymmetricRss, SameAddressesOrderedByPort) {
  // Both endpoints on one host: only the ports tell the directions apart.
  const Bytes host = ipv4_addr("127.0.0.1");
  Ipv4Spec ip;
  ip.src = host;
  ip.dst = host;
  TcpSpec a, b;
  a.sport = 5000;
  a.dport = 6000;
  b.sport = 6000;
  b.dport = 5000;
  const gpp::CoreConfig sym = make_config(true, true);
  const GppResult ra =
      parse("loopback a->b", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, tcp(a)), 54, 0, sym);
  const GppResult rb =
      parse("loopback b->a", GPP_LINKTYPE_ETHERNET, eth_ipv4(ip, tcp(b)), 54, 0, sym);
  EXPECT_EQ(ra.rss_hash, rb.rss_hash);
  EXPECT_EQ(expected_rss(host, host, true, 5000, 6000), ra.rss_hash);
}

TEST(SymmetricRss, NonSymmetricDirectionsDiffer) {
  ASSERT_FALSE(vectors().empty());
  for (const RssVector &v : vectors()) {
    const GppResult fwd = parse_vector(v, kTcp, make_config());
    const GppResult rev = parse_vector(v, kTcp, make_config(), true);
    EXPECT_EQ(v.hash_ip_l4, fwd.rss_hash) << describe(v);
    EXPECT_EQ(expected_rss(v.dst, v.src, true, v.dport, v.sport), rev.rss_hash) << describe(v);
    EXPECT_NE(fwd.rss_hash, rev.rss_hash) << describe(v);
  }
}
