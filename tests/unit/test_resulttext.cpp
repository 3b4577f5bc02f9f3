// packetresultenc's text (gst-plugin/resulttext.h) against the encoder it
// replaced, kept here as the reference: the same bytes for the records of
// every capture in ../shared/data/pcap and of their flows, for random
// records (every field, including values the packet core never writes), at
// several thread counts and buffer sizes; the CSV header rows; and a line
// never longer than kMaxTextLineBytes.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <sys/socket.h>

#include <cinttypes>
#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "capture_file.h"
#include "community_id.h"
#include "core_harness.h"
#include "flow_meter.h"
#include "resulttext.h"
#include "shared_data.h"

namespace previous_encoder {

// The previous implementation of packetresultenc's formatting (printf,
// inet_ntop and std::to_string per field), kept as the reference the new
// formatter must match byte for byte.  Copied from gstpacketresultenc.cpp
// with GLib's names replaced by the standard ones (g_snprintf -> snprintf,
// guint64 -> uint64_t, GST_SECOND -> 1000000000).

struct Field
{
  enum Kind { EMPTY, NUMBER, TEXT, NUMBER_LIST } kind = EMPTY;
  std::string text;
  const uint16_t *list = nullptr;
  int list_len = 0;

  static Field number (uint64_t n)
  {
    Field f;
    f.kind = NUMBER;
    f.text = std::to_string (n);
    return f;
  }
  static Field string (std::string s)
  {
    Field f;
    f.kind = TEXT;
    f.text = std::move (s);
    return f;
  }
};

static std::string
hex (unsigned value, int digits)
{
  char buf[16];
  snprintf (buf, sizeof buf, "0x%0*x", digits, value);
  return buf;
}

static Field
address_text (uint8_t ip_version, const uint8_t * addr)
{
  char buf[INET6_ADDRSTRLEN];
  inet_ntop (ip_version == 4 ? AF_INET : AF_INET6, addr, buf, sizeof buf);
  return Field::string (buf);
}

static Field
address_field (const GppResult & r, const uint8_t * addr)
{
  return (r.ip_flags & GPP_IP_HEADER_PARSED) ? address_text (r.ip_version, addr) : Field ();
}

static Field
seconds_field (uint64_t ns)
{
  Field f;
  char buf[32];
  snprintf (buf, sizeof buf, "%" PRIu64 ".%09" PRIu64, ns / uint64_t{1000000000}, ns % uint64_t{1000000000});
  f.kind = Field::NUMBER;
  f.text = buf;
  return f;
}

static Field
checksum_field (uint8_t status)
{
  switch (status) {
    case GPP_CHECKSUM_UNVERIFIED:
      return Field::string ("unverified");
    case GPP_CHECKSUM_GOOD:
      return Field::string ("good");
    case GPP_CHECKSUM_BAD:
      return Field::string ("bad");
    default:
      return Field ();
  }
}

static Field
status_field (uint32_t status)
{
  static const struct { uint32_t flag; const char *name; } names[] = {
#define GPP_STATUS_NAME_(flag, bit, name, meaning) { GPP_STATUS_##flag, name },
    GPP_STATUS_FLAGS (GPP_STATUS_NAME_)
#undef GPP_STATUS_NAME_
  };
  if (status == 0)
    return Field::string ("ok");
  std::string s;
  for (const auto & n : names) {
    if (!(status & n.flag))
      continue;
    if (!s.empty ())
      s += ';';
    s += n.name;
  }
  return Field::string (s);
}

static bool
has_ports (const GppResult & r)
{
  return (r.ip_flags & GPP_IP_L4_PARSED) && (r.l4_proto == 6 || r.l4_proto == 17 ||
      r.l4_proto == 132);
}

static bool
has_payload (const GppResult & r)
{
  return has_ports (r) && r.l4_proto != 132;
}

static bool
is_icmp (const GppResult & r)
{
  return (r.ip_flags & GPP_IP_L4_PARSED) && (r.l4_proto == 1 || r.l4_proto == 58);
}

static bool
has_fragment_fields (const GppResult & r)
{
  return (r.ip_flags & GPP_IP_HEADER_PARSED) &&
      (r.ip_version == 4 || (r.ip_flags & GPP_IP_FRAGMENT));
}

struct ColumnContext
{
  uint16_t community_id_seed;
};

static Field
community_id_field (const GppResult & r, const ColumnContext & ctx)
{
  uint8_t digest[gpp::kCommunityIdDigestBytes];
  if (!gpp::community_id_digest (r, ctx.community_id_seed, digest))
    return Field ();
  char text[gpp::kCommunityIdTextBytes];
  gpp::community_id_text (digest, text);
  return Field::string (text);
}

template <typename Record> struct Column
{
  const char *name;
    Field (*value) (const Record &, const ColumnContext &);
};

static const Column<GppResult> columns[] = {
  {"packet", [](const GppResult & r, const ColumnContext &) { return Field::number (r.packet_number); }},
  {"ethertype", [](const GppResult & r, const ColumnContext &) {
      return r.ethertype ? Field::string (hex (r.ethertype, 4)) : Field (); }},
  {"vlan", [](const GppResult & r, const ColumnContext &) {
      Field f;
      f.kind = Field::NUMBER_LIST;
      f.list = r.vlan_ids;
      f.list_len = r.vlan_count;
      return f; }},
  {"ip_version", [](const GppResult & r, const ColumnContext &) {
      return r.ip_version ? Field::number (r.ip_version) : Field (); }},
  {"src", [](const GppResult & r, const ColumnContext &) { return address_field (r, r.src); }},
  {"dst", [](const GppResult & r, const ColumnContext &) { return address_field (r, r.dst); }},
  {"l4_proto", [](const GppResult & r, const ColumnContext &) {
      return (r.ip_flags & GPP_IP_HEADER_PARSED) ? Field::number (r.l4_proto) : Field (); }},
  {"sport", [](const GppResult & r, const ColumnContext &) {
      return has_ports (r) ? Field::number (r.sport) : Field (); }},
  {"dport", [](const GppResult & r, const ColumnContext &) {
      return has_ports (r) ? Field::number (r.dport) : Field (); }},
  {"frag_offset", [](const GppResult & r, const ColumnContext &) {
      return has_fragment_fields (r) ? Field::number (r.frag_offset) : Field (); }},
  {"more_fragments", [](const GppResult & r, const ColumnContext &) {
      return has_fragment_fields (r) ?
          Field::number ((r.ip_flags & GPP_IP_MORE_FRAGMENTS) ? 1 : 0) : Field (); }},
  {"ipv4_checksum", [](const GppResult & r, const ColumnContext &) { return checksum_field (r.ipv4_checksum); }},
  {"l4_checksum", [](const GppResult & r, const ColumnContext &) { return checksum_field (r.l4_checksum); }},
  {"rss", [](const GppResult & r, const ColumnContext &) { return Field::string (hex (r.rss_hash, 8)); }},
  {"status", [](const GppResult & r, const ColumnContext &) { return status_field (r.status); }},
  {"timestamp", [](const GppResult & r, const ColumnContext &) {
      return seconds_field (r.timestamp_ns); }},
  {"caplen", [](const GppResult & r, const ColumnContext &) { return Field::number (r.caplen); }},
  {"wirelen", [](const GppResult & r, const ColumnContext &) { return Field::number (r.wirelen); }},
  {"ttl", [](const GppResult & r, const ColumnContext &) {
      return (r.ip_flags & GPP_IP_HEADER_PARSED) ? Field::number (r.ttl) : Field (); }},
  {"tcp_flags", [](const GppResult & r, const ColumnContext &) {
      return (has_ports (r) && r.l4_proto == 6) ?
          Field::string (hex (r.tcp_flags, 2)) : Field (); }},
  {"icmp_type", [](const GppResult & r, const ColumnContext &) {
      return is_icmp (r) ? Field::number (r.icmp_type) : Field (); }},
  {"icmp_code", [](const GppResult & r, const ColumnContext &) {
      return is_icmp (r) ? Field::number (r.icmp_code) : Field (); }},
  {"payload_length", [](const GppResult & r, const ColumnContext &) {
      return has_payload (r) ? Field::number (r.payload_length) : Field (); }},
  {"acl_rule", [](const GppResult & r, const ColumnContext &) {
      return r.acl_action != GPP_ACL_NONE && r.acl_rule >= 0 ?
          Field::number ((uint64_t) r.acl_rule) : Field (); }},
  {"acl_action", [](const GppResult & r, const ColumnContext &) {
      return r.acl_action == GPP_ACL_ALLOW ? Field::string ("allow")
          : r.acl_action == GPP_ACL_DROP ? Field::string ("drop") : Field (); }},
  {"dpi_pattern", [](const GppResult & r, const ColumnContext &) {
      return r.dpi_scanned && r.dpi_pattern >= 0 ?
          Field::number ((uint64_t) r.dpi_pattern) : Field (); }},
  {"dpi_hits", [](const GppResult & r, const ColumnContext &) {
      return r.dpi_scanned ? Field::number (r.dpi_hits) : Field (); }},
  {"ip_length", [](const GppResult & r, const ColumnContext &) {
      return (r.ip_flags & GPP_IP_HEADER_PARSED) ? Field::number (r.ip_length) : Field (); }},
  {"community_id", community_id_field},
};

static bool
flow_is_icmp (const GppFlowRecord & f)
{
  return f.l4_proto == 1 || f.l4_proto == 58;
}

static const Column<GppFlowRecord> flow_columns[] = {
  {"ts", [](const GppFlowRecord & f, const ColumnContext &) {
      return seconds_field (f.start_ns); }},
  {"id.orig_h", [](const GppFlowRecord & f, const ColumnContext &) {
      return address_text (f.ip_version, f.src); }},
  {"id.orig_p", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (flow_is_icmp (f) ? f.dport >> 8 : f.sport); }},
  {"id.resp_h", [](const GppFlowRecord & f, const ColumnContext &) {
      return address_text (f.ip_version, f.dst); }},
  {"id.resp_p", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (flow_is_icmp (f) ? f.dport & 0xff : f.dport); }},
  {"proto", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::string (f.l4_proto == 6 ? "tcp" : f.l4_proto == 17 ? "udp" :
          flow_is_icmp (f) ? "icmp" : "unknown_transport"); }},
  {"ip_proto", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (f.l4_proto); }},
  {"duration", [](const GppFlowRecord & f, const ColumnContext &) {
      return seconds_field (f.end_ns - f.start_ns); }},
  {"orig_pkts", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (f.packets[0]); }},
  {"orig_ip_bytes", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (f.bytes[0]); }},
  {"resp_pkts", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (f.packets[1]); }},
  {"resp_ip_bytes", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (f.bytes[1]); }},
  {"vlan", [](const GppFlowRecord & f, const ColumnContext &) {
      return f.vlan_id ? Field::number (f.vlan_id) : Field (); }},
  {"community_id", [](const GppFlowRecord & f, const ColumnContext &) {
      char text[gpp::kCommunityIdTextBytes];
      gpp::community_id_text (f.community_id, text);
      return Field::string (text); }},
  {"first_packet", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (f.first_packet); }},
  {"end_ts", [](const GppFlowRecord & f, const ColumnContext &) {
      return seconds_field (f.end_ns); }},
  {"end_reason", [](const GppFlowRecord & f, const ColumnContext &) {
      static const char *const names[] = { "", "idle", "active", "end", "forced", "no_room" };
      return f.end_reason >= 1 && f.end_reason <= 5 ? Field::string (names[f.end_reason])
          : Field::number (f.end_reason); }},
  {"orig_tcp_flags", [](const GppFlowRecord & f, const ColumnContext &) {
      return f.l4_proto == 6 ? Field::string (hex (f.tcp_flags[0], 2)) : Field (); }},
  {"resp_tcp_flags", [](const GppFlowRecord & f, const ColumnContext &) {
      return f.l4_proto == 6 ? Field::string (hex (f.tcp_flags[1], 2)) : Field (); }},
  {"rss", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::string (hex (f.rss_hash, 8)); }},
  {"acl_rule", [](const GppFlowRecord & f, const ColumnContext &) {
      return f.acl_action != GPP_ACL_NONE && f.acl_rule >= 0 ?
          Field::number ((uint64_t) f.acl_rule) : Field (); }},
  {"acl_action", [](const GppFlowRecord & f, const ColumnContext &) {
      return f.acl_action == GPP_ACL_ALLOW ? Field::string ("allow")
          : f.acl_action == GPP_ACL_DROP ? Field::string ("drop") : Field (); }},
  {"dpi_pattern", [](const GppFlowRecord & f, const ColumnContext &) {
      return f.dpi_pattern >= 0 ? Field::number ((uint64_t) f.dpi_pattern) : Field (); }},
  {"dpi_hits", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (f.dpi_hits); }},
};

