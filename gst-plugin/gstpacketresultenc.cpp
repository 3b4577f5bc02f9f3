/**
 * SECTION:element-packetresultenc
 * @title: packetresultenc
 *
 * Turns `application/x-packet-results` buffers into text, one line per
 * packet: CSV with a header row (`text/csv`) or JSON Lines
 * (`application/x-ndjson`).  The column names are a stable contract; README
 * lists them with their meaning.  In JSON Lines an empty CSV field is `null`
 * and `vlan` is an array.  `community_id` is each packet's Community ID
 * (v1, seed `community-id-seed`).  Flow records (gpupacketproc's flows pad)
 * are written the same ways, with Zeek conn.log's column names.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 pcapsrc location=trace.pcap ! gpupacketproc ! \
 *     packetresultenc format=jsonl ! filesink location=trace.jsonl
 * ]|
 */
#include "gstpacketresultenc.h"
#include "noexcept.h"
#include "readyonly.h"

#include <arpa/inet.h>
#include <sys/socket.h>

#include <string>

#include "community_id.h"
#include "flowoutput.h"
#include "gpupacket/flow-record.h"
#include "gpupacket/packet-result.h"

GST_DEBUG_CATEGORY_STATIC (gst_packet_result_enc_debug);
#define GST_CAT_DEFAULT gst_packet_result_enc_debug

#define DEFAULT_FORMAT GST_PACKET_RESULT_ENC_FORMAT_CSV
#define DEFAULT_HEADER TRUE
#define DEFAULT_COMMUNITY_ID_SEED gpp::kDefaultCommunityIdSeed

enum
{
  PROP_0,
  PROP_FORMAT,
  PROP_HEADER,
  PROP_COMMUNITY_ID_SEED,
};

struct _GstPacketResultEnc
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* settings, under the object lock */
  GstPacketResultEncFormat format;
  gboolean header;
  guint community_id_seed;

  /* streaming state */
  GstPacketResultEncFormat active_format;
  gboolean flows;               /* the caps say flow records */
  guint16 active_seed;
  gboolean header_written;
  gboolean have_segment;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_RESULTS_CAPS_NAME ", record-size = (int) 128; "
        GPP_FLOW_CAPS_NAME ", record-size = (int) 144"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS ("text/csv; application/x-ndjson"));

