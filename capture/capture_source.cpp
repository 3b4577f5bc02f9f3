#include "capture_source.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cerrno>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace gpp::capture {

const char *compression_name(Compression c) {
  switch (c) {
  case Compression::Gzip:
    return "gzip";
  case Compression::Zstd:
    return "zstd";
  case Compression::None:
    break;
  }
  return "none";
}

Compression sniff_compression(const uint8_t *head, size_t len) {
  if (len >= 2 && head[0] == 0x1f && head[1] == 0x8b) return Compression::Gzip;
  if (len >= 4 && head[0] == 0x28 && head[1] == 0xb5 && head[2] == 0x2f && head[3] == 0xfd)
    return Compression::Zstd;
  return Compression::None;
}

namespace {

std::string errno_text(const std::string &path, int err) {
  return path + ": " + std::strerror(err);
}

// A plain file mapped whole: the walkers read records where the page cache
// holds them, and each packet byte is copied once, into its batch.
class MappedFile final : public ByteSource {
public:
  MappedFile(const uint8_t *data, size_t size) : ByteSource(Compression::None), data_(data), size_(size) {}
  ~MappedFile() override {
    if (size_) munmap(const_cast<uint8_t *>(data_), size_);
  }

  size_t ensure(uint64_t offset, size_t len) override {
    if (offset >= size_) return 0;
    return static_cast<size_t>(std::min<uint64_t>(len, size_ - offset));
  }
  const uint8_t *at(uint64_t offset) const override { return data_ + offset; }
  const uint8_t *fixed_bytes(uint64_t *size) const override {
    *size = size_;
    return data_;
  }
  // Drops the pages behind the reader from this process (they stay in the
  // page cache), so a long file does not grow the resident set.
  void release(uint64_t offset) override {
    const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const uint64_t end = std::min<uint64_t>(offset, size_) / page * page;
    if (end >= dropped_ + kDropStep) {
      madvise(const_cast<uint8_t *>(data_) + dropped_, end - dropped_, MADV_DONTNEED);
      dropped_ = end;
    }
  }

private:
  static constexpr uint64_t kDropStep = 256ull << 20;
  const uint8_t *data_;
  size_t size_;
  uint64_t dropped_ = 0;
};

// Turns a file's bytes into the capture's bytes: gzip (every member of a
// concatenation), zstd (every frame) or plain reads (a file that cannot be mapped).  Returns false
// at the end; `error` says why when the end came early.
class Decoder {
public:
  virtual ~Decoder() = default;
  // Appends up to `room` decoded bytes to `out`; `produced` gets how many.
  virtual bool decode(uint8_t *out, size_t room, size_t *produced, std::string *error) = 0;
};

constexpr size_t kReadSize = 1u << 20;

class InputFile {
public:
  explicit InputFile(int fd) : fd_(fd), buf_(kReadSize) {}
  ~InputFile() { close(fd_); }
  // Refills when everything read was used; false at end of file or on error.
  bool fill(std::string *error) {
    if (pos_ < len_) return true;
    for (;;) {
      const ssize_t n = read(fd_, buf_.data(), buf_.size());
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        *error = std::string("read failed: ") + std::strerror(errno);
        return false;
      }
      consumed_ += len_;
      pos_ = 0;
      len_ = static_cast<size_t>(n);
      return n > 0;
    }
  }
  // fill(), and at the end of the file, whether that end cuts the
  // compressed data short (`inside` a unit of it, after `decoded` bytes).
  bool fill_or_end(bool inside, const char *format, const char *unit, uint64_t decoded,
                   std::string *error) {
    if (fill(error)) return true;
    if (error->empty() && inside)
      *error = std::string(format) + " data ends early: the file ends at compressed byte " +
               std::to_string(offset()) + ", inside " + unit + ", after " +
               std::to_string(decoded) + " decompressed bytes";
    return false;
  }
  const uint8_t *data() const { return buf_.data() + pos_; }
  size_t available() const { return len_ - pos_; }
  void advance(size_t n) { pos_ += n; }
  uint64_t offset() const { return consumed_ + pos_; } // bytes of the file used so far

private:
  int fd_;
  std::vector<uint8_t> buf_;
  size_t pos_ = 0, len_ = 0;
  uint64_t consumed_ = 0;
};

class PlainDecoder final : public Decoder {
public:
  explicit PlainDecoder(int fd) : in_(fd) {}
  bool decode(uint8_t *out, size_t room, size_t *produced, std::string *error) override {
    *produced = 0;
    if (!in_.fill(error)) return false;
    const size_t n = std::min(room, in_.available());
    std::memcpy(out, in_.data(), n);
    in_.advance(n);
    *produced = n;
    return true;
  }

private:
  InputFile in_;
};

class GzipDecoder final : public Decoder {
public:
  explicit GzipDecoder(int fd) : in_(fd) {
    ready_ = inflateInit2(&zs_, 15 + 32) == Z_OK; // a gzip header, as gzip writes it
  }
  ~GzipDecoder() override {
    if (ready_) inflateEnd(&zs_);
  }

