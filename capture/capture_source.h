// The bytes of a capture file, as the record walkers read them: the file
// mapped into memory where it is stored plainly, or the output of a
// decompressor thread (gzip, zstd) in a sliding window.  No GStreamer.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>

namespace gpp::capture {

enum class Compression { None, Gzip, Zstd };

const char *compression_name(Compression c);

// The compression a file's first bytes announce (gzip 1f 8b, zstd 28 b5 2f fd),
// whatever its name says.
Compression sniff_compression(const uint8_t *head, size_t len);
// The compression the file at `path` announces; None when it cannot be read.
Compression file_compression(const std::string &path);

class ByteSource {
public:
  // Opens `path`; nullptr with a one-line reason in `error` when it cannot.
  static std::unique_ptr<ByteSource> open(const std::string &path, std::string *error);
  virtual ~ByteSource() = default;
  ByteSource(const ByteSource &) = delete;
  ByteSource &operator=(const ByteSource &) = delete;

  // Makes bytes [offset, offset + len) readable through at(); returns how
  // many of them are (fewer only at the end of the data, or where error()
  // says why).  May move the bytes: pointers from at() taken before a call
  // are stale after it, offsets stay valid.
  virtual size_t ensure(uint64_t offset, size_t len) = 0;
  // The ensured byte at `offset`.  Safe from several threads at once while
  // no thread calls ensure() or release().
  virtual const uint8_t *at(uint64_t offset) const = 0;
  // Bytes before `offset` will not be asked for again.
  virtual void release(uint64_t offset) = 0;
  // The whole of the bytes at one fixed address (a mapped file); nullptr
  // where bytes move (a decoded stream).
  virtual const uint8_t *fixed_bytes(uint64_t * /*size*/) const { return nullptr; }
  // Why the data ended early ("" when it did not): damaged or truncated
  // compressed input, or a read error.
  virtual std::string error() const { return {}; }

  Compression compression() const { return compression_; }

protected:
  explicit ByteSource(Compression c) : compression_(c) {}

private:
  Compression compression_;
};

// A stdio stream over the (decompressed) bytes of `path` from the start, for
// libpcap (pcap_fopen_offline); nullptr with the reason in `error`.
FILE *open_decompressed_stream(const std::string &path, std::string *error);

} // namespace gpp::capture
