#include "resulttext.h"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <cstring>
#include <new>

#include "community_id.h"

namespace gpp {
namespace {

constexpr uint64_t kNsPerSecond = 1000000000ull;
constexpr char kHexDigits[] = "0123456789abcdef";

// The column contract: names in output order.  write_line() below writes
// the values in the same order; docs/result-fields.md and docs/flows.md document both lists.
// The last kTunnelColumns are written only for records with their tunnel
// plane (record-size=176).
constexpr const char *kResultColumns[] = {
    "packet",        "ethertype",   "vlan",        "ip_version",  "src",
    "dst",           "l4_proto",    "sport",       "dport",       "frag_offset",
    "more_fragments", "ipv4_checksum", "l4_checksum", "rss",      "status",
    "timestamp",     "caplen",      "wirelen",     "ttl",         "tcp_flags",
    "icmp_type",     "icmp_code",   "payload_length", "acl_rule", "acl_action",
    "dpi_pattern",   "dpi_hits",    "ip_length",   "community_id",
    "tunnels",       "tunnel_id",   "outer_src",   "outer_dst",   "outer_l4_proto",
    "outer_sport",   "outer_dport",
};
constexpr size_t kTunnelColumns = 7;

// Flow records: Zeek conn.log's names where it has the field (ICMP type and
// code in the port fields, as Zeek writes them), then gpupacket's own.  The
// last, tunnel_id, is written only for flows metered with decap=inner.
constexpr const char *kFlowColumns[] = {
    "ts",          "id.orig_h",     "id.orig_p",      "id.resp_h",      "id.resp_p",
    "proto",       "ip_proto",      "duration",       "orig_pkts",      "orig_ip_bytes",
    "resp_pkts",   "resp_ip_bytes", "vlan",           "community_id",   "first_packet",
    "end_ts",      "end_reason",    "orig_tcp_flags", "resp_tcp_flags", "rss",
    "acl_rule",    "acl_action",    "dpi_pattern",    "dpi_hits",       "tunnel_id",
};
constexpr size_t kFlowTunnelColumns = 1;

// A short text (a name, a JSON key) in a fixed block, copied whole: one
// vector move, where a copy of its exact length is a call to memcpy that
// took a fifth of a JSON line's time.  The copy writes kRoom - size bytes
// past the text, which what follows overwrites; kMaxTextLineBytes leaves
// room for them past a line's end.
struct Name {
  static constexpr size_t kRoom = 32;
  char bytes[kRoom] = {};
  size_t size = 0;
};

template <size_t N> constexpr Name name_of(const char (&text)[N]) {
  static_assert(N - 1 <= Name::kRoom, "a name fits its block");
  Name name;
  for (size_t i = 0; i + 1 < N; ++i) name.bytes[i] = text[i];
  name.size = N - 1;
  return name;
}

template <size_t N> constexpr size_t longest_name(const char *const (&names)[N]) {
  size_t longest = 0;
  for (const char *name : names) {
    size_t size = 0;
    while (name[size]) ++size;
    longest = size > longest ? size : longest;
  }
  return longest;
}

// A JSON key, ,"name": with its punctuation, is a Name too.
static_assert(longest_name(kResultColumns) + 4 <= Name::kRoom &&
                  longest_name(kFlowColumns) + 4 <= Name::kRoom,
              "every JSON key fits a Name");

constexpr Name kStatusNames[] = {
#define GPP_STATUS_TEXT_(flag, bit, name, meaning) name_of(name),
    GPP_STATUS_FLAGS(GPP_STATUS_TEXT_)
#undef GPP_STATUS_TEXT_
};
constexpr uint32_t kStatusBits[] = {
#define GPP_STATUS_BIT_(flag, bit, name, meaning) GPP_STATUS_##flag,
    GPP_STATUS_FLAGS(GPP_STATUS_BIT_)
#undef GPP_STATUS_BIT_
};

// A tunnel type's name (GPP_TUNNEL_TYPES); none for a value it lacks.
Name tunnel_name(uint8_t type) {
  switch (type) {
#define GPP_TUNNEL_NAME_(type, value, name, meaning) \
  case value:                                        \
    return name_of(name);
    GPP_TUNNEL_TYPES(GPP_TUNNEL_NAME_)
#undef GPP_TUNNEL_NAME_
    default:
      return Name();
  }
}

// What goes around the values of one record type: the CSV header row, and
// JSON's key before each value ({"packet": then ,"ethertype": ...).
struct ColumnText {
  std::string header;
  std::vector<Name> json_keys;

