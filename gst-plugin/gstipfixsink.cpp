/**
 * SECTION:element-ipfixsink
 * @title: ipfixsink
 *
 * Exports gpupacketproc's flow records as IPFIX (RFC 7011), built with
 * libfixbuf: to a collector over UDP or TCP (`host`, `port`, `transport`),
 * or to an IPFIX file (`location`).  Each flow leaves as one record per
 * direction that saw packets (as NetFlow/IPFIX probes export flows, so
 * collectors such as nfcapd store them without RFC 5103 support).  Over UDP
 * the templates are sent again every `template-refresh` seconds; a
 * collector that is down or restarts costs the records sent meanwhile and a
 * warning, never a stall.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 pcapsrc device=eth0 ! gpupacketproc flows=true name=p \
 *     p.src ! queue ! fakesink p.flows ! queue ! ipfixsink host=127.0.0.1 port=4739
 * ]|
 */
#include "gstipfixsink.h"
#include "flowoutput.h"
#include "noexcept.h"
#include "readyonly.h"

#include <fixbuf/public.h>

#include <cstring>
#include <string>

#include "gpupacket/flow-record.h"
#include "packet_core.h"

GST_DEBUG_CATEGORY_STATIC (gst_ipfix_sink_debug);
#define GST_CAT_DEFAULT gst_ipfix_sink_debug

#define DEFAULT_HOST NULL
#define DEFAULT_PORT 4739       /* IANA's IPFIX port */
#define DEFAULT_TRANSPORT GST_IPFIX_SINK_TRANSPORT_UDP
#define DEFAULT_LOCATION NULL
#define DEFAULT_OBSERVATION_DOMAIN 0
#define DEFAULT_TEMPLATE_REFRESH 60     /* s */

enum
{
  PROP_0,
  PROP_HOST,
  PROP_PORT,
  PROP_TRANSPORT,
  PROP_LOCATION,
  PROP_OBSERVATION_DOMAIN,
  PROP_TEMPLATE_REFRESH,
};

/* One direction of a flow, as the templates below lay it out: no implicit
 * padding (paddingOctets fills the end to a multiple of 8). */
struct IpfixFlow4
{
  uint64_t start_ms, end_ms, packets, octets;
  uint64_t segment;             /* layer2SegmentId: the tunnel id (decap=inner), else 0 */
  uint32_t src, dst;            /* host byte order, as fixbuf wants */
  uint16_t sport, dport, vlan;
  uint8_t proto, tcp_flags, end_reason;
  uint8_t padding[7];
};
static_assert (sizeof (IpfixFlow4) == 64, "IpfixFlow4 matches its template");

struct IpfixFlow6
{
  uint64_t start_ms, end_ms, packets, octets;
  uint64_t segment;
  uint8_t src[16], dst[16];
  uint16_t sport, dport, vlan;
  uint8_t proto, tcp_flags, end_reason;
  uint8_t padding[7];
};
static_assert (sizeof (IpfixFlow6) == 88, "IpfixFlow6 matches its template");

static fbInfoElementSpec_t flow4_spec[] = {
  {(char *) "flowStartMilliseconds", 8, 0},
  {(char *) "flowEndMilliseconds", 8, 0},
  {(char *) "packetDeltaCount", 8, 0},
  {(char *) "octetDeltaCount", 8, 0},
  {(char *) "layer2SegmentId", 8, 0},
  {(char *) "sourceIPv4Address", 4, 0},
  {(char *) "destinationIPv4Address", 4, 0},
  {(char *) "sourceTransportPort", 2, 0},
  {(char *) "destinationTransportPort", 2, 0},
  {(char *) "vlanId", 2, 0},
  {(char *) "protocolIdentifier", 1, 0},
  {(char *) "tcpControlBits", 1, 0},
  {(char *) "flowEndReason", 1, 0},
  {(char *) "paddingOctets", 7, 0},
  FB_IESPEC_NULL
};

static fbInfoElementSpec_t flow6_spec[] = {
  {(char *) "flowStartMilliseconds", 8, 0},
  {(char *) "flowEndMilliseconds", 8, 0},
  {(char *) "packetDeltaCount", 8, 0},
  {(char *) "octetDeltaCount", 8, 0},
  {(char *) "layer2SegmentId", 8, 0},
  {(char *) "sourceIPv6Address", 16, 0},
  {(char *) "destinationIPv6Address", 16, 0},
  {(char *) "sourceTransportPort", 2, 0},
  {(char *) "destinationTransportPort", 2, 0},
  {(char *) "vlanId", 2, 0},
  {(char *) "protocolIdentifier", 1, 0},
  {(char *) "tcpControlBits", 1, 0},
  {(char *) "flowEndReason", 1, 0},
  {(char *) "paddingOctets", 7, 0},
  FB_IESPEC_NULL
};