#define gst_packet_result_enc_parent_class parent_class
G_DEFINE_TYPE (GstPacketResultEnc, gst_packet_result_enc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (packetresultenc, "packetresultenc", GST_RANK_NONE,
    GST_TYPE_PACKET_RESULT_ENC);

GType
gst_packet_result_enc_format_get_type (void)
{
  static GType type = 0;
  static const GEnumValue formats[] = {
    {GST_PACKET_RESULT_ENC_FORMAT_CSV, "CSV with a header row", "csv"},
    {GST_PACKET_RESULT_ENC_FORMAT_JSONL, "JSON Lines: one object per packet", "jsonl"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstPacketResultEncFormat", formats);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* One field of one line, before it is written as CSV or JSON. */
struct Field
{
  enum Kind { EMPTY, NUMBER, TEXT, NUMBER_LIST } kind = EMPTY;
  std::string text;             /* NUMBER: digits as written; TEXT: the string */
  const uint16_t *list = nullptr;
  int list_len = 0;

  static Field number (guint64 n)
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
  g_snprintf (buf, sizeof buf, "0x%0*x", digits, value);
  return buf;
}

/* An IPv4 or IPv6 address as text (IPv6 in RFC 5952 form). */
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

/* Nanoseconds as seconds.nanoseconds. */
static Field
seconds_field (guint64 ns)
{
  Field f;
  char buf[32];
  g_snprintf (buf, sizeof buf, "%" G_GUINT64_FORMAT ".%09" G_GUINT64_FORMAT, ns / GST_SECOND,
      ns % GST_SECOND);
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

/* TCP and UDP: the payload the DPI stage scans (SCTP's chunks are not read). */
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

/* Fragment fields exist for every IPv4 header and for IPv6 with a fragment header. */
static bool
has_fragment_fields (const GppResult & r)
{
  return (r.ip_flags & GPP_IP_HEADER_PARSED) &&
      (r.ip_version == 4 || (r.ip_flags & GPP_IP_FRAGMENT));
}

/* What a column may need besides the record. */
struct ColumnContext
{
  guint16 community_id_seed;
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

/* The column contract: names in output order and how each is derived.
 * README's "Result fields" table documents the same list. */
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
          Field::number ((guint64) r.acl_rule) : Field (); }},
  {"acl_action", [](const GppResult & r, const ColumnContext &) {
      return r.acl_action == GPP_ACL_ALLOW ? Field::string ("allow")
          : r.acl_action == GPP_ACL_DROP ? Field::string ("drop") : Field (); }},
  {"dpi_pattern", [](const GppResult & r, const ColumnContext &) {
      return r.dpi_scanned && r.dpi_pattern >= 0 ?
          Field::number ((guint64) r.dpi_pattern) : Field (); }},
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

/* Flow records: Zeek conn.log's names where it has the field (ICMP type and
 * code in the port fields, as Zeek writes them), then gpupacket's own.
 * README's "Flow fields" table documents the same list. */
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
          Field::number ((guint64) f.acl_rule) : Field (); }},
  {"acl_action", [](const GppFlowRecord & f, const ColumnContext &) {
      return f.acl_action == GPP_ACL_ALLOW ? Field::string ("allow")
          : f.acl_action == GPP_ACL_DROP ? Field::string ("drop") : Field (); }},
  {"dpi_pattern", [](const GppFlowRecord & f, const ColumnContext &) {
      return f.dpi_pattern >= 0 ? Field::number ((guint64) f.dpi_pattern) : Field (); }},
  {"dpi_hits", [](const GppFlowRecord & f, const ColumnContext &) {
      return Field::number (f.dpi_hits); }},
};

/* Records may come from anywhere (filesrc, appsrc), so every count and
 * selector the columns index or branch on is checked first; NULL = usable. */
static const char *
record_problem (const GppResult & r, gchar ** detail)
{
  if (r.vlan_count > GPP_MAX_VLANS) {
    *detail = g_strdup_printf ("vlan_count is %u, above the %d VLAN tags a record holds",
        r.vlan_count, GPP_MAX_VLANS);
    return "vlan_count";
  }
  if ((r.ip_flags & GPP_IP_HEADER_PARSED) && r.ip_version != 4 && r.ip_version != 6) {
    *detail = g_strdup_printf ("ip_version is %u with an IP header parsed (4 or 6 expected)",
        r.ip_version);
    return "ip_version";
  }
  return NULL;
}

static const char *
record_problem (const GppFlowRecord & f, gchar ** detail)
{
  if (f.ip_version != 4 && f.ip_version != 6) {
    *detail = g_strdup_printf ("ip_version is %u (4 or 6 expected)", f.ip_version);
    return "ip_version";
  }
  return NULL;
}

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
      out += f.text;            /* no value contains ',' '"' or a newline */
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
        out += f.text;          /* addresses, hex and flag names need no escaping */
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

static GstFlowReturn
gst_packet_result_enc_push_text (GstPacketResultEnc * self, const std::string & text,
    GstBuffer * timing)
{
  GstBuffer *buf = gst_buffer_new_memdup (text.data (), text.size ());
  if (timing)
    gst_buffer_copy_into (buf, timing, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
  return gst_pad_push (self->srcpad, buf);
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

/* A record's number for messages: its packet's, or its flow's first packet's. */
static guint64
record_number (const GppResult & r)
{
  return r.packet_number;
}

static guint64
record_number (const GppFlowRecord & f)
{
  return f.first_packet;
}

template <typename Record, size_t N> static GstFlowReturn
gst_packet_result_enc_encode (GstPacketResultEnc * self, GstBuffer * buffer,
    const Column<Record> (&table)[N], const char *what)
{
  GstMapInfo map;
  std::string text;

  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map a %s buffer.", what), (NULL));
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  if (map.size % sizeof (Record) != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Malformed %s buffer: %" G_GSIZE_FORMAT " bytes is not a whole number "
            "of %zu-byte records.", what, map.size, sizeof (Record)), (NULL));
    gst_buffer_unmap (buffer, &map);
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  const auto *records = reinterpret_cast<const Record *> (map.data);
  const size_t count = map.size / sizeof (Record);
  const bool csv = self->active_format == GST_PACKET_RESULT_ENC_FORMAT_CSV;
  const ColumnContext ctx { self->active_seed };

  if (csv && !self->header_written) {
    text = csv_header_row (table);
    self->header_written = TRUE;
  }
  text.reserve (text.size () + count * 200);
  size_t bad = count;
  gchar *detail = NULL;
  for (size_t i = 0; i < count; i++) {
    if (record_problem (records[i], &detail)) {
      bad = i;
      break;
    }
    if (csv)
      append_csv_line (text, records[i], table, ctx);
    else
      append_json_line (text, records[i], table, ctx);
  }
  const guint64 bad_number = bad < count ? record_number (records[bad]) : 0;
  gst_buffer_unmap (buffer, &map);

  /* The records before a bad one still go out, then the error. */
  GstFlowReturn ret = GST_FLOW_OK;
  if (!text.empty ())
    ret = gst_packet_result_enc_push_text (self, text, buffer);
  gst_buffer_unref (buffer);
  if (bad < count) {
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Invalid %s record %" G_GSIZE_FORMAT " of %" G_GSIZE_FORMAT " in a buffer "
            "(packet number %" G_GUINT64_FORMAT "): %s.", what, bad + 1, count, bad_number,
            detail),
        ("records that do not come from gpupacketproc are checked before use"));
    g_free (detail);
    return GST_FLOW_ERROR;
  }
  return ret;
}