template <typename Record, size_t N> static void
append_csv_line (std::string & out, const Record & r, const Column<Record> (&columns)[N],
    const ColumnContext & ctx)
{
  bool first = true;
  for (const auto & c : columns) {
    if (!first)
      out += ',';
    first = false;
    Field f = c.value (r, ctx);
    if (f.kind == Field::NUMBER_LIST) {
      for (int i = 0; i < f.list_len; i++) {
        if (i)
          out += ';';
        out += std::to_string (f.list[i]);
      }
    } else {
      out += f.text;
    }
  }
  out += '\n';
}

template <typename Record, size_t N> static void
append_json_line (std::string & out, const Record & r, const Column<Record> (&columns)[N],
    const ColumnContext & ctx)
{
  out += '{';
  bool first = true;
  for (const auto & c : columns) {
    if (!first)
      out += ',';
    first = false;
    out += '"';
    out += c.name;
    out += "\":";
    Field f = c.value (r, ctx);
    switch (f.kind) {
      case Field::EMPTY:
        out += "null";
        break;
      case Field::NUMBER:
        out += f.text;
        break;
      case Field::TEXT:
        out += '"';
        out += f.text;
        out += '"';
        break;
      case Field::NUMBER_LIST:
        out += '[';
        for (int i = 0; i < f.list_len; i++) {
          if (i)
            out += ',';
          out += std::to_string (f.list[i]);
        }
        out += ']';
        break;
    }
  }
  out += "}\n";
}