struct _GstIpfixSink
{
  GstBaseSink parent;

  /* settings, under the object lock */
  gchar *host;
  guint port;
  GstIpfixSinkTransport transport;
  gchar *location;
  guint observation_domain;
  guint template_refresh;

  /* export state, streaming thread (start/stop/render) */
  fbInfoModel_t *model;
  fBuf_t *fbuf;                 /* owns the session and the exporter */
  fbSession_t *session;
  uint16_t tid4, tid6;
  gboolean network;
  gint64 templates_sent_us;     /* g_get_monotonic_time () */
  guint64 records, failed_sends;
  gboolean warned;              /* about the current run of failed sends */
  gboolean udp_refused;         /* libfixbuf logged a refused UDP send (below) */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_FLOW_CAPS_NAME ", record-size = (int) 144"));

#define gst_ipfix_sink_parent_class parent_class
G_DEFINE_TYPE (GstIpfixSink, gst_ipfix_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (ipfixsink, "ipfixsink", GST_RANK_NONE, GST_TYPE_IPFIX_SINK);

GType
gst_ipfix_sink_transport_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_IPFIX_SINK_TRANSPORT_UDP, "UDP (templates resent every template-refresh s)", "udp"},
    {GST_IPFIX_SINK_TRANSPORT_TCP, "TCP", "tcp"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstIpfixSinkTransport", values));
  return type;
}

static void
gst_ipfix_sink_free_export (GstIpfixSink * self)
{
  if (self->fbuf)
    fBufFree (self->fbuf);      /* and its session and exporter */
  else if (self->session)
    fbSessionFree (self->session);
  self->fbuf = NULL;
  self->session = NULL;
  if (self->model)
    fbInfoModelFree (self->model);
  self->model = NULL;
}

/* Adds `spec` as an internal and external template; its ID, or 0. */
static uint16_t
add_template (fbSession_t * session, fbInfoModel_t * model, fbInfoElementSpec_t * spec,
    GError ** err)
{
  fbTemplate_t *tmpl = fbTemplateAlloc (model);
  if (!fbTemplateAppendSpecArray (tmpl, spec, UINT32_MAX, err)) {
    fbTemplateFreeUnused (tmpl);
    return 0;
  }
  const uint16_t tid = fbSessionAddTemplate (session, TRUE, FB_TID_AUTO, tmpl, err);
  if (!tid) {
    fbTemplateFreeUnused (tmpl);
    return 0;
  }
  /* The same layout goes on the wire: external ID = internal ID. */
  if (!fbSessionAddTemplate (session, FALSE, tid, tmpl, err))
    return 0;
  return tid;
}

static gboolean
gst_ipfix_sink_start_body (GstBaseSink * sink)
{
  GstIpfixSink *self = GST_IPFIX_SINK (sink);
  GST_OBJECT_LOCK (self);
  std::string host = self->host ? self->host : "";
  std::string location = self->location ? self->location : "";
  const guint port = self->port;
  const bool tcp = self->transport == GST_IPFIX_SINK_TRANSPORT_TCP;
  const guint domain = self->observation_domain;
  GST_OBJECT_UNLOCK (self);
  if (host.empty () == location.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Set either host (export to a collector) or location (an IPFIX file)."), (NULL));
    return FALSE;
  }
  GError *err = NULL;
  self->model = fbInfoModelAlloc ();
  self->session = fbSessionAlloc (self->model);
  fbSessionSetDomain (self->session, domain);
  self->tid4 = add_template (self->session, self->model, flow4_spec, &err);
  self->tid6 = self->tid4 ? add_template (self->session, self->model, flow6_spec, &err) : 0;
  if (!self->tid6) {
    GST_ELEMENT_ERROR (self, LIBRARY, INIT, ("Could not build the IPFIX templates."),
        ("%s", err ? err->message : "?"));
    g_clear_error (&err);
    gst_ipfix_sink_free_export (self);
    return FALSE;
  }
  fbExporter_t *exporter;
  self->network = !host.empty ();
  if (self->network) {
    std::string svc = std::to_string (port);
    fbConnSpec_t spec = FB_CONNSPEC_INIT;
    spec.transport = tcp ? FB_TCP : FB_UDP;
    spec.host = (char *) host.c_str ();
    spec.svc = (char *) svc.c_str ();
    exporter = fbExporterAllocNet (&spec);   /* copies spec */
  } else {
    exporter = fbExporterAllocFile (location.c_str ());
  }
  self->fbuf = fBufAllocForExport (self->session, exporter);
  /* Templates first: a collector cannot read records without them.  Over
   * TCP a collector that is not there fails here, at start. */
  if (!fbSessionExportTemplates (self->session, &err) || !fBufEmit (self->fbuf, &err)) {
    if (self->network && !tcp) {
      GST_ELEMENT_WARNING (self, RESOURCE, WRITE, ("The IPFIX collector at %s:%u does not "
              "answer; records are sent anyway and export resumes when it is back.",
              host.c_str (), port), ("%s", err ? err->message : "?"));
      g_clear_error (&err);
    } else {
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE, ("Could not start IPFIX export to %s.",
              self->network ? (host + ":" + std::to_string (port)).c_str () :
              location.c_str ()), ("%s", err ? err->message : "?"));
      g_clear_error (&err);
      gst_ipfix_sink_free_export (self);
      return FALSE;
    }
  }
  self->templates_sent_us = g_get_monotonic_time ();
  self->records = self->failed_sends = 0;
  self->warned = FALSE;
  return TRUE;
}