  bool decode(uint8_t *out, size_t room, size_t *produced, std::string *error) override {
    *produced = 0;
    if (!ready_) {
      *error = "zlib could not start (out of memory)";
      return false;
    }
    while (*produced == 0) {
      if (in_.available() == 0 && !in_.fill_or_end(in_stream_, "gzip", "a compressed stream", decoded_, error))
        return false;
      if (!in_stream_) {
        // After a member: another one, or the end.  Bytes after the last
        // member that do not start one are ignored, as gzip -d ignores
        // the zeros some tools pad with (it warns; this says nothing).
        if (in_.data()[0] != 0x1f) return false;
        inflateReset(&zs_);
        in_stream_ = true;
      }
      zs_.next_in = const_cast<Bytef *>(in_.data());
      zs_.avail_in = static_cast<uInt>(in_.available());
      zs_.next_out = out + *produced;
      zs_.avail_out = static_cast<uInt>(room - *produced);
      const uint64_t at = in_.offset();
      const int rc = inflate(&zs_, Z_NO_FLUSH);
      in_.advance(in_.available() - zs_.avail_in);
      const size_t made = room - *produced - zs_.avail_out;
      *produced += made;
      decoded_ += made;
      if (rc == Z_STREAM_END) {
        in_stream_ = false;
      } else if (rc != Z_OK && rc != Z_BUF_ERROR) {
        *error = "gzip data is damaged near compressed byte " + std::to_string(at) + " (zlib: " +
                 (zs_.msg ? zs_.msg : zError(rc)) + "), after " + std::to_string(decoded_) +
                 " decompressed bytes";
        return false;
      }
    }
    return true;
  }

private:
  InputFile in_;
  z_stream zs_{};
  bool ready_ = false;
  bool in_stream_ = true;
  uint64_t decoded_ = 0;
};

class ZstdDecoder final : public Decoder {
public:
  explicit ZstdDecoder(int fd) : in_(fd), ctx_(ZSTD_createDCtx()) {}
  ~ZstdDecoder() override { ZSTD_freeDCtx(ctx_); }

  bool decode(uint8_t *out, size_t room, size_t *produced, std::string *error) override {
    *produced = 0;
    if (!ctx_) {
      *error = "libzstd could not start (out of memory)";
      return false;
    }
    while (*produced == 0) {
      if (in_.available() == 0 && !in_.fill_or_end(frame_open_, "zstd", "a frame", decoded_, error))
        return false;
      ZSTD_inBuffer input{in_.data(), in_.available(), 0};
      ZSTD_outBuffer output{out + *produced, room - *produced, 0};
      const uint64_t at = in_.offset();
      const size_t rc = ZSTD_decompressStream(ctx_, &output, &input);
      in_.advance(input.pos);
      *produced += output.pos;
      decoded_ += output.pos;
      if (ZSTD_isError(rc)) {
        *error = "zstd data is damaged near compressed byte " + std::to_string(at) + " (" +
                 ZSTD_getErrorName(rc) + "), after " + std::to_string(decoded_) +
                 " decompressed bytes";
        return false;
      }
      frame_open_ = rc != 0;
    }
    return true;
  }

private:
  InputFile in_;
  ZSTD_DCtx *ctx_;
  bool frame_open_ = false;
  uint64_t decoded_ = 0;
};

// The decoder runs on a thread of its own, a few chunks ahead of the walker,
// so decompression overlaps the walk and the copies into batches.  The
// window holds the bytes from the release point on, contiguous, so a record
// that straddles two chunks is still one span.
class DecodedStream final : public ByteSource {
public:
  DecodedStream(Compression c, std::unique_ptr<Decoder> decoder)
      : ByteSource(c), decoder_(std::move(decoder)), thread_([this] { decode_loop(); }) {}

  ~DecodedStream() override {
    {
      std::lock_guard<std::mutex> guard(mutex_);
      stopping_ = true;
    }
    changed_.notify_all();
    thread_.join();
  }

  size_t ensure(uint64_t offset, size_t len) override {
    const uint64_t want = offset + len;
    while (window_start_ + window_.size() < want) {
      std::vector<uint8_t> chunk;
      if (!next_chunk(&chunk)) break;
      append(chunk);
    }
    const uint64_t end = window_start_ + window_.size();
    return offset >= end ? 0 : static_cast<size_t>(std::min<uint64_t>(len, end - offset));
  }
  const uint8_t *at(uint64_t offset) const override {
    return window_.data() + (offset - window_start_);
  }
  void release(uint64_t offset) override { released_ = std::max(released_, offset); }
  std::string error() const override {
    std::lock_guard<std::mutex> guard(mutex_);
    return error_;
  }

private:
  static constexpr size_t kChunkSize = 4u << 20;
  static constexpr size_t kChunksAhead = 8;

