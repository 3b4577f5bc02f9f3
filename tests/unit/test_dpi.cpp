// DPI stage: pattern and rule file parsing, and the Aho-Corasick automata
// against a naive matcher on every capture and on crafted payloads.
#include <gtest/gtest.h>
#include <pcap/pcap.h>

#include <dirent.h>

#include <cstring>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "pcap_linktype.h"
#include "dpi_patterns.h"
#include "et_open.h"
#include "shared_data.h"
#include "et_open_mz_case.h"
#include "random_patterns.h"
#include "packet_core.h"

namespace {

std::shared_ptr<const gpp::DpiPatternSet> parse(const std::string &text, std::string *error) {
  return gpp::parse_dpi_patterns(text, "test.patterns", error);
}

// Runs the automata the way process_packet does, over raw bytes.
void scan(const gpp::DpiPatternSet &set, const std::string &payload, int32_t *id, uint32_t *hits) {
  GppResult r{};
  r.dpi_pattern = -1;
  gpp::dpi_scan(set.blob.data(), reinterpret_cast<const uint8_t *>(payload.data()),
                static_cast<uint32_t>(payload.size()), r);
  *id = r.dpi_pattern;
  *hits = r.dpi_hits;
}

TEST(DpiParse, LiteralsHexEscapesCommentsAndNumbering) {
  std::string error;
  auto set = parse("# comment\n\nabc\n|41 42|C\nx|7C|y\n", &error);
  ASSERT_TRUE(set) << error;
  ASSERT_EQ(set->patterns.size(), 3u);
  EXPECT_EQ(set->patterns[0].bytes, "abc");
  EXPECT_EQ(set->patterns[1].bytes, "ABC");
  EXPECT_EQ(set->patterns[2].bytes, "x|y");
}

TEST(DpiParse, RuleContentsNocaseAndNegation) {
  std::string error;
  auto set = parse("alert tcp any any -> any any (msg:\"x\"; content:\"GET \"; nocase; "
                   "content:!\"skip\"; content:\"a\\;b|0d 0a|\"; content:\"q\\\"\"; sid:1;)\n"
                   "#alert tcp any any -> any any (content:\"commented\"; sid:2;)\n",
                   &error);
  ASSERT_TRUE(set) << error;
  ASSERT_EQ(set->patterns.size(), 3u);
  EXPECT_EQ(set->patterns[0].bytes, "GET ");
  EXPECT_TRUE(set->patterns[0].nocase);
  EXPECT_EQ(set->patterns[1].bytes, "a;b\r\n");
  EXPECT_FALSE(set->patterns[1].nocase);
  EXPECT_EQ(set->patterns[2].bytes, "q\"");
}

TEST(DpiParse, ErrorsNameFileAndLine) {
  std::string error;
  EXPECT_FALSE(parse("ok\n|41 4|\n", &error));
  EXPECT_NE(error.find("test.patterns:2:"), std::string::npos) << error;
  EXPECT_FALSE(parse("a\nb\n|zz|\n", &error));
  EXPECT_NE(error.find("test.patterns:3:"), std::string::npos) << error;
  EXPECT_FALSE(parse("|41\n", &error));
  EXPECT_NE(error.find("unterminated"), std::string::npos) << error;
  EXPECT_FALSE(parse("alert tcp any any -> any any (content:\"open; sid:1;)\n", &error));
  EXPECT_NE(error.find("test.patterns:1:"), std::string::npos) << error;
  EXPECT_FALSE(parse("abc\n||\n", &error)); // an empty pattern would match everywhere
  EXPECT_NE(error.find("test.patterns:2: empty pattern"), std::string::npos) << error;
  EXPECT_FALSE(parse("alert tcp any any -> any any (msg:\"x\"; content:\"abc\")\n", &error));
  EXPECT_NE(error.find("test.patterns:1:"), std::string::npos) << error;
  EXPECT_FALSE(gpp::load_dpi_patterns("/nonexistent/patterns", &error));
  EXPECT_NE(error.find("/nonexistent/patterns"), std::string::npos);
  EXPECT_FALSE(gpp::load_dpi_patterns("/", &error));
}

TEST(DpiScan, OverlapsAreAllCountedAndTheSmallestIdWins) {
  std::string error;
  auto set = parse("aaa\naa\na\nzzz\n", &error);
  ASSERT_TRUE(set) << error;
  int32_t id;
  uint32_t hits;
  scan(*set, "aaaa", &id, &hits);
  EXPECT_EQ(id, 0);
  EXPECT_EQ(hits, 2u + 3u + 4u); // "aaa" twice, "aa" three times, "a" four times
  scan(*set, "xyz", &id, &hits);
  EXPECT_EQ(id, -1);
  EXPECT_EQ(hits, 0u);
  scan(*set, "zzzz", &id, &hits);
  EXPECT_EQ(id, 3);
  EXPECT_EQ(hits, 2u);
}

TEST(DpiScan, HitsSaturateInsteadOfWrapping) {
  std::string text;
  for (int i = 0; i < 70000; ++i) text += "a\n"; // 70,000 patterns, all "a"
  std::string error;
  auto set = parse(text, &error);
  ASSERT_TRUE(set) << error;
  int32_t id;
  uint32_t hits;
  scan(*set, std::string(70000, 'a'), &id, &hits); // 4.9e9 occurrences
  EXPECT_EQ(id, 0);
  EXPECT_EQ(hits, 0xffffffffu);
}

TEST(DpiScan, EveryByteValueInPatterns) {
  // All 256 byte values used: no byte is left for the shared class 0.
  std::string text;
  char hex[8];
  for (int b = 0; b < 256; ++b) {
    std::snprintf(hex, sizeof hex, "|%02x|", b);
    text += std::string(hex) + "\n";
  }
  std::string error;
  auto set = parse(text, &error);
  ASSERT_TRUE(set) << error;
  std::string payload;
  for (int b = 255; b >= 0; --b) payload.push_back(static_cast<char>(b));
  int32_t id;
  uint32_t hits;
  scan(*set, payload, &id, &hits);
  EXPECT_EQ(id, 0);
  EXPECT_EQ(hits, 256u);
}

TEST(DpiScan, NocaseFoldsOnlyItsOwnPatterns) {
  std::string error;
  auto set = parse("alert tcp any any -> any any (content:\"AbC\"; nocase; content:\"XyZ\"; sid:1;)\n",
                   &error);
  ASSERT_TRUE(set) << error;
  int32_t id;
  uint32_t hits;
  scan(*set, "..abc..ABC..xyz..XyZ", &id, &hits);
  EXPECT_EQ(id, 0);
  EXPECT_EQ(hits, 3u); // abc, ABC (nocase) and the exact XyZ
}

// Random payloads over a small alphabet, so patterns overlap and recur.
TEST(DpiScan, AgreesWithNaiveMatcherOnRandomData) {
  std::mt19937 rng(3);
  std::string text;
  for (int p = 0; p < 200; ++p) {
    std::string pat;
    for (int k = 1 + rng() % 6; k > 0; --k) pat.push_back("abAB\x01|"[rng() % 5]);
    if (pat.find('|') != std::string::npos) continue;
    text += (rng() % 3 == 0) ? "alert tcp any any -> any any (content:\"" + pat + "\"; nocase; sid:1;)\n"
                             : pat + "\n";
  }
  std::string error;
  auto set = parse(text, &error);
  ASSERT_TRUE(set) << error;
  for (int n = 0; n < 500; ++n) {
    std::string payload;
    for (int k = rng() % 300; k > 0; --k) payload.push_back("abAB\x01z"[rng() % 6]);
    int32_t id, naive_id;
    uint32_t hits, naive_hits;
    scan(*set, payload, &id, &hits);
    set->naive_scan(reinterpret_cast<const uint8_t *>(payload.data()),
                    static_cast<uint32_t>(payload.size()), &naive_id, &naive_hits);
    ASSERT_EQ(id, naive_id) << payload;
    ASSERT_EQ(hits, naive_hits) << payload;
  }
}

// Long payloads are scanned as two halves whose second starts a pattern
// length early: matches across the middle, right at it, and sets with only
// one kind of pattern (the other automaton empty) must still count exactly.
TEST(DpiScan, SplitScanAgreesWithNaiveMatcherAcrossTheMiddle) {
  std::mt19937 rng(7);
  for (const char *kinds : {"both", "exact", "nocase"}) {
    std::string text;
    for (int p = 0; p < 60; ++p) {
      std::string pat;
      for (int k = 1 + rng() % 40; k > 0; --k) pat.push_back("abAB"[rng() % 4]);
      const bool nocase = kinds[0] == 'n' || (kinds[0] == 'b' && rng() % 2);
      text += nocase ? "alert tcp any any -> any any (content:\"" + pat + "\"; nocase; sid:1;)\n"
                     : pat + "\n";
    }
    std::string error;
    auto set = parse(text, &error);
    ASSERT_TRUE(set) << error;
    for (int n = 0; n < 300; ++n) {
      const size_t len = rng() % 3000;
      std::string payload;
      for (size_t k = 0; k < len; ++k) payload.push_back("abABz"[rng() % 5]);
      int32_t id, naive_id;
      uint32_t hits, naive_hits;
      scan(*set, payload, &id, &hits);
      set->naive_scan(reinterpret_cast<const uint8_t *>(payload.data()),
                      static_cast<uint32_t>(payload.size()), &naive_id, &naive_hits);
      ASSERT_EQ(id, naive_id) << kinds << " length " << len;
      ASSERT_EQ(hits, naive_hits) << kinds << " length " << len;
    }
  }
}

using mz_case::kMzPayload;
using mz_case::kMzRules;

// Random pattern sets (random_patterns.h) and payloads built from them.
// The scan must equal the naive matcher, and so must every cut of the
// payload into ranges scanned apart (the GPU's way: dpi_scan_range, chunks
// counted where the automaton reports a match).
TEST(DpiScan, LongPatternsAndChunkedScansAgreeWithNaiveMatcher) {
  std::mt19937 rng(2026);
  for (int round = 0; round < 40; ++round) {
    const gpptest::RandomPatterns random = gpptest::random_patterns(rng);
    const std::vector<std::string> &patterns = random.patterns;
    const std::string &text = random.text;
    std::string error;
    auto set = parse(text, &error);
    ASSERT_TRUE(set) << error;
    for (int n = 0; n < 30; ++n) {
      const std::string payload = gpptest::random_payload(rng, patterns, 2000);
      const auto *bytes = reinterpret_cast<const uint8_t *>(payload.data());
      const uint32_t len = static_cast<uint32_t>(payload.size());
      int32_t id, naive_id;
      uint32_t hits, naive_hits;
      scan(*set, payload, &id, &hits);
      set->naive_scan(bytes, len, &naive_id, &naive_hits);
      ASSERT_EQ(id, naive_id) << "round " << round << " payload " << n;
      ASSERT_EQ(hits, naive_hits) << "round " << round << " payload " << n;
      // Cut into random ranges, each scanned on its own; and into ranges of
      // 1 and 7 bytes (every match then starts before the range that counts
      // it: found by that range's walk from kDpiPrefixBytes - 1 bytes early).
      for (uint32_t fixed : {0u, 1u, 7u}) {
        uint32_t chunk_hits = 0;
        int32_t chunk_best = -1;
        for (uint32_t from = 0; from < len;) {
          const uint32_t size = fixed ? fixed : 1 + static_cast<uint32_t>(rng() % 100);
          const uint32_t to = std::min(len, from + size);
          gpp::dpi_scan_range(set->blob.data(), bytes, len, from, to, chunk_hits, chunk_best);
          from = to;
        }
        ASSERT_EQ(chunk_best, naive_id) << "round " << round << " payload " << n << " cut " << fixed;
        ASSERT_EQ(chunk_hits, naive_hits) << "round " << round << " payload " << n << " cut " << fixed;
      }
    }
  }
}

// The tail tries (dpi.h) of a set: well formed, and each pattern longer
// than the automata's prefixes ends at exactly one node, reached from the
// state its prefix leads to by walking its tail.
void expect_tail_tries_hold_every_long_pattern(const gpp::DpiPatternSet &set, const std::string &what) {
  const uint8_t *blob = set.blob.data();
  const auto *h = reinterpret_cast<const gpp::DpiBlobHeader *>(blob);
  const auto *nodes = reinterpret_cast<const gpp::DpiTailNode *>(blob + h->tail_nodes_offset);
  const uint8_t *keys = blob + h->tail_keys_offset;
  uint64_t outputs = 0;
  auto range_ok = [&](const gpp::DpiTailRange &r) {
    return r.first <= h->tail_node_count && r.count <= h->tail_node_count - r.first;
  };
  for (uint32_t i = 0; i < h->tail_node_count; ++i) {
    const gpp::DpiTailNode &n = nodes[i];
    ASSERT_GE(n.label_length, 1u) << what << " node " << i;
    ASSERT_LE(uint64_t{n.label_offset} + n.label_length, h->total_size) << what << " node " << i;
    ASSERT_EQ(keys[i], blob[n.label_offset]) << what << " node " << i;
    ASSERT_TRUE(range_ok(n.children)) << what << " node " << i;
    ASSERT_TRUE(n.out_count > 0 || n.children.count > 0) << what << " node " << i << " leads nowhere";
    ASSERT_EQ(n.out_count > 0, n.out_min >= 0) << what << " node " << i;
    for (uint32_t c = 1; c < n.children.count; ++c)
      ASSERT_LT(keys[n.children.first + c - 1], keys[n.children.first + c]) << what << " node " << i;
    outputs += n.out_count;
  }
  size_t long_patterns = 0;
  for (size_t id = 0; id < set.patterns.size(); ++id) {
    const gpp::DpiPattern &p = set.patterns[id];
    if (p.bytes.size() <= gpp::kDpiPrefixBytes) continue;
    ++long_patterns;
    std::string bytes = p.bytes;
    if (p.nocase)
      for (char &c : bytes)
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + ('a' - 'A'));
    const gpp::DpiAutomaton &am = h->automata[p.nocase ? 1 : 0];
    ASSERT_EQ(am.nocase, p.nocase ? 1u : 0u);
    uint32_t s = 0; // the prefix's walk from the root
    for (uint32_t k = 0; k < gpp::kDpiPrefixBytes; ++k) {
      const size_t at = size_t{s} * am.classes + am.byte_class[static_cast<uint8_t>(bytes[k])];
      s = am.entry_bytes == 2 ? reinterpret_cast<const uint16_t *>(blob + am.next_offset)[at] & 0x7fffu
                              : reinterpret_cast<const uint32_t *>(blob + am.next_offset)[at] & 0x7fffffffu;
    }
    gpp::DpiTailRange r = reinterpret_cast<const gpp::DpiTailRange *>(blob + am.tails_offset)[s];
    size_t at = gpp::kDpiPrefixBytes;
    const gpp::DpiTailNode *end = nullptr;
    while (at < bytes.size()) {
      ASSERT_TRUE(range_ok(r)) << what << " pattern " << id;
      uint32_t child = r.first;
      while (child < r.first + r.count && keys[child] != static_cast<uint8_t>(bytes[at])) ++child;
      ASSERT_LT(child, r.first + r.count) << what << " pattern " << id << " lost at byte " << at;
      end = &nodes[child];
      ASSERT_LE(at + end->label_length, bytes.size()) << what << " pattern " << id;
      ASSERT_EQ(0, std::memcmp(blob + end->label_offset, bytes.data() + at, end->label_length))
          << what << " pattern " << id;
      at += end->label_length;
      r = end->children;
    }
    ASSERT_NE(end, nullptr);
    ASSERT_GE(end->out_count, 1u) << what << " pattern " << id;
    ASSERT_LE(end->out_min, static_cast<int32_t>(id)) << what << " pattern " << id;
  }
  EXPECT_EQ(outputs, long_patterns) << what;
  EXPECT_EQ(h->long_count, long_patterns) << what;
}

