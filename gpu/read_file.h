// Reads a whole text file for the rule and pattern loaders, with one set of
// checks and messages (missing, not a regular file, too large).
#pragma once

#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <string>

namespace gpp {

inline bool read_text_file(const std::string &path, std::streamoff max_bytes, const char *what,
                           std::string *text, std::string *error) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    return false;
  }
  std::ifstream f(path, std::ios::binary);
  if (!f) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  f.seekg(0, std::ios::end);
  const std::streamoff size = f.tellg();
  if (size > max_bytes) {
    *error = path + ": " + std::to_string(size) + " bytes is too large for " + what + " (limit " +
             std::to_string(max_bytes >> 20) + " MiB)";
    return false;
  }
  f.seekg(0);
  text->assign(static_cast<size_t>(size), '\0');
  if (size > 0 && !f.read(&(*text)[0], size)) {
    *error = path + ": read error";
    return false;
  }
  return true;
}

} // namespace gpp
