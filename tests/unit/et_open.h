// ET Open 2024 as an IDS loads it (../shared/data/dpi/SOURCES.md): one fast
// pattern per rule, 15,941 patterns; the realistic set of the DPI tests.
#pragma once

#include <memory>
#include <string>

#include "dpi_patterns.h"
#include "shared_data.h"

namespace test {

inline std::shared_ptr<const gpp::DpiPatternSet> load_et_open_2024(std::string *error) {
  return gpp::load_dpi_patterns(shared_data_dir() + "/dpi/et_open_2024", error,
                                gpp::DpiSelect::FastPattern);
}

} // namespace test