template <typename Record, size_t N> static std::string
csv_header_row (const Column<Record> (&columns)[N])
{
  std::string row;
  for (const auto & c : columns) {
    if (!row.empty ())
      row += ',';
    row += c.name;
  }
  return row + '\n';
}

} // namespace previous_encoder

namespace {

using gpp::TextFormat;

constexpr TextFormat kFormats[] = {TextFormat::kCsv, TextFormat::kJsonLines};

const char *name_of(TextFormat format) { return format == TextFormat::kCsv ? "csv" : "jsonl"; }

const auto &reference_columns(const GppResult *) { return previous_encoder::columns; }
const auto &reference_columns(const GppFlowRecord *) { return previous_encoder::flow_columns; }

template <typename Record>
std::string reference_text(const std::vector<Record> &records, TextFormat format, uint16_t seed) {
  const previous_encoder::ColumnContext ctx{seed};
  const auto &columns = reference_columns(records.data());
  std::string text;
  for (const Record &r : records) {
    if (format == TextFormat::kCsv)
      previous_encoder::append_csv_line(text, r, columns, ctx);
    else
      previous_encoder::append_json_line(text, r, columns, ctx);
  }
  return text;
}

size_t encode(gpp::TextEncoder &encoder, const std::vector<GppResult> &records,
              TextFormat format, uint16_t seed) {
  return encoder.format(records.data(), records.size(), format, seed);
}

size_t encode(gpp::TextEncoder &encoder, const std::vector<GppFlowRecord> &records,
              TextFormat format, uint16_t) {
  return encoder.format(records.data(), records.size(), format);
}

template <typename Record>
std::string encoder_text(gpp::TextEncoder &encoder, const std::vector<Record> &records,
                         TextFormat format, uint16_t seed) {
  // One byte past the text, to catch a copy that writes more than it said.
  std::string text(encode(encoder, records, format, seed) + 1, '\x7f');
  encoder.copy_to(&text[0]);
  EXPECT_EQ(text.back(), '\x7f') << "copy_to wrote past the size format returned";
  text.pop_back();
  return text;
}

// The first line that differs, for a failure message that can be read.
std::string first_difference(const std::string &got, const std::string &want) {
  size_t at = 0;
  while (at < got.size() && at < want.size() && got[at] == want[at]) ++at;
  const size_t line_start = want.rfind('\n', at == 0 ? 0 : at - 1);
  const size_t from = line_start == std::string::npos || at == 0 ? 0 : line_start + 1;
  auto line = [from](const std::string &s) { return s.substr(from, s.find('\n', from) - from); };
  return "at byte " + std::to_string(at) + "\n  got:  " + line(got) + "\n  want: " + line(want);
}

template <typename Record>
void expect_same_text(gpp::TextEncoder &encoder, const std::vector<Record> &records,
                      TextFormat format, uint16_t seed, const std::string &what) {
  const std::string want = reference_text(records, format, seed);
  const std::string got = encoder_text(encoder, records, format, seed);
  EXPECT_TRUE(got == want) << what << " " << name_of(format) << " with "
                           << encoder.threads() << " threads: "
                           << first_difference(got, want);
}

// Records of each capture, numbered and timed as the element numbers them.
std::vector<GppResult> capture_records(const std::vector<gpptest::CapturedPacket> &packets,
                                       uint32_t linktype) {
  const gpp::CoreConfig cfg = gpptest::make_config(/*verify_l4=*/true);
  std::vector<GppResult> records(packets.size());
  for (size_t i = 0; i < packets.size(); ++i)
    gpp::process_packet(packets[i].bytes.data(), static_cast<uint32_t>(packets[i].bytes.size()),
                        packets[i].wirelen, linktype, i + 1,
                        1700000000000000000ull + i * 1000003ull, cfg, records[i]);
  return records;
}

std::vector<GppFlowRecord> capture_flows(const std::vector<GppResult> &records) {
  gpp::FlowSettings settings;
  settings.max_flows = 1024;
  settings.idle_timeout_ns = 1000000; // some flows end idle, the rest at the flush
  gpp::FlowMeter meter(settings);
  std::vector<GppFlowRecord> flows;
  meter.add(records.data(), static_cast<uint32_t>(records.size()));
  meter.sweep(flows);
  meter.flush(flows);
  return flows;
}

TEST(ResultText, HeaderRowsAreThePreviousOnes) {
  EXPECT_EQ(gpp::csv_header_row(static_cast<const GppResult *>(nullptr)),
            previous_encoder::csv_header_row(previous_encoder::columns));
  EXPECT_EQ(gpp::csv_header_row(static_cast<const GppFlowRecord *>(nullptr)),
            previous_encoder::csv_header_row(previous_encoder::flow_columns));
}

TEST(ResultText, EveryCaptureAsBefore) {
  const std::string dir = test::shared_data_dir() + "/pcap";
  const std::vector<std::string> names = gpptest::capture_names(dir);
  ASSERT_FALSE(names.empty()) << "no captures in " << dir;
  gpp::TextEncoder one(1), three(3);
  size_t records_seen = 0, flows_seen = 0;
  for (const std::string &name : names) {
    uint32_t linktype = 0;
    std::vector<gpptest::CapturedPacket> packets;
    std::string error;
    if (!gpptest::read_pcap(dir + "/" + name, &linktype, &packets, &error)) continue;
    const std::vector<GppResult> records = capture_records(packets, linktype);
    const std::vector<GppFlowRecord> flows = capture_flows(records);
    records_seen += records.size();
    flows_seen += flows.size();
    for (TextFormat format : kFormats) {
      for (uint16_t seed : {uint16_t{0}, uint16_t{7}})
        expect_same_text(one, records, format, seed, name);
      expect_same_text(three, records, format, 0, name);
      expect_same_text(one, flows, format, 0, name + " flows");
    }
  }
  EXPECT_GT(records_seen, 1000u);
  EXPECT_GT(flows_seen, 100u);
}

class RandomRecords {
public:
  explicit RandomRecords(uint32_t seed) : rng_(seed) {}