TEST(DpiBlob, TailTriesHoldEveryLongPatternOnce) {
  std::string error;
  auto et = test::load_et_open_2024(&error);
  ASSERT_TRUE(et) << error;
  ASSERT_GT(et->blob.size(), 0u);
  expect_tail_tries_hold_every_long_pattern(*et, "ET Open 2024");
  std::mt19937 rng(17);
  for (int round = 0; round < 20; ++round) {
    auto set = parse(gpptest::random_patterns(rng).text, &error);
    ASSERT_TRUE(set) << error;
    expect_tail_tries_hold_every_long_pattern(*set, "random set " + std::to_string(round));
  }
}

TEST(DpiScan, EtOpenFastPatternPayloadWhereHyperscanDiffered) {
  std::string error;
  auto set = parse(kMzRules, &error);
  ASSERT_TRUE(set) << error;
  ASSERT_EQ(set->patterns.size(), 3u);
  const std::string mz = set->patterns[0].bytes;
  ASSERT_EQ(mz.size(), 76u);
  // By hand: "_" once (offset 34), the MZ header once (offset 234), which
  // both its exact and its nocase pattern match.
  ASSERT_EQ(kMzPayload.size(), 320u);
  EXPECT_EQ(kMzPayload.find('_'), 34u);
  EXPECT_EQ(kMzPayload.rfind('_'), 34u);
  EXPECT_EQ(kMzPayload.find(mz), 234u);
  EXPECT_EQ(kMzPayload.find(mz, 235), std::string::npos);
  int32_t id, naive_id;
  uint32_t hits, naive_hits;
  scan(*set, kMzPayload, &id, &hits);
  EXPECT_EQ(id, 0);
  EXPECT_EQ(hits, 3u);
  set->naive_scan(reinterpret_cast<const uint8_t *>(kMzPayload.data()),
                  static_cast<uint32_t>(kMzPayload.size()), &naive_id, &naive_hits);
  EXPECT_EQ(naive_id, 0);
  EXPECT_EQ(naive_hits, 3u);
  // The same bytes inside a 1446-byte payload, the header across the middle
  // where the scan splits in two (at 723; the second half starts 75 early).
  for (size_t at : {0u, 723u - 234u - 40u, 723u - 234u - 75u, 1446u - 320u}) {
    std::string payload(1446, '\0');
    payload.replace(at, kMzPayload.size(), kMzPayload);
    scan(*set, payload, &id, &hits);
    set->naive_scan(reinterpret_cast<const uint8_t *>(payload.data()),
                    static_cast<uint32_t>(payload.size()), &naive_id, &naive_hits);
    EXPECT_EQ(id, 0) << "at " << at;
    EXPECT_EQ(hits, 3u) << "at " << at;
    EXPECT_EQ(naive_hits, 3u) << "at " << at;
  }
}

