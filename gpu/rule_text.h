// Shared by the rule and pattern loaders: how they treat the text of a file
// before and around parsing it, so both answer alike.  Host only.
#pragma once

#include <string>

namespace gpp {

// A UTF-8 byte order mark at the start of a file (editors on Windows write
// one) is not part of the first line.
inline void strip_utf8_bom(std::string *text) {
  if (text->compare(0, 3, "\xEF\xBB\xBF") == 0) text->erase(0, 3);
}

// Text from a file quoted in an error message, cut to `max` bytes so that a
// megabyte-long word does not become a megabyte-long message.
inline std::string quoted(const std::string &text, size_t max = 64) {
  if (text.size() <= max) return "\"" + text + "\"";
  return "\"" + text.substr(0, max) + "...\" (" + std::to_string(text.size()) + " bytes)";
}

} // namespace gpp