  GppResult result(size_t i) {
    GppResult r;
    fill(&r, sizeof r);
    r.vlan_count = static_cast<uint8_t>(below(GPP_MAX_VLANS + 1));
    r.ip_flags = static_cast<uint8_t>(i % 32); // every GPP_IP_* combination in turn
    if (chance(8)) r.ip_flags |= static_cast<uint8_t>(rng_() & 0xe0); // bits no one defines
    const uint8_t versions[] = {0, 4, 6, 5, 255};
    r.ip_version = chance(4) ? versions[below(5)] : (chance(2) ? 4 : 6);
    const uint8_t protos[] = {1, 6, 17, 58, 132, 0, 41, 255};
    if (!chance(8)) r.l4_proto = protos[below(8)];
    r.ipv4_checksum = static_cast<uint8_t>(chance(8) ? rng_() : below(5));
    r.l4_checksum = static_cast<uint8_t>(chance(8) ? rng_() : below(5));
    r.status = chance(3) ? 0 : chance(4) ? static_cast<uint32_t>(rng_())
               : static_cast<uint32_t>(below(1u << 10));
    if (chance(10)) r.status = 1u << (10 + below(22)); // only bits without a name
    r.acl_action = static_cast<uint8_t>(chance(8) ? rng_() : below(3));
    r.acl_rule = chance(3) ? -1 : small_or_large();
    r.dpi_scanned = static_cast<uint8_t>(chance(8) ? rng_() : below(2));
    r.dpi_pattern = chance(3) ? -1 : small_or_large();
    r.ethertype = chance(4) ? 0 : r.ethertype;
    address(r.src, r.ip_version);
    address(r.dst, r.ip_version);
    numbers(r);
    return r;
  }

