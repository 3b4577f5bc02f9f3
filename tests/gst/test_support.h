// Helpers for the element tests that need no GStreamer: synthetic packets
// with real checksums, an independent Toeplitz hash, the RSS verification
// vectors, a pcap record walker and a small strict JSON parser.
#pragma once

#include <arpa/inet.h>
#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace test {

using Bytes = std::vector<uint8_t>;

constexpr uint8_t kProtoIcmp = 1;
constexpr uint8_t kProtoTcp = 6;
constexpr uint8_t kProtoUdp = 17;
constexpr uint8_t kProtoIcmpv6 = 58;

// Threads this process runs now (/proc/self/task): what a test compares
// before and after an element starts and stops its own.
inline unsigned process_thread_count() {
  unsigned n = 0;
  if (DIR *d = opendir("/proc/self/task")) {
    while (dirent *e = readdir(d)) n += e->d_name[0] != '.';
    closedir(d);
  }
  return n;
}

// The thread count once it is at most `want`, waiting up to `wait_ms` for
// threads that are ending (a thread pool's idle worker may outlive its
// task briefly); a thread left behind for good still shows.
inline unsigned thread_count_settled(unsigned want, unsigned wait_ms = 1000) {
  unsigned n = process_thread_count();
  for (unsigned waited = 0; n > want && waited < wait_ms; waited += 10) {
    usleep(10000);
    n = process_thread_count();
  }
  return n;
}

// An IPv4 or IPv6 address (4 or 16 bytes) and a port.
struct Endpoint {
  Bytes addr;
  uint16_t port = 0;
};

inline Bytes ip_from_text(const std::string &text) {
  Bytes out(16);
  if (inet_pton(AF_INET, text.c_str(), out.data()) == 1) {
    out.resize(4);
    return out;
  }
  if (inet_pton(AF_INET6, text.c_str(), out.data()) == 1) return out;
  return {};
}

inline void put16(Bytes &b, size_t at, uint16_t v) {
  b[at] = static_cast<uint8_t>(v >> 8);
  b[at + 1] = static_cast<uint8_t>(v);
}

inline uint32_t ones_sum(const uint8_t *p, size_t n, uint32_t sum) {
  for (size_t i = 0; i + 1 < n; i += 2) sum += (uint32_t(p[i]) << 8) | p[i + 1];
  if (n & 1) sum += uint32_t(p[n - 1]) << 8;
  return sum;
}

inline uint16_t fold_complement(uint32_t sum) {
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  return static_cast<uint16_t>(~sum);
}

// Ethernet II + IPv4 (DF, TTL 64) or IPv6 (hop limit 64) + TCP, UDP or
// ICMP/ICMPv6 echo request with `payload_len` payload bytes.  Every checksum
// is correct unless `corrupt_l4` is set, which spoils the L4 checksum only.
inline Bytes make_packet(const Endpoint &src, const Endpoint &dst, uint8_t proto,
                         size_t payload_len, bool corrupt_l4 = false) {
  const bool v4 = src.addr.size() == 4;
  const size_t l4_header = proto == kProtoTcp ? 20 : 8;
  const size_t l4_len = l4_header + payload_len;
  const size_t ip_header = v4 ? 20 : 40;
  Bytes pkt(14 + ip_header + l4_len, 0);

  const uint8_t macs[12] = {2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1};
  std::copy(macs, macs + 12, pkt.begin());
  put16(pkt, 12, v4 ? 0x0800 : 0x86dd);

  uint8_t *ip = pkt.data() + 14;
  if (v4) {
    ip[0] = 0x45;
    put16(pkt, 14 + 2, static_cast<uint16_t>(ip_header + l4_len));
    put16(pkt, 14 + 4, 0x1234);
    put16(pkt, 14 + 6, 0x4000);
    ip[8] = 64;
    ip[9] = proto;
    std::copy(src.addr.begin(), src.addr.end(), ip + 12);
    std::copy(dst.addr.begin(), dst.addr.end(), ip + 16);
    put16(pkt, 14 + 10, fold_complement(ones_sum(ip, 20, 0)));
  } else {
    ip[0] = 0x60;
    put16(pkt, 14 + 4, static_cast<uint16_t>(l4_len));
    ip[6] = proto;
    ip[7] = 64;
    std::copy(src.addr.begin(), src.addr.end(), ip + 8);
    std::copy(dst.addr.begin(), dst.addr.end(), ip + 24);
  }

  const size_t l4_at = 14 + ip_header;
  uint8_t *l4 = pkt.data() + l4_at;
  size_t checksum_at;
  if (proto == kProtoTcp) {
    put16(pkt, l4_at, src.port);
    put16(pkt, l4_at + 2, dst.port);
    put16(pkt, l4_at + 4, 0x0102);  // sequence number
    put16(pkt, l4_at + 10, 0x0304); // acknowledgement number
    l4[12] = 5 << 4;
    l4[13] = 0x18; // PSH, ACK
    put16(pkt, l4_at + 14, 65535);
    checksum_at = l4_at + 16;
  } else if (proto == kProtoUdp) {
    put16(pkt, l4_at, src.port);
    put16(pkt, l4_at + 2, dst.port);
    put16(pkt, l4_at + 4, static_cast<uint16_t>(l4_len));
    checksum_at = l4_at + 6;
  } else {
    l4[0] = proto == kProtoIcmp ? 8 : 128; // echo request
    put16(pkt, l4_at + 4, 0x4242);
    put16(pkt, l4_at + 6, 1);
    checksum_at = l4_at + 2;
  }
  for (size_t i = 0; i < payload_len; i++)
    l4[l4_header + i] = static_cast<uint8_t>('a' + i % 26);

  uint32_t sum = 0;
  if (proto != kProtoIcmp) { // pseudo-header
    sum = ones_sum(src.addr.data(), src.addr.size(), sum);
    sum = ones_sum(dst.addr.data(), dst.addr.size(), sum);
    sum += static_cast<uint32_t>(l4_len);
    sum += proto;
  }
  uint16_t checksum = fold_complement(ones_sum(l4, l4_len, sum));
  if (proto == kProtoUdp && checksum == 0) checksum = 0xffff;
  if (corrupt_l4) checksum ^= 0x0f0f;
  put16(pkt, checksum_at, checksum);
  return pkt;
}

