// The rule and pattern loaders' file reading (gpu/read_file.h): files whose
// size stat() cannot tell (procfs) are read to their end, never taken as a
// length; the size limit holds however the size is learned.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
#include <random>
#include <string>

#include "acl_rules.h"
#include "dpi_patterns.h"
#include "read_file.h"

namespace {

TEST(ReadFile, ProcFilesAreReadToTheirEnd) {
  // stat() says 0 bytes; the text is there.
  std::string text, error;
  ASSERT_TRUE(gpp::read_text_file("/proc/self/status", 1 << 20, "a test file", &text, &error)) << error;
  EXPECT_NE(text.find("Name:"), std::string::npos);
  // Loaders given such files judge their text: no abort, a clear answer.
  EXPECT_FALSE(gpp::load_acl_rules("/proc/self/status", &error));
  EXPECT_NE(error.find("/proc/self/status:1:"), std::string::npos) << error;
  auto dpi = gpp::load_dpi_patterns("/proc/cpuinfo", &error); // literal lines: a valid pattern file
  if (!dpi) {
    EXPECT_NE(error.find("/proc/cpuinfo"), std::string::npos) << error;
  }
}

TEST(ReadFile, TheLimitHoldsWhetherOrNotStatKnowsTheSize) {
  std::string text, error;
  // /proc/self/maps is longer than 16 bytes but stat() says 0.
  EXPECT_FALSE(gpp::read_text_file("/proc/self/maps", 16, "a test file", &text, &error));
  EXPECT_NE(error.find("too large for a test file"), std::string::npos) << error;
  char path[] = "/tmp/gpp-read-file-XXXXXX";
  const int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, "0123456789", 10), 10);
  close(fd);
  EXPECT_FALSE(gpp::read_text_file(path, 9, "a test file", &text, &error));
  EXPECT_NE(error.find("too large"), std::string::npos) << error;
  ASSERT_TRUE(gpp::read_text_file(path, 10, "a test file", &text, &error)) << error;
  EXPECT_EQ(text, "0123456789");
  unlink(path);
  EXPECT_FALSE(gpp::read_text_file(path, 10, "a test file", &text, &error));
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}

} // namespace

namespace {

// What the rule and pattern loaders make of text a user did not mean as
// written (issue: rule files misread silently): each answer decided with
// Snort/Suricata and DPDK test-acl as references.
TEST(RuleText, AByteOrderMarkIsNotPartOfTheFirstLine) {
  std::string error;
  auto acl = gpp::parse_acl_rules("\xEF\xBB\xBF@10.0.0.0/8 0.0.0.0/0 0 : 65535 0 : 65535 0/0\n",
                                  "bom.rules", &error);
  ASSERT_TRUE(acl) << error;
  EXPECT_EQ(acl->rules.size(), 1u);
  auto dpi = gpp::parse_dpi_patterns("\xEF\xBB\xBF" "abc\n", "bom.patterns", &error);
  ASSERT_TRUE(dpi) << error;
  EXPECT_EQ(dpi->patterns[0].bytes, "abc");
}

TEST(RuleText, ANulByteInARuleIsRefused) {
  std::string error;
  const std::string acl_line("@1.2.3.4\0junk/32 0.0.0.0/0 0 : 65535 0 : 65535 0/0\n", 51);
  EXPECT_FALSE(gpp::parse_acl_rules(acl_line, "nul.rules", &error));
  EXPECT_NE(error.find("nul.rules:1: a NUL byte"), std::string::npos) << error;
  const std::string rule("alert tcp any any -> any any (content:\"a\0b\"; sid:1;)\n", 53);
  EXPECT_FALSE(gpp::parse_dpi_patterns(rule, "nul.rules", &error));
  EXPECT_NE(error.find("nul.rules:1: a NUL byte"), std::string::npos) << error;
}

TEST(RuleText, RulesMayBeTabSeparatedButTheirActionIsLowerCase) {
  std::string error;
  auto set = gpp::parse_dpi_patterns("alert\ttcp any any -> any any (content:\"tabbed\"; sid:1;)\n",
                                     "tab.rules", &error);
  ASSERT_TRUE(set) << error;
  ASSERT_EQ(set->patterns.size(), 1u); // the content, not the whole line
  EXPECT_EQ(set->patterns[0].bytes, "tabbed");
  EXPECT_FALSE(gpp::parse_dpi_patterns("Alert tcp any any -> any any (content:\"x\"; sid:1;)\n",
                                       "case.rules", &error));
  EXPECT_NE(error.find("case.rules:1: rule actions are lower case"), std::string::npos) << error;
  // A lone word stays a pattern, whatever it spells.
  ASSERT_TRUE(gpp::parse_dpi_patterns("Alert\n", "word.patterns", &error)) << error;
}

TEST(RuleText, AHugeWordIsCutInTheMessage) {
  std::string error;
  const std::string word(1 << 20, 'x');
  EXPECT_FALSE(gpp::parse_acl_rules("@" + word + "/8 0.0.0.0/0 0 : 1 0 : 1 0/0\n", "big.rules",
                                    &error));
  EXPECT_LT(error.size(), 300u) << error.substr(0, 300);
  EXPECT_NE(error.find("bytes)"), std::string::npos) << error.substr(0, 300);
  EXPECT_FALSE(gpp::parse_dpi_patterns("alert tcp any any -> any any (content:" + word + ";)\n",
                                       "big.rules", &error));
  EXPECT_LT(error.size(), 300u) << error.substr(0, 300);
}

TEST(RuleText, PortsAreDecimalOrHexAsTestAclReadsThem) {
  std::string error;
  auto set = gpp::parse_acl_rules("@0.0.0.0/0 0.0.0.0/0 0 : 0xFFFF 0x50 : 80 0/0\n", "hex.rules",
                                  &error);
  ASSERT_TRUE(set) << error;
  EXPECT_EQ(set->rules[0].sport_hi, 65535);
  EXPECT_EQ(set->rules[0].dport_lo, 80);
  // Never octal: a leading zero is decimal.
  set = gpp::parse_acl_rules("@0.0.0.0/0 0.0.0.0/0 0 : 010 0 : 1 0/0\n", "oct.rules", &error);
  ASSERT_TRUE(set) << error;
  EXPECT_EQ(set->rules[0].sport_hi, 10);
}

} // namespace

namespace {

// The DPI automaton's state limit names the line where it was reached.
TEST(RuleText, TheDpiStateLimitNamesItsLine) {
  // The automata hold the first kDpiPrefixBytes bytes of each pattern: lines
  // of that many random letters add about that many states each.
  std::mt19937 rng(7);
  std::vector<std::string> lines;
  std::string text;
  for (int line = 0; line < 40000; ++line) {
    std::string pattern;
    for (uint32_t i = 0; i < gpp::kDpiPrefixBytes + 5; ++i)
      pattern += static_cast<char>('a' + rng() % 26);
    lines.push_back(pattern);
    text += pattern + '\n';
  }
  std::string error;
  EXPECT_FALSE(gpp::parse_dpi_patterns(text, "many.patterns", &error));
  const std::string named = "limit is reached at the pattern of many.patterns:";
  const size_t at = error.find(named);
  ASSERT_NE(at, std::string::npos) << error;
  const int line = std::atoi(error.c_str() + at + named.size());
  // That line is where it is reached: the lines before it load.
  ASSERT_GT(line, 1000) << error;
  std::string before;
  for (int i = 0; i < line - 1; ++i) before += lines[i] + '\n';
  EXPECT_TRUE(gpp::parse_dpi_patterns(before, "many.patterns", &error)) << error;
}

} // namespace