static gboolean
gst_ipfix_sink_start (GstBaseSink * sink)
{
  return gpp_no_throw (GST_ELEMENT (sink), "ipfixsink's start", FALSE,
      [&] { return gst_ipfix_sink_start_body (sink); });
}

static gboolean
gst_ipfix_sink_stop (GstBaseSink * sink)
{
  GstIpfixSink *self = GST_IPFIX_SINK (sink);
  if (self->fbuf) {
    GError *err = NULL;
    if (!fBufEmit (self->fbuf, &err))
      g_clear_error (&err);
  }
  gst_ipfix_sink_free_export (self);
  GST_INFO_OBJECT (self, "%" G_GUINT64_FORMAT " records exported, %" G_GUINT64_FORMAT
      " failed sends", self->records, self->failed_sends);
  return TRUE;
}

/* libfixbuf meets a UDP send the collector's host refused (ICMP port
 * unreachable: nobody listens there) with a g_warning, and goes on as if it
 * had worked.  The sink sending on this thread hears of it here, so that it
 * can warn on the bus as for any failed send; the message still goes to the
 * handler that was the default before. */
static thread_local GstIpfixSink *sending_sink;
static GLogFunc previous_log_handler = g_log_default_handler;

static void
gst_ipfix_sink_log_handler (const gchar * domain, GLogLevelFlags level, const gchar * message,
    gpointer data)
{
  if (sending_sink && (level & G_LOG_LEVEL_WARNING) && message &&
      strstr (message, "UDP send"))
    sending_sink->udp_refused = TRUE;
  previous_log_handler (domain, level, message, data);
}

/* A failed send: over UDP a warning (once per run of failures) and the
 * records are lost; elsewhere an error. */
static gboolean
gst_ipfix_sink_send_failed (GstIpfixSink * self, GError * err)
{
  self->failed_sends++;
  const bool udp = self->network && self->transport == GST_IPFIX_SINK_TRANSPORT_UDP;
  if (udp) {
    if (!self->warned)
      GST_ELEMENT_WARNING (self, RESOURCE, WRITE, ("The IPFIX collector does not answer; "
              "flow records are lost until it is back."), ("%s", err ? err->message : "?"));
    self->warned = TRUE;
    g_clear_error (&err);
    return TRUE;
  }
  GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not write IPFIX records."),
      ("%s", err ? err->message : "?"));
  g_clear_error (&err);
  return FALSE;
}

template <typename Rec> static void
fill_common (Rec & r, const GppFlowRecord & f, int dir)
{
  std::memset (&r, 0, sizeof r);
  r.start_ms = f.start_ns / 1000000;
  r.end_ms = f.end_ns / 1000000;
  r.packets = f.packets[dir];
  r.octets = f.bytes[dir];
  /* RFC 7133's layer2SegmentId (IE 351): what VXLAN VNIs and NVGRE keys are
   * exported as; here every tunnel type's id. */
  r.segment = f.tunnel_id;
  /* ICMP's type and code stay in the destination port both ways, as
   * NetFlow and IPFIX collectors expect them. */
  const bool icmp = f.l4_proto == 1 || f.l4_proto == 58;
  r.sport = icmp ? 0 : dir ? f.dport : f.sport;
  r.dport = icmp ? f.dport : dir ? f.sport : f.dport;
  r.vlan = f.vlan_id;
  r.proto = f.l4_proto;
  r.tcp_flags = f.tcp_flags[dir];
  r.end_reason = f.end_reason;
}

