// Where the unit tests find ../shared/data: --shared-data-dir=DIR on the
// command line (meson passes it), else the GPP_SHARED_DATA_DIR environment
// variable, else ../shared/data (the checkout's neighbour).
#pragma once

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace test {

inline std::string shared_data_dir() {
  const std::string flag = "--shared-data-dir=";
  for (const std::string &arg : ::testing::internal::GetArgvs())
    if (arg.compare(0, flag.size(), flag) == 0) return arg.substr(flag.size());
  if (const char *env = std::getenv("GPP_SHARED_DATA_DIR")) return env;
  return "../shared/data";
}

} // namespace test