static GstFlowReturn
gst_packet_result_enc_chain_body (GstPad *, GstObject * parent, GstBuffer * buffer)
{
  GstPacketResultEnc *self = GST_PACKET_RESULT_ENC (parent);
  if (self->flows)
    return gst_packet_result_enc_encode (self, buffer, flow_columns, "flow");
  return gst_packet_result_enc_encode (self, buffer, columns, "results");
}

static gboolean
gst_packet_result_enc_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstPacketResultEnc *self = GST_PACKET_RESULT_ENC (parent);

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_STREAM_START:
      GST_OBJECT_LOCK (self);
      self->active_format = self->format;
      self->active_seed = (guint16) self->community_id_seed;
      self->header_written = !self->header;
      GST_OBJECT_UNLOCK (self);
      self->have_segment = FALSE;
      break;
    case GST_EVENT_SEGMENT:
      self->have_segment = TRUE;
      break;
    case GST_EVENT_CAPS:{
      GstCaps *in_caps;
      gst_event_parse_caps (event, &in_caps);
      self->flows = gst_structure_has_name (gst_caps_get_structure (in_caps, 0),
          GPP_FLOW_CAPS_NAME);
      gst_event_unref (event);
      const bool csv = self->active_format == GST_PACKET_RESULT_ENC_FORMAT_CSV;
      GstCaps *caps = gst_caps_new_empty_simple (csv ? "text/csv" : "application/x-ndjson");
      gboolean ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (caps));
      gst_caps_unref (caps);
      return ok;
    }
    case GST_EVENT_EOS:
      /* An empty stream still gets its CSV header row; a stream that never
       * started (no caps: upstream refused its format and posted an error)
       * gets nothing, so that no data follows that error downstream. */
      if (self->active_format == GST_PACKET_RESULT_ENC_FORMAT_CSV && !self->header_written
          && gst_pad_has_current_caps (pad)) {
        self->header_written = TRUE;
        /* A source that hits EOS at once sends no SEGMENT; data needs one. */
        if (!self->have_segment) {
          GstSegment segment;
          gst_segment_init (&segment, GST_FORMAT_BYTES);
          gst_pad_push_event (self->srcpad, gst_event_new_segment (&segment));
          self->have_segment = TRUE;
        }
        gst_packet_result_enc_push_text (self, self->flows ? csv_header_row (flow_columns)
            : csv_header_row (columns), NULL);
      }
      break;
    default:
      break;
  }
  return gst_pad_event_default (pad, parent, event);
}