  GppFlowRecord flow() {
    GppFlowRecord f;
    fill(&f, sizeof f);
    const uint8_t versions[] = {4, 6, 0, 5};
    f.ip_version = chance(8) ? versions[below(4)] : (chance(2) ? 4 : 6);
    const uint8_t protos[] = {1, 6, 17, 58, 132, 0, 41, 255};
    f.l4_proto = protos[below(8)];
    f.end_reason = static_cast<uint8_t>(chance(8) ? rng_() : below(7));
    f.acl_action = static_cast<uint8_t>(chance(8) ? rng_() : below(3));
    f.acl_rule = chance(3) ? -1 : small_or_large();
    f.dpi_pattern = chance(3) ? -1 : small_or_large();
    f.vlan_id = chance(2) ? 0 : f.vlan_id;
    if (chance(4)) f.end_ns = f.start_ns + below(1u << 30);
    address(f.src, f.ip_version);
    address(f.dst, f.ip_version);
    return f;
  }

  // IPv6 groups zero or not at random, so that every zero-run rule of
  // inet_ntop is met, and IPv4-mapped / -compatible forms often.
  void address(uint8_t *a, uint8_t ip_version) {
    if (ip_version == 4 && chance(2)) return;
    const unsigned zero_groups = static_cast<unsigned>(rng_());
    for (int g = 0; g < 8; ++g) {
      if (zero_groups & (1u << g)) a[2 * g] = a[2 * g + 1] = 0;
      else if (chance(3)) a[2 * g] = 0; // short groups
    }
    if (chance(4)) std::memset(a, 0, 10 + below(3) * 2);
    if (chance(8)) a[10] = a[11] = 0xff;
  }

private:
  void fill(void *p, size_t size) {
    auto *bytes = static_cast<uint8_t *>(p);
    for (size_t i = 0; i < size; ++i) bytes[i] = static_cast<uint8_t>(rng_());
  }
  uint32_t below(uint32_t n) { return static_cast<uint32_t>(rng_() % n); }
  bool chance(uint32_t one_in) { return below(one_in) == 0; }
  int32_t small_or_large() {
    return chance(2) ? static_cast<int32_t>(below(100)) : static_cast<int32_t>(rng_());
  }
  // Values of every width, zero and the largest included.
  template <typename T> T any_width() {
    switch (below(4)) {
      case 0: return 0;
      case 1: return static_cast<T>(~T{0});
      case 2: return static_cast<T>(below(10));
      default: return static_cast<T>(uint64_t{rng_()} >> below(64));
    }
  }
  void numbers(GppResult &r) {
    r.packet_number = any_width<uint64_t>();
    r.timestamp_ns = any_width<uint64_t>();
    r.caplen = any_width<uint32_t>();
    r.payload_length = any_width<uint32_t>();
    r.frag_offset = any_width<uint16_t>();
    r.ttl = any_width<uint8_t>();
  }

