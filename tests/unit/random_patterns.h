// Random DPI pattern sets for the property tests: the CPU's scan against
// the naive matcher (tests/unit/test_dpi.cpp) and the GPU's against the CPU
// and the same matcher (tests/gpu/test_gpu_parity.cpp).  Patterns of 1 to 700
// bytes (so many are longer than the automata's prefixes and end in their
// tail tries) from a small alphabet, so that they overlap, nest, share prefixes and
// suffixes, with runs like "aaaa"; a third as Suricata rules with nocase.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gpptest {

struct RandomPatterns {
  std::vector<std::string> patterns;
  std::string text; // the pattern file: one pattern per line, or a rule
};

template <typename Rng> RandomPatterns random_patterns(Rng &rng) {
  RandomPatterns out;
  const int count = 1 + rng() % 40;
  for (int k = 0; k < count; ++k) {
    std::string pat;
    const uint32_t len = rng() % 4 == 0 ? 1 + rng() % 700 : 1 + rng() % 60;
    const int kind = rng() % 4;
    for (uint32_t i = 0; i < len; ++i)
      pat.push_back(kind == 0 ? 'a' : "abAB"[rng() % (kind == 1 ? 2 : 4)]);
    // Some patterns extend or end another one.
    if (!out.patterns.empty() && rng() % 3 == 0) {
      const std::string &other = out.patterns[rng() % out.patterns.size()];
      pat = rng() % 2 ? other + pat.substr(0, rng() % 40) : pat.substr(0, rng() % 40) + other;
      if (pat.empty()) pat = "a";
    }
    out.patterns.push_back(pat);
    out.text += rng() % 3 == 0
                    ? "alert tcp any any -> any any (content:\"" + pat + "\"; nocase; sid:1;)\n"
                    : pat + "\n";
  }
  return out;
}

// A payload of the patterns and alphabet bytes between them, grown while
// under `at_least` bytes (it may end longer).
template <typename Rng>
std::string random_payload(Rng &rng, const std::vector<std::string> &patterns, size_t at_least) {
  std::string payload;
  while (payload.size() < at_least && rng() % 8) {
    if (rng() % 2) payload += patterns[rng() % patterns.size()];
    for (int k = rng() % 20; k > 0; --k) payload.push_back("abAB"[rng() % 4]);
  }
  return payload;
}

} // namespace gpptest
