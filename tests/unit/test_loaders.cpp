// The rule and pattern loaders' file reading (gpu/read_file.h): files whose
// size stat() cannot tell (procfs) are read to their end, never taken as a
// length; the size limit holds however the size is learned.
#include <gtest/gtest.h>

#include <unistd.h>

#include <fstream>
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