static void
gst_packet_result_enc_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPacketResultEnc *self = GST_PACKET_RESULT_ENC (object);

  if (GPP_REFUSE_READY_ONLY (object, pspec))
    return;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FORMAT:
      self->format = (GstPacketResultEncFormat) g_value_get_enum (value);
      break;
    case PROP_HEADER:
      self->header = g_value_get_boolean (value);
      break;
    case PROP_COMMUNITY_ID_SEED:
      self->community_id_seed = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_packet_result_enc_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstPacketResultEnc *self = GST_PACKET_RESULT_ENC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_FORMAT:
      g_value_set_enum (value, self->format);
      break;
    case PROP_HEADER:
      g_value_set_boolean (value, self->header);
      break;
    case PROP_COMMUNITY_ID_SEED:
      g_value_set_uint (value, self->community_id_seed);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}


/* packetresultenc's chain, run so that no exception leaves it (noexcept.h). */
static GstFlowReturn
gst_packet_result_enc_chain (GstPad * pad, GstObject * parent, GstBuffer * buffer)
{
  return gpp_no_throw (GST_ELEMENT (parent), "packetresultenc's chain", (GstFlowReturn) GST_FLOW_ERROR,
      [&] { return gst_packet_result_enc_chain_body (pad, parent, buffer); });
}

static void
gst_packet_result_enc_class_init (GstPacketResultEncClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const auto rw_ready = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);

  gobject_class->set_property = gst_packet_result_enc_set_property;
  gobject_class->get_property = gst_packet_result_enc_get_property;

  g_object_class_install_property (gobject_class, PROP_FORMAT,
      g_param_spec_enum ("format", "Format",
          "Text format: csv (header row, then one row per packet) or jsonl "
          "(one JSON object per packet); read at the start of each stream",
          GST_TYPE_PACKET_RESULT_ENC_FORMAT, DEFAULT_FORMAT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_HEADER,
      g_param_spec_boolean ("header", "CSV header",
          "Write the CSV header row first (csv only)", DEFAULT_HEADER, rw_ready));
  g_object_class_install_property (gobject_class, PROP_COMMUNITY_ID_SEED,
      g_param_spec_uint ("community-id-seed", "Community ID seed",
          "Seed of the community_id column (Community ID v1; tools that share an ID "
          "must share the seed); read at the start of each stream",
          0, G_MAXUINT16, DEFAULT_COMMUNITY_ID_SEED, rw_ready));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Packet result encoder", "Codec/Encoder/Network",
      "Writes per-packet results as CSV or JSON Lines", "gpupacket developers");

  gst_type_mark_as_plugin_api (GST_TYPE_PACKET_RESULT_ENC_FORMAT, (GstPluginAPIFlags) 0);
  GST_DEBUG_CATEGORY_INIT (gst_packet_result_enc_debug, "packetresultenc", 0,
      "Packet result text encoder");
}

static void
gst_packet_result_enc_init (GstPacketResultEnc * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_packet_result_enc_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_packet_result_enc_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->format = DEFAULT_FORMAT;
  self->header = DEFAULT_HEADER;
  self->community_id_seed = DEFAULT_COMMUNITY_ID_SEED;
  self->active_seed = DEFAULT_COMMUNITY_ID_SEED;
  self->active_format = DEFAULT_FORMAT;
  self->flows = FALSE;
  self->header_written = FALSE;
  self->have_segment = FALSE;
}
