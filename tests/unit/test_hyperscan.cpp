// DPI stage against Hyperscan (Debian's libhyperscan-dev), the field's
// reference multi-pattern matcher: on every capture, with both ET Open sets,
// the smallest matching pattern id and the count of all occurrences must be
// what Hyperscan reports for the same payload bytes.
#include <gtest/gtest.h>
#include <hs/hs.h>
#include <pcap/pcap.h>

#include <dirent.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "pcap_linktype.h"
#include "dpi_patterns.h"
#include "et_open.h"
#include "shared_data.h"
#include "et_open_mz_case.h"
#include "packet_core.h"

namespace {

struct Tally {
  int32_t min_id = -1;
  uint32_t hits = 0;
};

int on_match(unsigned int id, unsigned long long, unsigned long long, unsigned int, void *ctx) {
  auto *t = static_cast<Tally *>(ctx);
  ++t->hits;
  if (t->min_id < 0 || static_cast<int32_t>(id) < t->min_id) t->min_id = static_cast<int32_t>(id);
  return 0;
}

// A set as one Hyperscan database, pattern i as id i, all occurrences
// reported.  The literal API (hs_compile_lit_multi) takes the bytes as they
// are; the regex API (hs_compile_multi) gets each pattern as \xHH escapes,
// which match the same bytes (HS_FLAG_CASELESS folds ASCII letters in both).
// Hyperscan 5.4.0's literal API aborts some scans (see below): comparisons
// that must hold for every payload use the regex API.
enum class HsApi { Literal, Regex };

hs_database_t *compile(const gpp::DpiPatternSet &set, HsApi api, std::string *error) {
  std::vector<std::string> regex(set.patterns.size());
  std::vector<const char *> exprs;
  std::vector<size_t> lens;
  std::vector<unsigned> flags, ids;
  for (size_t i = 0; i < set.patterns.size(); ++i) {
    const gpp::DpiPattern &p = set.patterns[i];
    for (unsigned char c : p.bytes) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      regex[i] += hex;
    }
    exprs.push_back(api == HsApi::Literal ? p.bytes.data() : regex[i].c_str());
    lens.push_back(p.bytes.size());
    flags.push_back(p.nocase ? HS_FLAG_CASELESS : 0);
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_database_t *db = nullptr;
  hs_compile_error_t *compile_error = nullptr;
  const hs_error_t rc =
      api == HsApi::Literal
          ? hs_compile_lit_multi(exprs.data(), flags.data(), ids.data(), lens.data(),
                                 static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK, nullptr, &db,
                                 &compile_error)
          : hs_compile_multi(exprs.data(), flags.data(), ids.data(),
                             static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK, nullptr, &db,
                             &compile_error);
  if (rc != HS_SUCCESS) {
    *error = compile_error ? compile_error->message : "compile failed";
    hs_free_compile_error(compile_error);
    return nullptr;
  }
  return db;
}

// Hyperscan over `payload`: hs_scan's return, the matches in `t`.
hs_error_t hs_tally(const hs_database_t *db, hs_scratch_t *scratch, const std::string &payload,
                    Tally *t) {
  *t = Tally{};
  return hs_scan(db, payload.data(), static_cast<unsigned>(payload.size()), 0, scratch, on_match, t);
}

Tally ours(const gpp::DpiPatternSet &set, const std::string &payload) {
  GppResult r{};
  gpp::dpi_scan(set.blob.data(), reinterpret_cast<const uint8_t *>(payload.data()),
                static_cast<uint32_t>(payload.size()), r);
  Tally t;
  t.min_id = r.dpi_pattern;
  t.hits = r.dpi_hits;
  return t;
}

// Every capture, with the two ET Open categories and the whole ET Open 2024
// folder (its fast patterns, as IDS users load it, and every content), each
// set as one regex-API database (the literal API aborts some scans, below).
TEST(DpiHyperscan, EtOpenSetsAgreeOnEveryCapture) {
  const std::string dir = test::shared_data_dir();
  struct SetSpec {
    std::string path;
    gpp::DpiSelect select;
  };
  const SetSpec specs[] = {
      {dir + "/dpi/et_open_emerging-scan.rules", gpp::DpiSelect::All},
      {dir + "/dpi/et_open_emerging-shellcode.rules", gpp::DpiSelect::All},
      {dir + "/dpi/et_open_2024", gpp::DpiSelect::FastPattern},
      {dir + "/dpi/et_open_2024", gpp::DpiSelect::All},
  };
  for (const SetSpec &spec : specs) {
    const std::string label =
        spec.path.substr(dir.size() + 5) +
        (spec.select == gpp::DpiSelect::FastPattern ? " (fast patterns)" : " (every content)");
    std::string error;
    auto set = gpp::load_dpi_patterns(spec.path, &error, spec.select);
    ASSERT_TRUE(set) << error;
    hs_database_t *db = compile(*set, HsApi::Regex, &error);
    ASSERT_NE(db, nullptr) << label << ": " << error;
    hs_scratch_t *scratch = nullptr;
    ASSERT_EQ(hs_alloc_scratch(db, &scratch), HS_SUCCESS);

    gpp::CoreConfig cfg{};
    std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
    cfg.dpi = set->blob.data();
    size_t packets = 0, with_hits = 0;
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
        GppResult r;
        gpp::process_packet(bytes, h->caplen, h->len, linktype, ++packets, 0, cfg, r);
        Tally t;
        if (r.payload_length) {
          ASSERT_EQ(hs_scan(db, reinterpret_cast<const char *>(bytes) + r.payload_offset,
                            r.payload_length, 0, scratch, on_match, &t),
                    HS_SUCCESS);
        }
        ASSERT_EQ(r.dpi_pattern, t.min_id) << label << ": " << name << " packet " << packets;
        ASSERT_EQ(r.dpi_hits, t.hits) << label << ": " << name << " packet " << packets;
        with_hits += t.hits > 0;
      }
      pcap_close(p);
    }
    closedir(d);
    std::printf("%s: %zu patterns, %zu packets, %zu with Hyperscan matches, all equal\n",
                label.c_str(), set->patterns.size(), packets, with_hits);
    EXPECT_GT(with_hits, 0u);
    hs_free_scratch(scratch);
    hs_free_database(db);
  }
}