// Microsoft RSS / Toeplitz, written from the definition: for input bit i,
// XOR in the 32 key bits starting at key bit i.
inline uint32_t toeplitz(const uint8_t *key, const uint8_t *input, size_t len) {
  auto key_bit = [key](size_t i) { return (key[i / 8] >> (7 - i % 8)) & 1u; };
  uint32_t result = 0;
  for (size_t i = 0; i < len * 8; i++) {
    if (!((input[i / 8] >> (7 - i % 8)) & 1)) continue;
    uint32_t window = 0;
    for (size_t b = 0; b < 32; b++) window = (window << 1) | key_bit(i + b);
    result ^= window;
  }
  return result;
}

// Hash input in RSS order: source address, destination address, then the
// ports when `with_ports`.
inline uint32_t rss_of(const uint8_t *key, const Endpoint &src, const Endpoint &dst,
                       bool with_ports) {
  Bytes in(src.addr);
  in.insert(in.end(), dst.addr.begin(), dst.addr.end());
  if (with_ports) {
    in.push_back(static_cast<uint8_t>(src.port >> 8));
    in.push_back(static_cast<uint8_t>(src.port));
    in.push_back(static_cast<uint8_t>(dst.port >> 8));
    in.push_back(static_cast<uint8_t>(dst.port));
  }
  return toeplitz(key, in.data(), in.size());
}

struct RssVector {
  Endpoint src, dst;
  uint32_t hash_ip_only = 0;
  uint32_t hash_ip_l4 = 0;
};

// rss/toeplitz_vectors.csv: the key in a "# key (40 bytes): <hex>" comment,
// then rows of src_addr,src_port,dst_addr,dst_port,hash_ip_only,hash_ip_l4.
struct RssVectors {
  std::array<uint8_t, 40> key{};
  bool have_key = false;
  std::vector<RssVector> rows;
};

inline RssVectors load_rss_vectors(const std::string &path) {
  RssVectors out;
  std::ifstream in(path);
  std::string line;
  const std::string key_prefix = "# key (40 bytes): ";
  while (std::getline(in, line)) {
    if (line.compare(0, key_prefix.size(), key_prefix) == 0) {
      const std::string hex = line.substr(key_prefix.size(), 80);
      if (hex.size() != 80) return {};
      for (size_t i = 0; i < 40; i++)
        out.key[i] = static_cast<uint8_t>(std::stoul(hex.substr(2 * i, 2), nullptr, 16));
      out.have_key = true;
      continue;
    }
    if (line.empty() || line[0] == '#') continue;
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string cell;
    while (std::getline(ss, cell, ',')) f.push_back(cell);
    if (f.size() != 6) return {};
    RssVector v;
    v.src = {ip_from_text(f[0]), static_cast<uint16_t>(std::stoul(f[1]))};
    v.dst = {ip_from_text(f[2]), static_cast<uint16_t>(std::stoul(f[3]))};
    v.hash_ip_only = static_cast<uint32_t>(std::stoul(f[4], nullptr, 16));
    v.hash_ip_l4 = static_cast<uint32_t>(std::stoul(f[5], nullptr, 16));
    out.rows.push_back(v);
  }
  return out;
}