  std::mt19937_64 rng_;
};

TEST(ResultText, RandomRecordsAsBefore) {
  RandomRecords random(20261204);
  std::vector<GppResult> records;
  std::vector<GppFlowRecord> flows;
  for (size_t i = 0; i < 20000; ++i) records.push_back(random.result(i));
  for (size_t i = 0; i < 5000; ++i) flows.push_back(random.flow());
  gpp::TextEncoder encoder(1);
  for (TextFormat format : kFormats) {
    for (uint16_t seed : {uint16_t{0}, uint16_t{1}, uint16_t{0xfffe}})
      expect_same_text(encoder, records, format, seed, "random records");
    expect_same_text(encoder, flows, format, 0, "random flows");
  }
}

// Records of a few conversations, every other field random, and now and
// then one of the conversation's fields changed: the Community ID cache
// answers most of them, and must answer as SHA-1 does.
TEST(ResultText, RepeatedConversationsAsBefore) {
  RandomRecords random(11);
  std::vector<GppResult> records;
  for (size_t i = 0; i < 20000; ++i) {
    GppResult r = random.result(i);
    if (i >= 40) {
      const GppResult &earlier = records[i % 40];
      auto same = [i](int field) { return (i / 40 * 7 + field) % 9 != 0; };
      if (same(0)) std::memcpy(r.src, earlier.src, sizeof r.src);
      if (same(1)) std::memcpy(r.dst, earlier.dst, sizeof r.dst);
      if (same(2)) r.ip_version = earlier.ip_version;
      if (same(3)) r.l4_proto = earlier.l4_proto;
      if (same(4)) r.sport = earlier.sport;
      if (same(5)) r.dport = earlier.dport;
      if (same(6)) r.icmp_type = earlier.icmp_type;
      if (same(7)) r.icmp_code = earlier.icmp_code;
      if (same(8)) r.ip_flags = earlier.ip_flags;
    }
    records.push_back(r);
  }
  gpp::TextEncoder encoder(2);
  for (TextFormat format : kFormats)
    for (uint16_t seed : {uint16_t{0}, uint16_t{9}})
      expect_same_text(encoder, records, format, seed, "repeated conversations");
}

// The cache's key holds every field community_id_digest() reads: a record
// changed anywhere outside its key keeps its digest.
TEST(ResultText, CommunityIdCacheKeyHoldsEveryInput) {
  RandomRecords random(12);
  size_t changed_outside_key = 0;
  for (size_t i = 0; i < 2000; ++i) {
    const GppResult r = random.result(i);
    const auto key = gpp::CommunityIdCache::key_of(r, 5);
    uint8_t digest[gpp::kCommunityIdDigestBytes] = {};
    const bool has = gpp::community_id_digest(r, 5, digest);
    for (size_t byte = 0; byte < sizeof r; ++byte) {
      GppResult changed = r;
      reinterpret_cast<uint8_t *>(&changed)[byte] ^= static_cast<uint8_t>(1 + i % 255);
      const auto changed_key = gpp::CommunityIdCache::key_of(changed, 5);
      if (std::memcmp(&key, &changed_key, sizeof key) != 0) continue;
      ++changed_outside_key;
      uint8_t changed_digest[gpp::kCommunityIdDigestBytes] = {};
      const bool changed_has = gpp::community_id_digest(changed, 5, changed_digest);
      ASSERT_TRUE(changed_has == has &&
                  std::memcmp(digest, changed_digest, sizeof digest) == 0)
          << "byte " << byte << " of GppResult changes the Community ID but not the key";
    }
  }
  EXPECT_GT(changed_outside_key, 2000u * 50);
}

// Every pattern of zero and non-zero groups, each with ::ffff: in front and
// without, as glibc's inet_ntop writes them.
TEST(ResultText, EveryIpv6ZeroPatternAsInetNtop) {
  std::vector<GppResult> records;
  std::mt19937 rng(6);
  for (unsigned zeros = 0; zeros < 256; ++zeros)
    for (int mapped = 0; mapped < 2; ++mapped) {
      GppResult r{};
      r.ip_version = 6;
      r.ip_flags = GPP_IP_HEADER_PARSED;
      for (int g = 0; g < 8; ++g) {
        const unsigned value = zeros & (1u << g) ? 0 : 1 + rng() % 0xffff;
        r.src[2 * g] = static_cast<uint8_t>(value >> 8);
        r.src[2 * g + 1] = static_cast<uint8_t>(value);
      }
      if (mapped) r.src[10] = r.src[11] = 0xff;
      std::memcpy(r.dst, r.src, sizeof r.dst);
      r.dst[15] = 0; // an IPv4 part ending in .0
      records.push_back(r);
    }
  gpp::TextEncoder encoder(1);
  expect_same_text(encoder, records, TextFormat::kCsv, 0, "IPv6 zero patterns");
}

// The same text at every thread count and buffer size, and chunks that
// split a buffer anywhere.
TEST(ResultText, SameTextAtEveryThreadCountAndSize) {
  RandomRecords random(7);
  std::vector<GppResult> all;
  std::vector<GppFlowRecord> all_flows;
  for (size_t i = 0; i < 4096; ++i) {
    all.push_back(random.result(i));
    all_flows.push_back(random.flow());
  }
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    gpp::TextEncoder encoder(threads);
    // The same encoder across sizes: chunk memory is reused, larger and smaller.
    for (size_t size : {size_t{1}, size_t{7}, size_t{4096}, size_t{0}, size_t{1000}, size_t{513},
                        size_t{4096}}) {
      const std::vector<GppResult> records(all.begin(), all.begin() + size);
      const std::vector<GppFlowRecord> flows(all_flows.begin(), all_flows.begin() + size);
      const std::string what = std::to_string(size) + " records";
      for (TextFormat format : kFormats) {
        expect_same_text(encoder, records, format, 3, what);
        expect_same_text(encoder, flows, format, 0, what + " (flows)");
      }
    }
  }
}

