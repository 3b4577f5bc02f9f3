// DPI pattern files: parsing and building the automata blob of dpi.h.
// Host only.
//
// Two forms, told apart line by line:
// - a pattern line: literal bytes, with Snort-style |41 42| hex escapes
//   (write '|' itself as |7C|); blank lines and lines starting with '#' are
//   skipped;
// - a Snort/Suricata rule (a line starting with alert, drop, pass, reject or
//   log): each of its content:"..." strings is a pattern, in order, with
//   \" \; \\ escapes and |..| hex; `nocase` after a content makes that
//   content case-insensitive; negated contents (content:!"...") are not
//   patterns.  Commented-out rules (#alert ...) are skipped.
// Pattern ids are 0-based in file order: pattern lines, or content strings.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "dpi.h"

namespace gpp {

struct DpiPattern {
  std::string bytes;
  bool nocase = false;
};

class DpiPatternSet {
public:
  std::vector<DpiPattern> patterns;
  std::vector<uint8_t> blob; // dpi.h layout

  // Naive reference: smallest matching id and all occurrences (the test oracle).
  void naive_scan(const uint8_t *payload, uint32_t len, int32_t *pattern, uint32_t *hits) const;
};

constexpr size_t kMaxDpiPatterns = 100000;
constexpr size_t kMaxDpiStates = 1u << 18; // per automaton: 256 MiB of tables, 512 MiB for both

std::shared_ptr<const DpiPatternSet> parse_dpi_patterns(const std::string &text,
                                                        const std::string &name,
                                                        std::string *error);
std::shared_ptr<const DpiPatternSet> load_dpi_patterns(const std::string &path, std::string *error);

} // namespace gpp