// gpupacket-cpu-peers, ET Open 2024 fast patterns on its 1500-byte traffic,
// counted 26 Hyperscan matches where the payload has 185 (seed 4, packet
// 703): hs_scan returned HS_UNKNOWN_ERROR (Hyperscan 5.4.0, literal API) and
// had stopped at offset 266, inside the 76-byte base64 MZ header of sids
// 2029538 (exact) and 2051681 (nocase); the harness did not check the return.
// The first 320 payload bytes and the patterns involved, as in test_dpi.cpp:
// "_" at 34 and the header at 234, 3 matches.  The regex API finds them all;
// the literal API either aborts the same way or, in a Hyperscan without that
// bug, must find them too.
using mz_case::kMzPayload;
using mz_case::kMzRules;

TEST(DpiHyperscan, EtOpenMzHeaderPayloadRegexApiAgreesLiteralApiMayAbort) {
  std::string error;
  auto set = gpp::parse_dpi_patterns(kMzRules, "mz.rules", &error);
  ASSERT_TRUE(set) << error;
  ASSERT_EQ(set->patterns.size(), 3u);
  const Tally mine = ours(*set, kMzPayload);
  EXPECT_EQ(mine.hits, 3u);
  EXPECT_EQ(mine.min_id, 0);
  for (HsApi api : {HsApi::Regex, HsApi::Literal}) {
    hs_database_t *db = compile(*set, api, &error);
    ASSERT_NE(db, nullptr) << error;
    hs_scratch_t *scratch = nullptr;
    ASSERT_EQ(hs_alloc_scratch(db, &scratch), HS_SUCCESS);
    Tally theirs;
    const hs_error_t rc = hs_tally(db, scratch, kMzPayload, &theirs);
    if (api == HsApi::Regex || rc == HS_SUCCESS) {
      EXPECT_EQ(rc, HS_SUCCESS);
      EXPECT_EQ(theirs.hits, mine.hits);
      EXPECT_EQ(theirs.min_id, mine.min_id);
    } else {
      // Hyperscan 5.4.0: an internal error, the scan stopped after "_".
      EXPECT_EQ(rc, HS_UNKNOWN_ERROR);
      EXPECT_LT(theirs.hits, mine.hits);
      std::printf("Hyperscan %s literal API: hs_scan %d after %u of %u matches\n", hs_version(),
                  rc, theirs.hits, mine.hits);
    }
    hs_free_scratch(scratch);
    hs_free_database(db);
  }
}

// The whole ET Open 2024 folder, one fast pattern per rule as an IDS feeds
// its matcher: each pattern's own bytes as the payload, against all the
// patterns.  The regex API agrees on every one; the literal API's failures
// are only counted (Hyperscan 5.4.0: the two MZ header patterns above).
TEST(DpiHyperscan, EtOpenFastPatternsAgreeOnTheirOwnBytes) {
  std::string error;
  auto set = test::load_et_open_2024(&error);
  ASSERT_TRUE(set) << error;
  ASSERT_GT(set->patterns.size(), 10000u);
  hs_database_t *regex_db = compile(*set, HsApi::Regex, &error);
  ASSERT_NE(regex_db, nullptr) << error;
  hs_database_t *literal_db = compile(*set, HsApi::Literal, &error);
  ASSERT_NE(literal_db, nullptr) << error;
  hs_scratch_t *regex_scratch = nullptr, *literal_scratch = nullptr;
  ASSERT_EQ(hs_alloc_scratch(regex_db, &regex_scratch), HS_SUCCESS);
  ASSERT_EQ(hs_alloc_scratch(literal_db, &literal_scratch), HS_SUCCESS);
  size_t literal_failures = 0;
  for (size_t i = 0; i < set->patterns.size(); ++i) {
    const std::string &payload = set->patterns[i].bytes;
    const Tally mine = ours(*set, payload);
    ASSERT_GT(mine.hits, 0u) << "pattern " << i;
    ASSERT_LE(mine.min_id, static_cast<int32_t>(i)) << "pattern " << i;
    Tally theirs;
    ASSERT_EQ(hs_tally(regex_db, regex_scratch, payload, &theirs), HS_SUCCESS) << "pattern " << i;
    ASSERT_EQ(theirs.hits, mine.hits) << "pattern " << i;
    ASSERT_EQ(theirs.min_id, mine.min_id) << "pattern " << i;
    if (hs_tally(literal_db, literal_scratch, payload, &theirs) != HS_SUCCESS) {
      ++literal_failures;
    } else {
      EXPECT_EQ(theirs.hits, mine.hits) << "pattern " << i;
      EXPECT_EQ(theirs.min_id, mine.min_id) << "pattern " << i;
    }
  }
  std::printf("%zu fast patterns: regex API agrees on all; literal API failed on %zu\n",
              set->patterns.size(), literal_failures);
  hs_free_scratch(regex_scratch);
  hs_free_scratch(literal_scratch);
  hs_free_database(regex_db);
  hs_free_database(literal_db);
}

} // namespace