  void decode_loop() {
    for (;;) {
      std::vector<uint8_t> chunk(kChunkSize);
      size_t filled = 0;
      std::string error;
      bool more = true;
      while (more && filled < chunk.size()) {
        size_t produced = 0;
        more = decoder_->decode(chunk.data() + filled, chunk.size() - filled, &produced, &error);
        filled += produced;
      }
      chunk.resize(filled);
      std::unique_lock<std::mutex> lock(mutex_);
      changed_.wait(lock, [this] { return stopping_ || chunks_.size() < kChunksAhead; });
      if (stopping_) return;
      if (filled) chunks_.push_back(std::move(chunk));
      if (!more) {
        ended_ = true;
        error_ = error;
        changed_.notify_all();
        return;
      }
      changed_.notify_all();
    }
  }

  bool next_chunk(std::vector<uint8_t> *chunk) {
    std::unique_lock<std::mutex> lock(mutex_);
    changed_.wait(lock, [this] { return !chunks_.empty() || ended_; });
    if (chunks_.empty()) return false;
    *chunk = std::move(chunks_.front());
    chunks_.pop_front();
    changed_.notify_all();
    return true;
  }

  void append(const std::vector<uint8_t> &chunk) {
    // Drop what was released, then add (the window grows only while one
    // batch's records span more than it holds).
    const uint64_t drop = std::min<uint64_t>(released_ - std::min(released_, window_start_),
                                             window_.size());
    if (drop) {
      window_.erase(window_.begin(), window_.begin() + static_cast<ptrdiff_t>(drop));
      window_start_ += drop;
    }
    window_.insert(window_.end(), chunk.begin(), chunk.end());
  }

  std::unique_ptr<Decoder> decoder_;
  std::vector<uint8_t> window_;
  uint64_t window_start_ = 0;
  uint64_t released_ = 0;

  mutable std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::vector<uint8_t>> chunks_;
  bool ended_ = false, stopping_ = false;
  std::string error_;
  std::thread thread_; // last: starts once the members above exist
};

int open_file(const std::string &path, std::string *error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) *error = errno_text(path, errno);
  return fd;
}

// The compression of an open file, read from its first bytes without
// consuming them (pread).
Compression file_compression(int fd) {
  uint8_t head[4];
  const ssize_t n = pread(fd, head, sizeof head, 0);
  return n > 0 ? sniff_compression(head, static_cast<size_t>(n)) : Compression::None;
}

std::unique_ptr<Decoder> make_decoder(Compression c, int fd) {
  switch (c) {
  case Compression::Gzip:
    return std::make_unique<GzipDecoder>(fd);
  case Compression::Zstd:
    return std::make_unique<ZstdDecoder>(fd);
  case Compression::None:
    break;
  }
  return std::make_unique<PlainDecoder>(fd);
}

} // namespace

Compression file_compression(const std::string &path) {
  std::string ignored;
  const int fd = open_file(path, &ignored);
  if (fd < 0) return Compression::None;
  const Compression c = file_compression(fd);
  close(fd);
  return c;
}

std::unique_ptr<ByteSource> ByteSource::open(const std::string &path, std::string *error) {
  const int fd = open_file(path, error);
  if (fd < 0) return nullptr;
  const Compression c = file_compression(fd);
  struct stat st{};
  if (c == Compression::None && fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    const size_t size = static_cast<size_t>(st.st_size);
    void *data = size ? mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0) : nullptr;
    if (data != MAP_FAILED) {
      close(fd);
      if (size) madvise(data, size, MADV_SEQUENTIAL);
      return std::make_unique<MappedFile>(static_cast<const uint8_t *>(data), size);
    }
  }
  return std::make_unique<DecodedStream>(c, make_decoder(c, fd));
}

namespace {

struct StreamCookie {
  std::unique_ptr<ByteSource> source;
  uint64_t position = 0;
};

ssize_t cookie_read(void *cookie, char *buf, size_t size) {
  auto *c = static_cast<StreamCookie *>(cookie);
  const size_t n = c->source->ensure(c->position, size);
  if (n) std::memcpy(buf, c->source->at(c->position), n);
  c->position += n;
  c->source->release(c->position);
  if (n == 0 && !c->source->error().empty()) {
    errno = EIO;
    return -1;
  }
  return static_cast<ssize_t>(n);
}

int cookie_close(void *cookie) {
  delete static_cast<StreamCookie *>(cookie);
  return 0;
}

} // namespace

FILE *open_decompressed_stream(const std::string &path, std::string *error) {
  auto source = ByteSource::open(path, error);
  if (!source) return nullptr;
  auto *cookie = new StreamCookie{std::move(source), 0};
  cookie_io_functions_t io{cookie_read, nullptr, nullptr, cookie_close};
  FILE *f = fopencookie(cookie, "r", io);
  if (!f) {
    *error = path + ": " + std::strerror(errno);
    delete cookie;
  }
  return f;
}

} // namespace gpp::capture