  // The first N - left_out names.
  template <size_t N>
  explicit ColumnText(const char *const (&names)[N], size_t left_out = 0) {
    for (size_t i = 0; i < N - left_out; ++i) {
      header += i ? "," : "";
      header += names[i];
      const std::string key = std::string(i ? "," : "{") + '"' + names[i] + "\":";
      Name name;
      key.copy(name.bytes, key.size());
      name.size = key.size();
      json_keys.push_back(name);
    }
    header += '\n';
  }
};

const ColumnText &column_text(const GppResult *, bool tunnels) {
  static const ColumnText with(kResultColumns);
  static const ColumnText without(kResultColumns, kTunnelColumns);
  return tunnels ? with : without;
}

const ColumnText &column_text(const GppFlowRecord *, bool tunnels) {
  static const ColumnText with(kFlowColumns);
  static const ColumnText without(kFlowColumns, kFlowTunnelColumns);
  return tunnels ? with : without;
}

char *put(char *p, const char *text, size_t size) {
  std::memcpy(p, text, size);
  return p + size;
}

char *put(char *p, const Name &name) {
  std::memcpy(p, name.bytes, Name::kRoom);
  return p + name.size;
}

char *put_decimal(char *p, uint64_t value) { return std::to_chars(p, p + 20, value).ptr; }

// "0x" and `digits` lowercase hex digits (the value fits in them).
char *put_hex(char *p, uint32_t value, int digits) {
  *p++ = '0';
  *p++ = 'x';
  for (int i = digits - 1; i >= 0; --i) *p++ = kHexDigits[(value >> (4 * i)) & 15];
  return p;
}

// seconds.nanoseconds, nine digits after the point.
char *put_seconds(char *p, uint64_t ns) {
  p = put_decimal(p, ns / kNsPerSecond);
  *p++ = '.';
  uint32_t fraction = static_cast<uint32_t>(ns % kNsPerSecond);
  for (int i = 8; i >= 0; --i) {
    p[i] = static_cast<char>('0' + fraction % 10);
    fraction /= 10;
  }
  return p + 9;
}

char *put_octet(char *p, unsigned v) {
  if (v >= 100) {
    *p++ = static_cast<char>('0' + v / 100);
    v %= 100;
    *p++ = static_cast<char>('0' + v / 10);
  } else if (v >= 10) {
    *p++ = static_cast<char>('0' + v / 10);
  }
  *p++ = static_cast<char>('0' + v % 10);
  return p;
}

char *put_ipv4(char *p, const uint8_t *a) {
  p = put_octet(p, a[0]);
  for (int i = 1; i < 4; ++i) {
    *p++ = '.';
    p = put_octet(p, a[i]);
  }
  return p;
}

// A 16-bit group in lowercase hex, without leading zeros.
char *put_hex_group(char *p, unsigned v) {
  const int digits = v >= 0x1000 ? 4 : v >= 0x100 ? 3 : v >= 0x10 ? 2 : 1;
  for (int i = digits - 1; i >= 0; --i) *p++ = kHexDigits[(v >> (4 * i)) & 15];
  return p;
}

// As glibc's inet_ntop (AF_INET6) writes it: the longest run of two or more
// zero groups (the first of equal runs) as "::", and the last 32 bits as a
// dotted quad after 96 zero bits (IPv4-compatible) or ::ffff (IPv4-mapped).
char *put_ipv6(char *p, const uint8_t *a) {
  unsigned groups[8];
  for (int i = 0; i < 8; ++i) groups[i] = (unsigned{a[2 * i]} << 8) | a[2 * i + 1];
  int run = -1, run_len = 0;
  for (int i = 0; i < 8;) {
    if (groups[i]) {
      ++i;
      continue;
    }
    int end = i;
    while (end < 8 && groups[end] == 0) ++end;
    if (end - i > run_len) {
      run = i;
      run_len = end - i;
    }
    i = end;
  }
  if (run_len < 2) run = -1;
  for (int i = 0; i < 8; ++i) {
    if (run >= 0 && i >= run && i < run + run_len) {
      if (i == run) *p++ = ':';
      continue;
    }
    if (i) *p++ = ':';
    if (i == 6 && run == 0 && (run_len == 6 || (run_len == 5 && groups[5] == 0xffff)))
      return put_ipv4(p, a + 12);
    p = put_hex_group(p, groups[i]);
  }
  if (run >= 0 && run + run_len == 8) *p++ = ':';
  return p;
}

char *put_address(char *p, uint8_t ip_version, const uint8_t *a) {
  return ip_version == 4 ? put_ipv4(p, a) : put_ipv6(p, a);
}

// The types of `count` levels, outermost first, separated by ';'; a type
// without a name as its number.
char *put_tunnel_types(char *p, const uint8_t *types, int count) {
  for (int i = 0; i < count; ++i) {
    if (i) *p++ = ';';
    const Name name = tunnel_name(types[i]);
    p = name.size ? put(p, name) : put_decimal(p, types[i]);
  }
  return p;
}

char *put_status(char *p, uint32_t status) {
  if (status == 0) return put(p, name_of("ok"));
  bool first = true;
  for (size_t i = 0; i < sizeof kStatusBits / sizeof kStatusBits[0]; ++i) {
    if (!(status & kStatusBits[i])) continue;
    if (!first) *p++ = ';';
    first = false;
    p = put(p, kStatusNames[i]);
  }
  return p;
}

// The ID's text: kCommunityIdTextBytes - 1 characters.
void community_id_chars(const uint8_t digest[kCommunityIdDigestBytes], char *chars) {
  char text[kCommunityIdTextBytes];
  community_id_text(digest, text);
  std::memcpy(chars, text, kCommunityIdTextBytes - 1);
}

char *put_community_id(char *p, const uint8_t digest[kCommunityIdDigestBytes]) {
  community_id_chars(digest, p);
  return p + kCommunityIdTextBytes - 1;
}

// One line being written, column after column: CSV fields separated by
// commas, empty when there is no value; or a JSON object, with null for no
// value and text values quoted (addresses, hex, names and base64 need no
// escaping).
template <TextFormat F> class Line {
public:
  Line(char *p, const ColumnText &columns) : p_(p), keys_(columns.json_keys.data()) {}

  void empty() {
    next();
    if (F == TextFormat::kJsonLines) p_ = put(p_, name_of("null"));
  }
  void number(uint64_t value) {
    next();
    p_ = put_decimal(p_, value);
  }
  void seconds(uint64_t ns) {
    next();
    p_ = put_seconds(p_, ns);
  }
  void text(const Name &name) {
    text_by([&name](char *p) { return put(p, name); });
  }
  template <typename Write> void text_by(Write write) {
    next();
    quote();
    p_ = write(p_);
    quote();
  }
  void hex(uint32_t value, int digits) {
    text_by([=](char *p) { return put_hex(p, value, digits); });
  }
  void address(uint8_t ip_version, const uint8_t *a) {
    text_by([=](char *p) { return put_address(p, ip_version, a); });
  }
  // CSV: 10;20 (empty without tags); JSON: [10,20].
  void numbers(const uint16_t *values, int count) {
    next();
    const bool json = F == TextFormat::kJsonLines;
    if (json) *p_++ = '[';
    for (int i = 0; i < count; ++i) {
      if (i) *p_++ = json ? ',' : ';';
      p_ = put_decimal(p_, values[i]);
    }
    if (json) *p_++ = ']';
  }
  char *end() {
    if (F == TextFormat::kJsonLines) *p_++ = '}';
    *p_++ = '\n';
    return p_;
  }

private:
  void next() {
    if (F == TextFormat::kJsonLines) {
      p_ = put(p_, keys_[column_]);
    } else if (column_) {
      *p_++ = ',';
    }
    ++column_;
  }
  void quote() {
    if (F == TextFormat::kJsonLines) *p_++ = '"';
  }

  char *p_;
  const Name *keys_;
  size_t column_ = 0;
};

Name checksum_name(uint8_t status) {
  switch (status) {
    case GPP_CHECKSUM_UNVERIFIED: return name_of("unverified");
    case GPP_CHECKSUM_GOOD: return name_of("good");
    case GPP_CHECKSUM_BAD: return name_of("bad");
    default: return Name();
  }
}

template <typename L> void checksum(L &line, uint8_t status) {
  const Name name = checksum_name(status);
  if (name.size) line.text(name);
  else line.empty();
}

template <typename L> void acl(L &line, uint8_t action, int32_t rule) {
  if (action != GPP_ACL_NONE && rule >= 0) line.number(static_cast<uint64_t>(rule));
  else line.empty();
  if (action == GPP_ACL_ALLOW) line.text(name_of("allow"));
  else if (action == GPP_ACL_DROP) line.text(name_of("drop"));
  else line.empty();
}

template <typename L> void number_if(L &line, bool present, uint64_t value) {
  if (present) line.number(value);
  else line.empty();
}

// A source and a destination address, or two empty columns.
template <typename L>
void addresses(L &line, bool present, uint8_t ip_version, const uint8_t *src,
               const uint8_t *dst) {
  if (present) {
    line.address(ip_version, src);
    line.address(ip_version, dst);
  } else {
    line.empty();
    line.empty();
  }
}

// The tunnel columns of a record with its tunnel plane.  As with
// vlan_count, a tunnel_count past GPP_MAX_TUNNEL_DEPTH reads only the levels
// a plane entry holds (the element rejects such entries first).
template <typename L> void tunnel_columns(L &line, const GppTunnelInfo &t) {
  const int levels = std::min<int>(t.tunnel_count, GPP_MAX_TUNNEL_DEPTH);
  if (levels)
    line.text_by([&t, levels](char *q) { return put_tunnel_types(q, t.tunnel_types, levels); });
  else
    line.empty();
  number_if(line, levels > 0, t.tunnel_id);
  const bool outer = t.outer_ip_version != 0;
  addresses(line, outer, t.outer_ip_version, t.outer_src, t.outer_dst);
  number_if(line, outer, t.outer_l4_proto);
  const bool udp = outer && t.outer_l4_proto == 17;
  number_if(line, udp, t.outer_sport);
  number_if(line, udp, t.outer_dport);
}

template <TextFormat F>
char *write_line(char *p, const GppResult &r, const GppTunnelInfo *tunnel,
                 uint16_t community_id_seed, CommunityIdCache *ids) {
  Line<F> line(p, column_text(&r, tunnel != nullptr));
  const bool ip = (r.ip_flags & GPP_IP_HEADER_PARSED) != 0;
  const bool l4 = (r.ip_flags & GPP_IP_L4_PARSED) != 0;
  const bool ports = l4 && (r.l4_proto == 6 || r.l4_proto == 17 || r.l4_proto == 132);
  // TCP and UDP: the payload the DPI stage scans (SCTP's chunks are not read).
  const bool payload = ports && r.l4_proto != 132;
  const bool icmp = l4 && (r.l4_proto == 1 || r.l4_proto == 58);
  // Fragment fields exist for every IPv4 header and for IPv6 with a fragment header.
  const bool fragment = ip && (r.ip_version == 4 || (r.ip_flags & GPP_IP_FRAGMENT));

  line.number(r.packet_number);
  if (r.ethertype) line.hex(r.ethertype, 4);
  else line.empty();
  line.numbers(r.vlan_ids, std::min<int>(r.vlan_count, GPP_MAX_VLANS));
  number_if(line, r.ip_version != 0, r.ip_version);
  addresses(line, ip, r.ip_version, r.src, r.dst);
  number_if(line, ip, r.l4_proto);
  number_if(line, ports, r.sport);
  number_if(line, ports, r.dport);
  number_if(line, fragment, r.frag_offset);
  number_if(line, fragment, (r.ip_flags & GPP_IP_MORE_FRAGMENTS) ? 1 : 0);
  checksum(line, r.ipv4_checksum);
  checksum(line, r.l4_checksum);
  line.hex(r.rss_hash, 8);
  line.text_by([&r](char *q) { return put_status(q, r.status); });
  line.seconds(r.timestamp_ns);
  line.number(r.caplen);
  line.number(r.wirelen);
  number_if(line, ip, r.ttl);
  if (ports && r.l4_proto == 6) line.hex(r.tcp_flags, 2);
  else line.empty();
  number_if(line, icmp, r.icmp_type);
  number_if(line, icmp, r.icmp_code);
  number_if(line, payload, r.payload_length);
  acl(line, r.acl_action, r.acl_rule);
  number_if(line, r.dpi_scanned && r.dpi_pattern >= 0, static_cast<uint64_t>(r.dpi_pattern));
  number_if(line, r.dpi_scanned, r.dpi_hits);
  number_if(line, ip, r.ip_length);
  uint8_t digest[kCommunityIdDigestBytes];
  if (ids) {
    if (const char *id = ids->text(r, community_id_seed))
      line.text_by([id](char *q) { return put(q, id, kCommunityIdTextBytes - 1); });
    else
      line.empty();
  } else if (community_id_digest(r, community_id_seed, digest)) {
    line.text_by([&digest](char *q) { return put_community_id(q, digest); });
  } else {
    line.empty();
  }
  if (tunnel) tunnel_columns(line, *tunnel);
  return line.end();
}

// A flow's line; with `tunnel_id` (decap=inner), the tunnel_id column last.
template <TextFormat F>
char *write_line(char *p, const GppFlowRecord &f, bool tunnel_id) {
  Line<F> line(p, column_text(&f, tunnel_id));
  const bool icmp = f.l4_proto == 1 || f.l4_proto == 58;
  const bool tcp = f.l4_proto == 6;

  line.seconds(f.start_ns);
  line.address(f.ip_version, f.src);
  line.number(icmp ? f.dport >> 8 : f.sport);
  line.address(f.ip_version, f.dst);
  line.number(icmp ? f.dport & 0xff : f.dport);
  line.text(tcp ? name_of("tcp") : f.l4_proto == 17 ? name_of("udp")
            : icmp ? name_of("icmp") : name_of("unknown_transport"));
  line.number(f.l4_proto);
  line.seconds(f.end_ns - f.start_ns);
  line.number(f.packets[0]);
  line.number(f.bytes[0]);
  line.number(f.packets[1]);
  line.number(f.bytes[1]);
  number_if(line, f.vlan_id != 0, f.vlan_id);
  line.text_by([&f](char *q) { return put_community_id(q, f.community_id); });
  line.number(f.first_packet);
  line.seconds(f.end_ns);
  static constexpr Name kEndReasons[] = {name_of("idle"), name_of("active"), name_of("end"),
                                         name_of("forced"), name_of("no_room")};
  if (f.end_reason >= GPP_FLOW_END_IDLE && f.end_reason <= GPP_FLOW_END_NO_ROOM)
    line.text(kEndReasons[f.end_reason - GPP_FLOW_END_IDLE]);
  else
    line.number(f.end_reason);
  if (tcp) {
    line.hex(f.tcp_flags[0], 2);
    line.hex(f.tcp_flags[1], 2);
  } else {
    line.empty();
    line.empty();
  }
  line.hex(f.rss_hash, 8);
  acl(line, f.acl_action, f.acl_rule);
  number_if(line, f.dpi_pattern >= 0, static_cast<uint64_t>(f.dpi_pattern));
  line.number(f.dpi_hits);
  if (tunnel_id) line.number(f.tunnel_id);
  return line.end();
}

size_t write_lines(const GppResult *records, const GppTunnelInfo *tunnels, size_t count,
                   TextFormat format, uint16_t seed, char *out, CommunityIdCache *ids) {
  char *p = out;
  if (format == TextFormat::kCsv)
    for (size_t i = 0; i < count; ++i)
      p = write_line<TextFormat::kCsv>(p, records[i], tunnels ? &tunnels[i] : nullptr, seed,
                                       ids);
  else
    for (size_t i = 0; i < count; ++i)
      p = write_line<TextFormat::kJsonLines>(p, records[i], tunnels ? &tunnels[i] : nullptr,
                                             seed, ids);
  return static_cast<size_t>(p - out);
}

size_t write_lines(const GppFlowRecord *records, size_t count, TextFormat format, bool tunnel_id,
                   char *out) {
  char *p = out;
  if (format == TextFormat::kCsv)
    for (size_t i = 0; i < count; ++i) p = write_line<TextFormat::kCsv>(p, records[i], tunnel_id);
  else
    for (size_t i = 0; i < count; ++i)
      p = write_line<TextFormat::kJsonLines>(p, records[i], tunnel_id);
  return static_cast<size_t>(p - out);
}

} // namespace

const std::string &csv_header_row(const GppResult *record, bool tunnels) {
  return column_text(record, tunnels).header;
}

const std::string &csv_header_row(const GppFlowRecord *record, bool tunnel_id) {
  return column_text(record, tunnel_id).header;
}

CommunityIdCache::Key CommunityIdCache::key_of(const GppResult &r, uint16_t seed) {
  Key key;
  std::memcpy(key.src, r.src, sizeof key.src);
  std::memcpy(key.dst, r.dst, sizeof key.dst);
  key.seed = seed;
  key.sport = r.sport;
  key.dport = r.dport;
  key.ip_version = r.ip_version;
  key.ip_flags = r.ip_flags & (GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED);
  key.l4_proto = r.l4_proto;
  key.icmp_type = r.icmp_type;
  key.icmp_code = r.icmp_code;
  key.zero = 0;
  return key;
}

// Compared and hashed as bytes: no padding may hide in it.
static_assert(sizeof(CommunityIdCache::Key) == 44, "CommunityIdCache::Key has no padding");

CommunityIdCache::CommunityIdCache() : slots_(size_t{1} << kSlotBits) {}

const char *CommunityIdCache::text(const GppResult &r, uint16_t seed) {
  static_assert(sizeof(Slot::text) == kCommunityIdTextBytes - 1, "a slot holds an ID's text");
  const Key key = key_of(r, seed);
  uint64_t words[6] = {};
  std::memcpy(words, &key, sizeof key);
  uint64_t hash = 0;
  for (uint64_t w : words) hash = (hash ^ w) * 0x9e3779b97f4a7c15ull;
  Slot &slot = slots_[hash >> (64 - kSlotBits)];
  if (!slot.used || std::memcmp(&slot.key, &key, sizeof key) != 0) {
    uint8_t digest[kCommunityIdDigestBytes];
    slot.key = key;
    slot.used = true;
    slot.has_id = community_id_digest(r, seed, digest);
    if (slot.has_id) community_id_chars(digest, slot.text);
  }
  return slot.has_id ? slot.text : nullptr;
}

size_t format_records(const GppResult *records, size_t count, TextFormat format,
                      uint16_t community_id_seed, char *out, CommunityIdCache *cache) {
  return write_lines(records, nullptr, count, format, community_id_seed, out, cache);
}

size_t format_records(const GppResult *records, const GppTunnelInfo *tunnels, size_t count,
                      TextFormat format, uint16_t community_id_seed, char *out,
                      CommunityIdCache *cache) {
  return write_lines(records, tunnels, count, format, community_id_seed, out, cache);
}

size_t format_records(const GppFlowRecord *records, size_t count, TextFormat format,
                      char *out, bool tunnel_id) {
  return write_lines(records, count, format, tunnel_id, out);
}

void TextEncoder::FreeText::operator()(char *text) const { std::free(text); }

TextEncoder::TextEncoder(unsigned threads) : pool_(threads), chunks_(pool_.threads()) {
  for (Chunk &c : chunks_) c.ids = std::make_unique<CommunityIdCache>();
}

TextEncoder::~TextEncoder() = default;

template <typename Record, typename Format>
size_t TextEncoder::run(const Record *records, size_t count, const Format &format_range) {
  // A chunk's memory grows on its own thread, a slice of records at a time,
  // so that it holds about the text (not count * kMaxTextLineBytes) and
  // stays for the next buffer; realloc reports failure where new would
  // throw on a worker.
  constexpr size_t kSlice = 256;
  used_ = static_cast<unsigned>(
      std::clamp<size_t>(count / kMinRecordsPerThread, 1, chunks_.size()));
  std::vector<char> failed(used_, 0);
  pool_.run(used_, [&](unsigned k) {
    Chunk &c = chunks_[k];
    c.size = 0;
    const size_t last = count * (k + 1) / used_;
    for (size_t i = count * k / used_; i < last; i += kSlice) {
      const size_t n = std::min(kSlice, last - i);
      const size_t need = c.size + n * kMaxTextLineBytes;
      if (need > c.capacity) {
        const size_t capacity = std::max(need, 2 * c.capacity);
        char *grown = static_cast<char *>(std::realloc(c.text.get(), capacity));
        if (!grown) {
          failed[k] = 1;
          return;
        }
        c.text.release();
        c.text.reset(grown);
        c.capacity = capacity;
      }
      c.size += format_range(records + i, n, c.text.get() + c.size, c);
    }
  });
  if (std::find(failed.begin(), failed.end(), 1) != failed.end()) {
    used_ = 0;
    throw std::bad_alloc();
  }
  size_t total = 0;
  for (unsigned k = 0; k < used_; ++k) total += chunks_[k].size;
  return total;
}

size_t TextEncoder::format(const GppResult *records, size_t count, TextFormat format,
                           uint16_t community_id_seed, const GppTunnelInfo *tunnels) {
  return run(records, count, [&](const GppResult *r, size_t n, char *out, Chunk &c) {
    return format_records(r, tunnels ? tunnels + (r - records) : nullptr, n, format,
                          community_id_seed, out, c.ids.get());
  });
}

size_t TextEncoder::format(const GppFlowRecord *records, size_t count, TextFormat format,
                           bool tunnel_id) {
  return run(records, count, [&](const GppFlowRecord *f, size_t n, char *out, Chunk &) {
    return format_records(f, n, format, out, tunnel_id);
  });
}

void TextEncoder::copy_to(char *out) {
  std::vector<size_t> offsets(used_);
  for (unsigned k = 1; k < used_; ++k) offsets[k] = offsets[k - 1] + chunks_[k - 1].size;
  pool_.run(used_, [&](unsigned k) {
    if (chunks_[k].size) std::memcpy(out + offsets[k], chunks_[k].text.get(), chunks_[k].size);
  });
}

} // namespace gpp
