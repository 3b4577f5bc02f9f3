// Reads a whole text file for the rule and pattern loaders, with one set of
// checks and messages (missing, not a regular file, too large, unreadable).
// The file is read to its end, not to the size stat() or a seek reports:
// files such as /proc/self/status report 0 and still hold text.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

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

} // namespace gpp
