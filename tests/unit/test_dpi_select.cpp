// DPI pattern selection (dpi-select): one fast pattern per rule as an IDS
// gives its multi-pattern matcher, against every content; rule folders.
#include <gtest/gtest.h>

#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <set>
#include <string>

#include "dpi_patterns.h"
#include "et_open.h"
#include "shared_data.h"

namespace {

std::shared_ptr<const gpp::DpiPatternSet> fast(const std::string &text, std::string *error) {
  return gpp::parse_dpi_patterns(text, "test.rules", error, gpp::DpiSelect::FastPattern);
}

const char *const kRules =
    // the marked content wins over a longer one
    "alert tcp any any -> any any (content:\"longest content\"; content:\"ab\"; fast_pattern; "
    "sid:10;)\n"
    // no mark: the longest positive content; a longer negated one never counts
    "alert http any any -> any any (content:\"GET\"; nocase; content:!\"much longer, negated\"; "
    "content:\"User-Agent\"; nocase; sid:11;)\n"
    // fast_pattern:only, and a rule without any positive content
    "alert udp any any -> any any (content:\"|de ad|\"; content:\"beef\"; fast_pattern:only; "
    "sid:12;)\n"
    "alert tcp any any -> any any (content:!\"never\"; pcre:\"/x/\"; sid:13;)\n"
    // Suricata's chop form: a slice of the content
    "alert tcp any any -> any any (content:\"0123456789\"; fast_pattern:2,4; sid:14;)\n"
    // equal lengths: the first
    "alert tcp any any -> any any (content:\"one\"; content:\"two\"; sid:15;)\n"
    // plain pattern lines stay patterns
    "literal\n";

TEST(DpiSelect, FastPatternOnePerRule) {
  std::string error;
  auto set = fast(kRules, &error);
  ASSERT_TRUE(set) << error;
  ASSERT_EQ(set->patterns.size(), 6u);
  const struct {
    const char *bytes;
    bool nocase;
    uint32_t sid;
  } want[] = {{"ab", false, 10},   {"User-Agent", true, 11}, {"beef", false, 12},
              {"2345", false, 14}, {"one", false, 15},       {"literal", false, 0}};
  for (size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(set->patterns[i].bytes, want[i].bytes) << i;
    EXPECT_EQ(set->patterns[i].nocase, want[i].nocase) << i;
    EXPECT_EQ(set->patterns[i].sid, want[i].sid) << i;
  }
}

TEST(DpiSelect, AllKeepsEveryPositiveContent) {
  std::string error;
  auto set = gpp::parse_dpi_patterns(kRules, "test.rules", &error, gpp::DpiSelect::All);
  ASSERT_TRUE(set) << error;
  // 2 + 2 + 2 + 0 + 1 + 2 contents, and the literal line.
  EXPECT_EQ(set->patterns.size(), 10u);
  EXPECT_EQ(set->patterns[8].bytes, "two");
  EXPECT_EQ(set->patterns[6].bytes, "0123456789"); // no chop: the whole content
}

TEST(DpiSelect, IdsNumberRulesAndTheScanReportsTheFirstRule) {
  std::string error;
  auto set = fast(kRules, &error);
  ASSERT_TRUE(set) << error;
  const std::string payload = "xx user-agent: beef and ab 2345";
  GppResult r{};
  gpp::dpi_scan(set->blob.data(), reinterpret_cast<const uint8_t *>(payload.data()),
                static_cast<uint32_t>(payload.size()), r);
  EXPECT_EQ(r.dpi_pattern, 0); // "ab", the first rule's fast pattern
  EXPECT_EQ(r.dpi_hits, 4u);   // User-Agent, beef, ab, 2345
}

TEST(DpiSelect, BadFastPatternIsAnErrorWithItsLine) {
  std::string error;
  EXPECT_FALSE(fast("alert tcp any any -> any any (content:\"abc\"; fast_pattern:2,5; sid:1;)\n",
                    &error));
  EXPECT_NE(error.find("test.rules:1:"), std::string::npos) << error;
  EXPECT_NE(error.find("fast_pattern:2,5"), std::string::npos) << error;
  EXPECT_FALSE(fast("alert tcp any any -> any any (nocase; content:\"abc\"; sid:1;)\n", &error));
  EXPECT_NE(error.find("before any content"), std::string::npos) << error;
  EXPECT_FALSE(fast("alert tcp any any -> any any (content:\"abc\"; sid:x1;)\n", &error));
  EXPECT_NE(error.find("sid:x1"), std::string::npos) << error;
}

TEST(DpiSelect, NamesRoundTrip) {
  for (gpp::DpiSelect s : {gpp::DpiSelect::All, gpp::DpiSelect::FastPattern}) {
    gpp::DpiSelect back = s == gpp::DpiSelect::All ? gpp::DpiSelect::FastPattern
                                                   : gpp::DpiSelect::All;
    ASSERT_TRUE(gpp::dpi_select_from_name(gpp::dpi_select_name(s), &back));
    EXPECT_EQ(back, s);
  }
  gpp::DpiSelect unused;
  EXPECT_FALSE(gpp::dpi_select_from_name("fast_pattern", &unused));
}

// A folder of rule files loads as their concatenation in name order.
TEST(DpiSelect, FolderLoadsItsRuleFilesInNameOrder) {
  char dir[] = "/tmp/gpp-dpi-folder-XXXXXX";
  ASSERT_TRUE(mkdtemp(dir));
  const std::string d = dir;
  std::ofstream(d + "/b.rules") << "alert tcp any any -> any any (content:\"second\"; sid:2;)\n";
  std::ofstream(d + "/a.rules") << "alert tcp any any -> any any (content:\"first\"; sid:1;)\n";
  std::ofstream(d + "/c.txt") << "ignored\n";
  std::string error;
  auto set = gpp::load_dpi_patterns(d, &error, gpp::DpiSelect::FastPattern);
  ASSERT_TRUE(set) << error;
  ASSERT_EQ(set->patterns.size(), 2u);
  EXPECT_EQ(set->patterns[0].bytes, "first");
  EXPECT_EQ(set->patterns[1].bytes, "second");
  // An error names the file and line.
  std::ofstream(d + "/b.rules") << "alert tcp any any -> any any (content:\"x; sid:2;)\n";
  EXPECT_FALSE(gpp::load_dpi_patterns(d, &error));
  EXPECT_NE(error.find(d + "/b.rules:1:"), std::string::npos) << error;
  for (const char *f : {"a.rules", "b.rules", "c.txt"}) unlink((d + "/" + f).c_str());
  EXPECT_FALSE(gpp::load_dpi_patterns(d, &error));
  EXPECT_NE(error.find("without *.rules"), std::string::npos) << error;
  rmdir(dir);
}

// ET Open 2024 as an IDS loads it (../shared/data/dpi/SOURCES.md): 15,941
// rules with a positive content, one fast pattern each.
TEST(DpiSelect, EtOpen2024FastPatterns) {
  std::string error;
  auto set = test::load_et_open_2024(&error);
  ASSERT_TRUE(set) << error;
  EXPECT_EQ(set->patterns.size(), 15941u);
  std::set<std::pair<std::string, bool>> distinct;
  size_t with_sid = 0;
  for (const gpp::DpiPattern &p : set->patterns) {
    distinct.insert({p.bytes, p.nocase});
    with_sid += p.sid != 0;
  }
  EXPECT_EQ(with_sid, set->patterns.size());
  EXPECT_GT(distinct.size(), 13900u);
  EXPECT_LT(distinct.size(), 13950u);
}

} // namespace
