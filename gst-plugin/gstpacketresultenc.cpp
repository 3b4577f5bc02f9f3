/**
 * SECTION:element-packetresultenc
 * @title: packetresultenc
 *
 * Turns `application/x-packet-results` buffers into text, one line per
 * packet: CSV with a header row (`text/csv`) or JSON Lines
 * (`application/x-ndjson`).  The column names are a stable contract;
 * docs/result-fields.md lists them with their meaning.  In JSON Lines an empty CSV field is `null`
 * and `vlan` is an array.  `community_id` is each packet's Community ID
 * (v1, seed `community-id-seed`).  Flow records (gpupacketproc's flows pad)
 * are written the same ways, with Zeek conn.log's column names.  Records
 * with their tunnel plane (record-size=176, gpupacketproc decap=inner) get
 * the tunnel columns after the others; flows metered with decap=inner (their
 * caps say decap=inner) get tunnel_id last.
 *
 * Each input buffer gives one output buffer, its records formatted on
 * `threads` threads (resulttext.h), in order.
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
#include "resultspool.h"

#include <cstring>
#include <string>

#include "community_id.h"
#include "flowoutput.h"
#include "gpupacket/flow-record.h"
#include "gpupacket/packet-result.h"
#include "resulttext.h"

GST_DEBUG_CATEGORY_STATIC (gst_packet_result_enc_debug);
#define GST_CAT_DEFAULT gst_packet_result_enc_debug

#define DEFAULT_FORMAT GST_PACKET_RESULT_ENC_FORMAT_CSV
#define DEFAULT_HEADER TRUE
#define DEFAULT_COMMUNITY_ID_SEED gpp::kDefaultCommunityIdSeed
#define DEFAULT_THREADS 0
#define MAX_THREADS 1024

enum
{
  PROP_0,
  PROP_FORMAT,
  PROP_HEADER,
  PROP_COMMUNITY_ID_SEED,
  PROP_THREADS,
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
  guint threads;

  /* streaming state */
  GstPacketResultEncFormat active_format;
  gboolean flows;               /* the caps say flow records */
  gboolean tunnels;             /* the caps say results with their tunnel plane */
  gboolean flow_tunnel_id;      /* the caps say flows metered with decap=inner */
  guint16 active_seed;
  gboolean header_written;
  gboolean have_segment;
  guint active_threads;
  gpp::TextEncoder *encoder;    /* its pool has encoder_threads; freed on PAUSED->READY */
  guint encoder_threads;
  GppResultsPool *text_pool;    /* output buffers; freed on PAUSED->READY */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_RESULTS_CAPS_NAME ", record-size = (int) { "
        G_STRINGIFY (GPP_RESULTS_RECORD_SIZE) ", " G_STRINGIFY (GPP_RESULTS_RECORD_SIZE_TUNNELS)
        " }; " GPP_FLOW_CAPS_NAME ", record-size = (int) 144"));

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

