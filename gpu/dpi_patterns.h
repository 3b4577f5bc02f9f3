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
// Which contents of a rule become patterns is the selection (DpiSelect):
// - All: every positive content, ids 0-based in file order of pattern lines
//   and content strings (a literal-matching workload);
// - FastPattern: as an IDS feeds its multi-pattern matcher (Suricata,
//   Snort 3), one content per rule: the one marked `fast_pattern` (its
//   `fast_pattern:OFFSET,LENGTH` slice where given), else the longest
//   positive content (the first of equal ones); rules without a positive
//   content give none.  Ids then number those rules in file order, and each
//   pattern keeps its rule's sid.
// The path may also name a directory: its *.rules files are read in name
// order as one file (an IDS rule folder such as ET Open's).
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
  uint32_t sid = 0; // the rule's sid: option, 0 for pattern lines and rules without one
  std::string where; // "FILE:LINE" of the line it came from, for messages
};

enum class DpiSelect { All, FastPattern };
// Names as the element's dpi-select property and the bench spell them.
const char *dpi_select_name(DpiSelect select);
bool dpi_select_from_name(const std::string &name, DpiSelect *select);

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
                                                        std::string *error,
                                                        DpiSelect select = DpiSelect::All);
std::shared_ptr<const DpiPatternSet> load_dpi_patterns(const std::string &path, std::string *error,
                                                       DpiSelect select = DpiSelect::All);

} // namespace gpp
