// Reads a whole text file for the rule and pattern loaders, with one set of
// checks and messages (missing, not a regular file, too large, unreadable).
// The file is read to its end, not to the size stat() or a seek reports:
// files such as /proc/self/status report 0 and still hold text.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <initializer_list>
#include <vector>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <string>

namespace gpp {

inline bool read_text_file(const std::string &path, int64_t max_bytes, const char *what,
                           std::string *text, std::string *error) {
  const auto limit = [&] {
    return path + ": more than " + std::to_string(max_bytes) + " bytes is too large for " + what +
           " (limit " + std::to_string(max_bytes >> 20) + " MiB)";
  };
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a regular file";
    return false;
  }
  if (st.st_size > max_bytes) { // refused before reading a byte
    *error = limit();
    return false;
  }
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  text->clear();
  char chunk[1 << 16];
  for (;;) {
    const ssize_t n = read(fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      *error = path + ": read error: " + std::strerror(errno);
      close(fd);
      return false;
    }
    if (n == 0) break;
    if (static_cast<int64_t>(text->size()) + n > max_bytes) {
      *error = limit();
      close(fd);
      return false;
    }
    text->append(chunk, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

// The names of the entries of folder `dir` that end with one of `suffixes`,
// in name order (a rule folder, a folder of captures); false and *error when
// the folder cannot be read.
inline bool files_in(const std::string &dir, std::initializer_list<const char *> suffixes,
                     std::vector<std::string> *names, std::string *error) {
  DIR *d = opendir(dir.c_str());
  if (!d) {
    *error = dir + ": cannot open: " + std::strerror(errno);
    return false;
  }
  names->clear();
  while (const dirent *e = readdir(d)) {
    const std::string n = e->d_name;
    for (const char *suffix : suffixes) {
      const size_t len = std::strlen(suffix);
      if (n.size() > len && n.compare(n.size() - len, len, suffix) == 0) {
        names->push_back(n);
        break;
      }
    }
  }
  closedir(d);
  std::sort(names->begin(), names->end());
  return true;
}

} // namespace gpp