// kMaxTextLineBytes holds the widest line of each record and format, the
// tunnel columns (decap=inner) at their longest included.
TEST(ResultText, WidestLineFitsTheBound) {
  GppResult r;
  std::memset(&r, 0xff, sizeof r);
  r.vlan_count = GPP_MAX_VLANS;
  r.ip_version = 6;
  r.l4_proto = 6;
  r.ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED | GPP_IP_FRAGMENT;
  r.ipv4_checksum = r.l4_checksum = GPP_CHECKSUM_UNVERIFIED;
  r.acl_action = GPP_ACL_ALLOW;
  r.acl_rule = r.dpi_pattern = INT32_MAX;
  r.dpi_scanned = 1;
  GppTunnelInfo t;
  std::memset(&t, 0xff, sizeof t);
  t.tunnel_count = GPP_MAX_TUNNEL_DEPTH;
  for (int i = 0; i < GPP_MAX_TUNNEL_DEPTH; ++i)
    t.tunnel_types[i] = GPP_TUNNEL_GENEVE; // the longest names, 6 characters
  t.outer_ip_version = 6;
  t.outer_l4_proto = 17;
  GppFlowRecord f;
  std::memset(&f, 0xff, sizeof f);
  f.ip_version = 6;
  f.l4_proto = 6;
  f.end_reason = 255;
  f.start_ns = 0;
  f.acl_action = GPP_ACL_ALLOW;
  f.acl_rule = f.dpi_pattern = INT32_MAX;
  std::vector<char> out(2 * gpp::kMaxTextLineBytes);
  for (TextFormat format : kFormats) {
    const size_t widest = std::max({gpp::format_records(&r, 1, format, 0, out.data()),
                                    gpp::format_records(&f, 1, format, out.data()),
                                    gpp::format_records(&f, 1, format, out.data(), true)});
    const size_t widest_tunnelled = gpp::format_records(&r, &t, 1, format, 0, out.data());
    // Names are copied as 32-byte blocks, which may write 32 bytes past a line.
    EXPECT_LT(widest + 32, gpp::kMaxTextLineBytes) << name_of(format);
    EXPECT_LT(widest_tunnelled + 32, gpp::kMaxTextLineBytes) << name_of(format);
    EXPECT_GT(widest, 450u) << name_of(format) << ": not the widest line (CSV's is 463 bytes)";
    EXPECT_GT(widest_tunnelled, 600u) << name_of(format) << ": not the widest tunnelled line";
  }
}

} // namespace

