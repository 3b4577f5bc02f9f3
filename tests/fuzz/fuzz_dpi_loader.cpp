// Fuzzes the DPI pattern loader (gpu/dpi_patterns.cpp) and the automata it
// builds: any text is either refused with a reason or loaded (either
// selection), and for a loaded set the automaton scan (dpi_scan, what CPU and
// GPU run) must give the naive scan's first pattern and hit count
// (DpiPatternSet::naive_scan) on the text itself, on each pattern alone, on
// the patterns run together, and on the patterns with their case flipped.
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "dpi.h"
#include "dpi_patterns.h"
#include "fuzz_common.h"

namespace {

void check(const gpp::DpiPatternSet &set, const std::string &payload) {
  const auto *p = reinterpret_cast<const uint8_t *>(payload.data());
  const uint32_t len = static_cast<uint32_t>(payload.size());
  GppResult r{};
  r.dpi_pattern = -1;
  gpp::dpi_scan(set.blob.data(), p, len, r);
  int32_t pattern = -1;
  uint32_t hits = 0;
  set.naive_scan(p, len, &pattern, &hits);
  if (r.dpi_pattern != pattern || r.dpi_hits != hits) {
    std::fprintf(stderr, "FUZZ FAILURE: dpi: scan %d/%u, naive %d/%u on %zu bytes\n",
                 r.dpi_pattern, r.dpi_hits, pattern, hits, payload.size());
    std::abort();
  }
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  const gpp::DpiSelect select =
      data[0] & gppfuzz::kDpiFastPattern ? gpp::DpiSelect::FastPattern : gpp::DpiSelect::All;
  const std::string text(reinterpret_cast<const char *>(data + 1), size - 1);
  std::string error;
  auto set = gpp::parse_dpi_patterns(text, "fuzz.rules", &error, select);
  if (!set) {
    if (error.empty()) {
      std::fprintf(stderr, "FUZZ FAILURE: dpi: refused without a reason\n");
      std::abort();
    }
    return 0;
  }
  check(*set, text);
  std::string together, flipped;
  for (size_t i = 0; i < set->patterns.size() && i < 64; ++i) {
    const std::string &bytes = set->patterns[i].bytes;
    check(*set, bytes);
    together += bytes;
    for (unsigned char c : bytes)
      flipped += static_cast<char>(std::isupper(c) ? std::tolower(c) : std::toupper(c));
  }
  check(*set, together);
  check(*set, flipped);
  return 0;
}