// Every capture, with both ET Open sets: the core's DPI fields equal the
// naive matcher over the same payload bytes.
TEST(DpiCaptures, EtOpenSetsAgreeWithNaiveMatcherOnEveryCapture) {
  const std::string dir = test::shared_data_dir();
  for (const char *rules : {"et_open_emerging-scan.rules", "et_open_emerging-shellcode.rules"}) {
    std::string error;
    auto set = gpp::load_dpi_patterns(dir + "/dpi/" + rules, &error);
    ASSERT_TRUE(set) << error;
    // An independent count of the active, non-negated content strings.
    std::ifstream f(dir + "/dpi/" + rules);
    std::string line;
    size_t expected_patterns = 0;
    const std::regex content("content:\\s*\"");
    while (std::getline(f, line)) {
      if (line.rfind("alert", 0) != 0) continue;
      expected_patterns += std::distance(std::sregex_iterator(line.begin(), line.end(), content),
                                         std::sregex_iterator());
    }
    EXPECT_EQ(set->patterns.size(), expected_patterns) << rules;

    gpp::CoreConfig cfg{};
    std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
    cfg.dpi = set->blob.data();
    size_t packets = 0, scanned = 0, matched = 0;
    DIR *d = opendir((dir + "/pcap").c_str());
    ASSERT_NE(d, nullptr);
    while (dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.find(".pcap") == std::string::npos) continue;
      char errbuf[PCAP_ERRBUF_SIZE];
      pcap_t *p = pcap_open_offline((dir + "/pcap/" + name).c_str(), errbuf);
      ASSERT_NE(p, nullptr) << errbuf;
      const uint32_t linktype = gpp::linktype_of(p);
      pcap_pkthdr *h;
      const u_char *bytes;
      while (pcap_next_ex(p, &h, &bytes) == 1) {
        std::vector<uint8_t> copy(bytes, bytes + h->caplen); // exactly caplen bytes
        GppResult r;
        gpp::process_packet(copy.data(), h->caplen, h->len, linktype, ++packets, 0, cfg, r);
        ASSERT_EQ(r.dpi_scanned, 1);
        int32_t naive_id = -1;
        uint32_t naive_hits = 0;
        if (r.payload_length) {
          ++scanned;
          ASSERT_LE(r.payload_offset + r.payload_length, h->caplen);
          set->naive_scan(copy.data() + r.payload_offset, r.payload_length, &naive_id, &naive_hits);
        }
        ASSERT_EQ(r.dpi_pattern, naive_id) << name << " packet " << packets;
        ASSERT_EQ(r.dpi_hits, naive_hits) << name << " packet " << packets;
        matched += naive_hits > 0;
      }
      pcap_close(p);
    }
    closedir(d);
    std::printf("%s: %zu patterns, %zu packets, %zu payloads scanned, %zu with matches\n", rules,
                set->patterns.size(), packets, scanned, matched);
    EXPECT_GT(scanned, 1000u);
  }
}

} // namespace