static GstFlowReturn
gst_ipfix_sink_render_body (GstBaseSink * sink, GstBuffer * buffer)
{
  GstIpfixSink *self = GST_IPFIX_SINK (sink);
  GstMapInfo map;
  if (!gst_buffer_map (buffer, &map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map a flow buffer."), (NULL));
    return GST_FLOW_ERROR;
  }
  if (map.size % sizeof (GppFlowRecord) != 0) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Malformed flow buffer: %" G_GSIZE_FORMAT
            " bytes is not a whole number of %zu-byte records.", map.size,
            sizeof (GppFlowRecord)), (NULL));
    gst_buffer_unmap (buffer, &map);
    return GST_FLOW_ERROR;
  }
  GError *err = NULL;
  gboolean ok = TRUE;
  sending_sink = self;
  self->udp_refused = FALSE;
  /* UDP: templates again now and then, for collectors that (re)started. */
  GST_OBJECT_LOCK (self);
  const guint refresh = self->template_refresh;
  GST_OBJECT_UNLOCK (self);
  const gint64 now = g_get_monotonic_time ();
  if (self->network && self->transport == GST_IPFIX_SINK_TRANSPORT_UDP &&
      now - self->templates_sent_us >= (gint64) refresh * G_USEC_PER_SEC) {
    self->templates_sent_us = now;
    if (!fbSessionExportTemplates (self->session, &err))
      ok = gst_ipfix_sink_send_failed (self, err);
  }
  const auto *flows = reinterpret_cast<const GppFlowRecord *> (map.data);
  const size_t count = map.size / sizeof (GppFlowRecord);
  for (size_t i = 0; i < count && ok; i++) {
    const GppFlowRecord & f = flows[i];
    if (f.ip_version != 4 && f.ip_version != 6)
      continue;                 /* not a flow gpupacketproc writes */
    for (int dir = 0; dir < 2 && ok; dir++) {
      if (!f.packets[dir])
        continue;
      const uint16_t tid = f.ip_version == 4 ? self->tid4 : self->tid6;
      if (!fBufSetInternalTemplate (self->fbuf, tid, &err) ||
          !fBufSetExportTemplate (self->fbuf, tid, &err)) {
        ok = gst_ipfix_sink_send_failed (self, err);
        break;
      }
      gboolean appended;
      if (f.ip_version == 4) {
        IpfixFlow4 r;
        fill_common (r, f, dir);
        const uint8_t *a = dir ? f.dst : f.src, *b = dir ? f.src : f.dst;
        r.src = gpp::detail::load_be32 (a);
        r.dst = gpp::detail::load_be32 (b);
        appended = fBufAppend (self->fbuf, reinterpret_cast<uint8_t *> (&r), sizeof r, &err);
      } else {
        IpfixFlow6 r;
        fill_common (r, f, dir);
        std::memcpy (r.src, dir ? f.dst : f.src, 16);
        std::memcpy (r.dst, dir ? f.src : f.dst, 16);
        appended = fBufAppend (self->fbuf, reinterpret_cast<uint8_t *> (&r), sizeof r, &err);
      }
      if (appended) {
        self->records++;
      } else {
        ok = gst_ipfix_sink_send_failed (self, err);
        err = NULL;
      }
    }
  }
  /* Out now: flow records are already late by their timeouts. */
  if (ok && !fBufEmit (self->fbuf, &err))
    ok = gst_ipfix_sink_send_failed (self, err);
  else if (ok && self->udp_refused)
    ok = gst_ipfix_sink_send_failed (self, g_error_new_literal (g_quark_from_static_string
            ("gpp-ipfix"), 0, "UDP send refused: nobody listens at the collector's port"));
  else if (ok)
    self->warned = FALSE;
  sending_sink = NULL;
  gst_buffer_unmap (buffer, &map);
  return ok ? GST_FLOW_OK : GST_FLOW_ERROR;
}

static GstFlowReturn
gst_ipfix_sink_render (GstBaseSink * sink, GstBuffer * buffer)
{
  return gpp_no_throw (GST_ELEMENT (sink), "ipfixsink's render", (GstFlowReturn) GST_FLOW_ERROR,
      [&] { return gst_ipfix_sink_render_body (sink, buffer); });
}