// Flows metered with decap=inner: the same line, then the flow's tunnel id
// (CSV: a last column; JSON: a last key), and the header row likewise.
TEST(ResultText, FlowTunnelIdColumnComesLast) {
  const auto *flow_type = static_cast<const GppFlowRecord *>(nullptr);
  EXPECT_EQ(gpp::csv_header_row(flow_type).substr(0, gpp::csv_header_row(flow_type).size() - 1) +
                ",tunnel_id\n",
            gpp::csv_header_row(flow_type, true));
  RandomRecords random(41);
  for (uint32_t id : {0u, 1u, 0xabcdefu, 0xffffffffu}) {
    GppFlowRecord f = random.flow();
    f.tunnel_id = id;
    for (TextFormat format : kFormats) {
      std::vector<char> plain(gpp::kMaxTextLineBytes), with(gpp::kMaxTextLineBytes);
      const size_t n = gpp::format_records(&f, 1, format, plain.data());
      const size_t m = gpp::format_records(&f, 1, format, with.data(), true);
      std::string line(plain.data(), n), tunnelled(with.data(), m);
      ASSERT_EQ('\n', line.back());
      line.pop_back();
      if (format == TextFormat::kCsv) {
        EXPECT_EQ(line + "," + std::to_string(id) + "\n", tunnelled);
      } else {
        ASSERT_EQ('}', line.back());
        line.pop_back();
        EXPECT_EQ(line + ",\"tunnel_id\":" + std::to_string(id) + "}\n", tunnelled);
      }
    }
  }
}