inline bool read_file(const std::string &path, Bytes &out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

// File offsets of the records of a little-endian classic pcap file
// (24-byte file header, 16-byte record headers with incl_len at +8).
struct PcapRecord {
  size_t offset;
  uint32_t incl_len;
};

inline std::vector<PcapRecord> pcap_records(const Bytes &file) {
  std::vector<PcapRecord> out;
  size_t off = 24;
  while (off + 16 <= file.size()) {
    const uint32_t incl = file[off + 8] | (file[off + 9] << 8) | (file[off + 10] << 16) |
                          (uint32_t(file[off + 11]) << 24);
    out.push_back({off, incl});
    off += 16 + incl;
  }
  return out;
}

// A strict JSON (RFC 8259) parser, enough to check packetresultenc's lines.
struct Json {
  enum Type { NUL, BOOL, NUMBER, STRING, ARRAY, OBJECT } type = NUL;
  std::string text; // STRING: the value; NUMBER: the literal as written
  bool boolean = false;
  std::vector<Json> items;
  std::vector<std::pair<std::string, Json>> members; // in document order

  const Json *get(const std::string &key) const {
    for (const auto &m : members)
      if (m.first == key) return &m.second;
    return nullptr;
  }
};

class JsonParser {
public:
  // True when `text` is exactly one JSON value, optionally surrounded by
  // whitespace.
  static bool parse(const std::string &text, Json &out) {
    JsonParser p(text);
    p.skip_ws();
    if (!p.value(out, 0)) return false;
    p.skip_ws();
    return p.pos_ == text.size();
  }

private:
  explicit JsonParser(const std::string &t) : t_(t) {}

  bool at(char c) const { return pos_ < t_.size() && t_[pos_] == c; }
  bool digit() const { return pos_ < t_.size() && t_[pos_] >= '0' && t_[pos_] <= '9'; }
  void skip_ws() {
    while (pos_ < t_.size() &&
           (t_[pos_] == ' ' || t_[pos_] == '\t' || t_[pos_] == '\n' || t_[pos_] == '\r'))
      pos_++;
  }
  bool literal(const char *word) {
    const std::string w(word);
    if (t_.compare(pos_, w.size(), w) != 0) return false;
    pos_ += w.size();
    return true;
  }

  bool value(Json &out, int depth) {
    if (depth > 64 || pos_ >= t_.size()) return false;
    const char c = t_[pos_];
    if (c == '{') return object(out, depth);
    if (c == '[') return array(out, depth);
    if (c == '"') {
      out.type = Json::STRING;
      return string(out.text);
    }
    if (c == '-' || (c >= '0' && c <= '9')) return number(out);
    if (literal("null")) {
      out.type = Json::NUL;
      return true;
    }
    if (literal("true")) {
      out.type = Json::BOOL;
      out.boolean = true;
      return true;
    }
    if (literal("false")) {
      out.type = Json::BOOL;
      return true;
    }
    return false;
  }

  bool object(Json &out, int depth) {
    out.type = Json::OBJECT;
    pos_++;
    skip_ws();
    if (at('}')) {
      pos_++;
      return true;
    }
    for (;;) {
      std::string key;
      skip_ws();
      if (!at('"') || !string(key)) return false;
      skip_ws();
      if (!at(':')) return false;
      pos_++;
      skip_ws();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.members.emplace_back(key, std::move(v));
      skip_ws();
      if (at('}')) {
        pos_++;
        return true;
      }
      if (!at(',')) return false;
      pos_++;
    }
  }

  bool array(Json &out, int depth) {
    out.type = Json::ARRAY;
    pos_++;
    skip_ws();
    if (at(']')) {
      pos_++;
      return true;
    }
    for (;;) {
      skip_ws();
      Json v;
      if (!value(v, depth + 1)) return false;
      out.items.push_back(std::move(v));
      skip_ws();
      if (at(']')) {
        pos_++;
        return true;
      }
      if (!at(',')) return false;
      pos_++;
    }
  }

  bool string(std::string &out) {
    pos_++; // opening quote
    while (pos_ < t_.size()) {
      const unsigned char c = static_cast<unsigned char>(t_[pos_++]);
      if (c == '"') return true;
      if (c < 0x20) return false;
      if (c != '\\') {
        out += static_cast<char>(c);
        continue;
      }
      if (pos_ >= t_.size()) return false;
      const char e = t_[pos_++];
      switch (e) {
      case '"': case '\\': case '/': out += e; break;
      case 'b': out += '\b'; break;
      case 'f': out += '\f'; break;
      case 'n': out += '\n'; break;
      case 'r': out += '\r'; break;
      case 't': out += '\t'; break;
      case 'u':
        for (int i = 0; i < 4; i++, pos_++)
          if (pos_ >= t_.size() || !isxdigit(static_cast<unsigned char>(t_[pos_]))) return false;
        out += '?'; // the value is not needed by these tests
        break;
      default:
        return false;
      }
    }
    return false;
  }

  bool number(Json &out) {
    const size_t start = pos_;
    out.type = Json::NUMBER;
    if (at('-')) pos_++;
    if (at('0')) {
      pos_++;
    } else {
      if (!digit()) return false;
      while (digit()) pos_++;
    }
    if (at('.')) {
      pos_++;
      if (!digit()) return false;
      while (digit()) pos_++;
    }
    if (at('e') || at('E')) {
      pos_++;
      if (at('+') || at('-')) pos_++;
      if (!digit()) return false;
      while (digit()) pos_++;
    }
    out.text = t_.substr(start, pos_ - start);
    return true;
  }

  const std::string &t_;
  size_t pos_ = 0;
};

} // namespace test