static void
gst_ipfix_sink_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstIpfixSink *self = GST_IPFIX_SINK (object);
  if (GPP_REFUSE_READY_ONLY (object, pspec))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      g_free (self->host);
      self->host = g_value_dup_string (value);
      break;
    case PROP_PORT:
      self->port = g_value_get_uint (value);
      break;
    case PROP_TRANSPORT:
      self->transport = (GstIpfixSinkTransport) g_value_get_enum (value);
      break;
    case PROP_LOCATION:
      g_free (self->location);
      self->location = g_value_dup_string (value);
      break;
    case PROP_OBSERVATION_DOMAIN:
      self->observation_domain = g_value_get_uint (value);
      break;
    case PROP_TEMPLATE_REFRESH:
      self->template_refresh = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_ipfix_sink_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstIpfixSink *self = GST_IPFIX_SINK (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_HOST:
      g_value_set_string (value, self->host);
      break;
    case PROP_PORT:
      g_value_set_uint (value, self->port);
      break;
    case PROP_TRANSPORT:
      g_value_set_enum (value, self->transport);
      break;
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_OBSERVATION_DOMAIN:
      g_value_set_uint (value, self->observation_domain);
      break;
    case PROP_TEMPLATE_REFRESH:
      g_value_set_uint (value, self->template_refresh);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_ipfix_sink_finalize (GObject * object)
{
  GstIpfixSink *self = GST_IPFIX_SINK (object);
  gst_ipfix_sink_free_export (self);
  g_free (self->host);
  g_free (self->location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_ipfix_sink_class_init (GstIpfixSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *basesink_class = GST_BASE_SINK_CLASS (klass);
  /* Once per process (class_init runs once): refused UDP sends (above). */
  previous_log_handler = g_log_set_default_handler (gst_ipfix_sink_log_handler, NULL);
  const auto rw_ready = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);

  gobject_class->set_property = gst_ipfix_sink_set_property;
  gobject_class->get_property = gst_ipfix_sink_get_property;
  gobject_class->finalize = gst_ipfix_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_HOST,
      g_param_spec_string ("host", "Collector host",
          "IPFIX collector to export to (name or address); set this or location",
          DEFAULT_HOST, rw_ready));
  g_object_class_install_property (gobject_class, PROP_PORT,
      g_param_spec_uint ("port", "Collector port", "The collector's port", 1, 65535,
          DEFAULT_PORT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_TRANSPORT,
      g_param_spec_enum ("transport", "Transport", "How records reach the collector",
          GST_TYPE_IPFIX_SINK_TRANSPORT, DEFAULT_TRANSPORT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "IPFIX file",
          "Write an IPFIX file (RFC 5655) instead of exporting to a collector",
          DEFAULT_LOCATION, rw_ready));
  g_object_class_install_property (gobject_class, PROP_OBSERVATION_DOMAIN,
      g_param_spec_uint ("observation-domain", "Observation domain",
          "Observation domain ID of the exported messages", 0, G_MAXUINT32,
          DEFAULT_OBSERVATION_DOMAIN, rw_ready));
  g_object_class_install_property (gobject_class, PROP_TEMPLATE_REFRESH,
      g_param_spec_uint ("template-refresh", "Template refresh",
          "UDP: seconds between sending the templates again (a collector that "
          "restarts needs them)", 1, 86400, DEFAULT_TEMPLATE_REFRESH, rw_ready));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class, "IPFIX flow exporter",
      "Sink/Network", "Exports gpupacketproc's flow records as IPFIX (libfixbuf)",
      "gpupacket developers");
  basesink_class->start = GST_DEBUG_FUNCPTR (gst_ipfix_sink_start);
  basesink_class->stop = GST_DEBUG_FUNCPTR (gst_ipfix_sink_stop);
  basesink_class->render = GST_DEBUG_FUNCPTR (gst_ipfix_sink_render);
  gst_type_mark_as_plugin_api (GST_TYPE_IPFIX_SINK_TRANSPORT, (GstPluginAPIFlags) 0);
  GST_DEBUG_CATEGORY_INIT (gst_ipfix_sink_debug, "ipfixsink", 0, "IPFIX flow exporter");
}

static void
gst_ipfix_sink_init (GstIpfixSink * self)
{
  self->host = g_strdup (DEFAULT_HOST);
  self->port = DEFAULT_PORT;
  self->transport = DEFAULT_TRANSPORT;
  self->location = g_strdup (DEFAULT_LOCATION);
  self->observation_domain = DEFAULT_OBSERVATION_DOMAIN;
  self->template_refresh = DEFAULT_TEMPLATE_REFRESH;
  /* Records carry their own times: render as they come. */
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
}