/* The tunnel plane: counts and selectors likewise. */
static const char *
record_problem (const GppTunnelInfo & t, gchar ** detail)
{
  if (t.tunnel_count > GPP_MAX_TUNNEL_DEPTH) {
    *detail = g_strdup_printf ("tunnel_count is %u, above the %d levels a record holds",
        t.tunnel_count, GPP_MAX_TUNNEL_DEPTH);
    return "tunnel_count";
  }
  if (t.outer_ip_version != 0 && t.outer_ip_version != 4 && t.outer_ip_version != 6) {
    *detail = g_strdup_printf ("outer_ip_version is %u (0, 4 or 6 expected)",
        t.outer_ip_version);
    return "outer_ip_version";
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

/* The CSV header row of an empty stream. */
static GstFlowReturn
gst_packet_result_enc_push_header (GstPacketResultEnc * self, const std::string & row)
{
  return gst_pad_push (self->srcpad, gst_buffer_new_memdup (row.data (), row.size ()));
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

/* The records' text (with their tunnel plane, or NULL), in the encoder's
 * memory; its size. */
static size_t
format_text (GstPacketResultEnc *, gpp::TextEncoder & encoder, const GppResult * records,
    const GppTunnelInfo * tunnels, size_t count, gpp::TextFormat format, guint16 seed)
{
  return encoder.format (records, count, format, seed, tunnels);
}

static size_t
format_text (GstPacketResultEnc * self, gpp::TextEncoder & encoder,
    const GppFlowRecord * records, const GppTunnelInfo *, size_t count,
    gpp::TextFormat format, guint16)
{
  return encoder.format (records, count, format, self->flow_tunnel_id);
}

/* The CSV header row of this stream's records. */
static const std::string &
header_row (GstPacketResultEnc * self)
{
  return self->flows ? gpp::csv_header_row ((const GppFlowRecord *) NULL,
      self->flow_tunnel_id) :
      gpp::csv_header_row ((const GppResult *) NULL, self->tunnels);
}

/* The bytes of one record of this stream, as its caps say. */
static size_t
record_size (GstPacketResultEnc * self, const GppResult *)
{
  return self->tunnels ? GPP_RESULTS_RECORD_SIZE_TUNNELS : GPP_RESULTS_RECORD_SIZE;
}

static size_t
record_size (GstPacketResultEnc *, const GppFlowRecord *)
{
  return sizeof (GppFlowRecord);
}

/* A record's problem, its tunnel plane's included. */
static const char *
record_problem (const GppResult * records, const GppTunnelInfo * tunnels, size_t i,
    gchar ** detail)
{
  const char *problem = record_problem (records[i], detail);
  return problem || !tunnels ? problem : record_problem (tunnels[i], detail);
}

static const char *
record_problem (const GppFlowRecord * records, const GppTunnelInfo *, size_t i,
    gchar ** detail)
{
  return record_problem (records[i], detail);
}

/* The encoder for this stream's thread count, made on its first buffer. */
static gpp::TextEncoder &
gst_packet_result_enc_encoder (GstPacketResultEnc * self)
{
  if (!self->encoder || self->encoder_threads != self->active_threads) {
    delete self->encoder;
    self->encoder = nullptr;
    self->encoder = new gpp::TextEncoder (self->active_threads);
    self->encoder_threads = self->active_threads;
  }
  return *self->encoder;
}

/* An output buffer of @size bytes, reused (resultspool.h says why), with a
 * quarter to spare for a longer text; plain memory where the pool has none. */
static GstBuffer *
gst_packet_result_enc_text_buffer (GstPacketResultEnc * self, gsize size)
{
  if (!self->text_pool)
    self->text_pool = new GppResultsPool (4);
  GstBuffer *buffer = self->text_pool->acquire (size);
  return buffer ? buffer : gst_buffer_new_allocate (NULL, size, NULL);
}

static void
gst_packet_result_enc_drop_text_pool (GstPacketResultEnc * self)
{
  delete self->text_pool;
  self->text_pool = NULL;
}

/* One output buffer per input buffer: the header row (first buffer of a CSV
 * stream), then the records' text, formatted on the encoder's threads. */
template <typename Record> static GstFlowReturn
gst_packet_result_enc_encode (GstPacketResultEnc * self, GstBuffer * buffer, const char *what)
{
  GstMapInfo map;

  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map a %s buffer.", what), (NULL));
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  const auto *records = reinterpret_cast<const Record *> (map.data);
  const size_t size = record_size (self, records);
  if (map.size % size != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Malformed %s buffer: %" G_GSIZE_FORMAT " bytes is not a whole number "
            "of %zu-byte records.", what, map.size, size), (NULL));
    gst_buffer_unmap (buffer, &map);
    gst_buffer_unref (buffer);
    return GST_FLOW_ERROR;
  }
  const size_t count = map.size / size;
  const GppTunnelInfo *tunnels = self->tunnels ? gpp_results_tunnels (map.data, map.size) :
      NULL;
  const bool csv = self->active_format == GST_PACKET_RESULT_ENC_FORMAT_CSV;

  size_t bad = count;
  gchar *detail = NULL;
  for (size_t i = 0; i < count; i++) {
    if (record_problem (records, tunnels, i, &detail)) {
      bad = i;
      break;
    }
  }
  const guint64 bad_number = bad < count ? record_number (records[bad]) : 0;
  size_t text_size;
  gpp::TextEncoder *encoder;
  try {
    encoder = &gst_packet_result_enc_encoder (self);
    text_size = format_text (self, *encoder, records, tunnels, bad,
        csv ? gpp::TextFormat::kCsv : gpp::TextFormat::kJsonLines, self->active_seed);
  } catch (...) {
    gst_buffer_unmap (buffer, &map);
    gst_buffer_unref (buffer);
    g_free (detail);
    throw;
  }
  gst_buffer_unmap (buffer, &map);

  const std::string *header = NULL;
  if (csv && !self->header_written) {
    header = &header_row (self);
    self->header_written = TRUE;
  }
  const size_t header_size = header ? header->size () : 0;

  /* The records before a bad one still go out, then the error. */
  GstFlowReturn ret = GST_FLOW_OK;
  if (header_size + text_size > 0) {
    GstBuffer *out = gst_packet_result_enc_text_buffer (self, header_size + text_size);
    GstMapInfo out_map;
    gst_buffer_map (out, &out_map, GST_MAP_WRITE);
    if (header)
      memcpy (out_map.data, header->data (), header_size);
    encoder->copy_to (reinterpret_cast<char *> (out_map.data) + header_size);
    gst_buffer_unmap (out, &out_map);
    gst_buffer_copy_into (out, buffer, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
    ret = gst_pad_push (self->srcpad, out);
  }
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
    return gst_packet_result_enc_encode<GppFlowRecord> (self, buffer, "flow");
  return gst_packet_result_enc_encode<GppResult> (self, buffer, "results");
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
      self->active_threads = self->threads;
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
      const GstStructure *in = gst_caps_get_structure (in_caps, 0);
      gint in_record_size = 0;
      gst_structure_get_int (in, "record-size", &in_record_size);
      self->flows = gst_structure_has_name (in, GPP_FLOW_CAPS_NAME);
      self->tunnels = !self->flows && in_record_size == GPP_RESULTS_RECORD_SIZE_TUNNELS;
      self->flow_tunnel_id = self->flows
          && g_strcmp0 (gst_structure_get_string (in, "decap"), "inner") == 0;
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
        gst_packet_result_enc_push_header (self, header_row (self));
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
    case PROP_THREADS:
      self->threads = g_value_get_uint (value);
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
    case PROP_THREADS:
      g_value_set_uint (value, self->threads);
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

/* The encoder's threads do not outlive the stream: the streaming thread,
 * their only user, has stopped once PAUSED->READY has chained up. */
static GstStateChangeReturn
gst_packet_result_enc_change_state (GstElement * element, GstStateChange transition)
{
  GstPacketResultEnc *self = GST_PACKET_RESULT_ENC (element);
  GstStateChangeReturn ret = GST_ELEMENT_CLASS (parent_class)->change_state (element,
      transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    delete self->encoder;
    self->encoder = nullptr;
    gst_packet_result_enc_drop_text_pool (self);
  }
  return ret;
}

static void
gst_packet_result_enc_finalize (GObject * object)
{
  GstPacketResultEnc *self = GST_PACKET_RESULT_ENC (object);
  delete self->encoder;
  gst_packet_result_enc_drop_text_pool (self);
  G_OBJECT_CLASS (parent_class)->finalize (object);
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
  gobject_class->finalize = gst_packet_result_enc_finalize;
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_packet_result_enc_change_state);

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
  gchar *threads_blurb = g_strdup_printf ("Threads that format each buffer's records, "
      "0 = one per core (the default: a row costs 1.5 to 4 times what "
      "gpupacketproc's packet core spends on its packet, so one thread holds a pipeline "
      "back); "
      "buffers under %zu records per thread use fewer, since handing them out costs "
      "more than it saves. Output is the same at every count; read at the start of "
      "each stream", gpp::TextEncoder::kMinRecordsPerThread);
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_uint ("threads", "Threads", g_intern_string (threads_blurb),
          0, MAX_THREADS, DEFAULT_THREADS, rw_ready));
  g_free (threads_blurb);

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
  self->threads = DEFAULT_THREADS;
  self->active_threads = DEFAULT_THREADS;
  self->encoder = nullptr;
  self->active_seed = DEFAULT_COMMUNITY_ID_SEED;
  self->active_format = DEFAULT_FORMAT;
  self->flows = FALSE;
  self->tunnels = FALSE;
  self->flow_tunnel_id = FALSE;
  self->header_written = FALSE;
  self->have_segment = FALSE;
}
