/**
 * SECTION:element-pcapsink
 * @title: pcapsink
 *
 * Writes packets to a pcap file with libpcap's writer (nanosecond
 * timestamps), from `application/x-packet-results` buffers and the batches
 * their GstPacketBatchMeta refers to: all packets, or only those whose ACL
 * verdict is #GstPcapSink:verdict.  A packet's verdict is `drop` when the ACL
 * stage dropped it and `allow` otherwise (also where no ACL ran).  tcpdump and
 * Wireshark read the file; an empty stream still gives a valid empty file.
 * Records with their tunnel plane (record-size=176, gpupacketproc
 * decap=inner) are taken too: the verdict is the innermost packet's, and the
 * packet is written as captured, its tunnels included.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 pcapsrc location=in.pcap ! gpupacketproc acl-rules=fw.rules ! \
 *     pcapsink verdict=allow location=allowed.pcap
 * ]|
 */
#include "gstpcapsink.h"
#include "noexcept.h"
#include "pcap_linktype.h"
#include "readyonly.h"

#include <cerrno>

#include <pcap/pcap.h>

#include "gpupacket/gstpacketbatchmeta.h"
#include "gpupacket/packet-batch.h"
#include "gpupacket/packet-result.h"

GST_DEBUG_CATEGORY_STATIC (gst_pcap_sink_debug);
#define GST_CAT_DEFAULT gst_pcap_sink_debug

#define DEFAULT_LOCATION NULL
#define DEFAULT_VERDICT GST_PCAP_SINK_VERDICT_ALL
#define WRITE_SNAPLEN 262144

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_VERDICT,
};

struct _GstPcapSink
{
  GstBaseSink parent;

  /* settings, under the object lock */
  gchar *location;
  GstPcapSinkVerdict verdict;

  /* streaming state */
  pcap_t *dead;
  pcap_dumper_t *dumper;
  guint linktype;
  gsize record_size;            /* the caps' record-size */
  guint64 written;
  gboolean failed;              /* an error was posted: write no empty file */
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_RESULTS_CAPS_NAME ", record-size = (int) { "
        G_STRINGIFY (GPP_RESULTS_RECORD_SIZE) ", " G_STRINGIFY (GPP_RESULTS_RECORD_SIZE_TUNNELS)
        " }"));

#define gst_pcap_sink_parent_class parent_class
G_DEFINE_TYPE (GstPcapSink, gst_pcap_sink, GST_TYPE_BASE_SINK);
GST_ELEMENT_REGISTER_DEFINE (pcapsink, "pcapsink", GST_RANK_NONE, GST_TYPE_PCAP_SINK);

GType
gst_pcap_sink_verdict_get_type (void)
{
  static GType type = 0;
  static const GEnumValue verdicts[] = {
    {GST_PCAP_SINK_VERDICT_ALL, "Every packet", "all"},
    {GST_PCAP_SINK_VERDICT_ALLOW, "Packets the ACL did not drop", "allow"},
    {GST_PCAP_SINK_VERDICT_DROP, "Packets the ACL dropped", "drop"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstPcapSinkVerdict", verdicts);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* Opens the output for `linktype` (the first batch's). */
static gboolean
gst_pcap_sink_open (GstPcapSink * self, guint linktype)
{
  gchar *location;
  GST_OBJECT_LOCK (self);
  location = g_strdup (self->location);
  GST_OBJECT_UNLOCK (self);

  self->dead = pcap_open_dead_with_tstamp_precision (gpp::dlt_from_linktype (linktype),
      WRITE_SNAPLEN, PCAP_TSTAMP_PRECISION_NANO);
  if (self->dead)
    self->dumper = pcap_dump_open (self->dead, location);
  if (!self->dumper) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_WRITE,
        ("Could not write capture file \"%s\": %s", location,
            self->dead ? pcap_geterr (self->dead) : "libpcap refused the link type"), (NULL));
    if (self->dead)
      pcap_close (self->dead);
    self->dead = NULL;
    self->failed = TRUE;
    g_free (location);
    return FALSE;
  }
  self->linktype = linktype;
  g_free (location);
  return TRUE;
}

static gboolean
gst_pcap_sink_start (GstBaseSink * base)
{
  GstPcapSink *self = GST_PCAP_SINK (base);
  GST_OBJECT_LOCK (self);
  const gboolean have_location = self->location && *self->location;
  GST_OBJECT_UNLOCK (self);
  if (!have_location) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No output file given: set the \"location\" property."), (NULL));
    return FALSE;
  }
  return TRUE;
}

/* The file could not take what was written (a full disk): one error per
 * stream, with the reason of the call that failed (errno saved at once: a
 * later flush of the same stream would report a stale one). */
static void
gst_pcap_sink_write_failed (GstPcapSink * self, int saved_errno)
{
  if (self->failed)
    return;
  self->failed = TRUE;
  GST_ELEMENT_ERROR (self, RESOURCE, WRITE, ("Could not write to the capture file \"%s\".",
          self->location), ("%s", saved_errno ? g_strerror (saved_errno) :
          "the write failed (no reason given)"));
}

/* Flushes what was written; FALSE (error posted once) when the file could
 * not take it. */
static gboolean
gst_pcap_sink_flush_output (GstPcapSink * self)
{
  if (self->failed)
    return FALSE;
  errno = 0;
  if (pcap_dump_flush (self->dumper) == 0 && !ferror (pcap_dump_file (self->dumper)))
    return TRUE;
  gst_pcap_sink_write_failed (self, errno);
  return FALSE;
}

/* Ends one stream's file: each READY→PAUSED starts a new one at `location`
 * (it may have changed in READY); an empty stream still leaves a valid file. */
static void
gst_pcap_sink_close_output (GstPcapSink * self)
{
  if (!self->dumper && !self->failed)
    gst_pcap_sink_open (self, GPP_LINKTYPE_ETHERNET);
  if (self->dumper) {
    gst_pcap_sink_flush_output (self);
    pcap_dump_close (self->dumper);
    pcap_close (self->dead);
    GST_INFO_OBJECT (self, "wrote %" G_GUINT64_FORMAT " packets", self->written);
  }
  self->dumper = NULL;
  self->dead = NULL;
}

static GstStateChangeReturn
gst_pcap_sink_change_state (GstElement * element, GstStateChange transition)
{
  GstPcapSink *self = GST_PCAP_SINK (element);
  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    self->written = 0;
    self->failed = FALSE;
  }
  GstStateChangeReturn ret = GST_ELEMENT_CLASS (parent_class)->change_state (element,
      transition);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY)
    gst_pcap_sink_close_output (self);
  return ret;
}

/* Results with or without their tunnel plane: the GppResult records come
 * first either way. */
static gboolean
gst_pcap_sink_set_caps (GstBaseSink * base, GstCaps * caps)
{
  GstPcapSink *self = GST_PCAP_SINK (base);
  gint record_size = 0;
  gst_structure_get_int (gst_caps_get_structure (caps, 0), "record-size", &record_size);
  self->record_size = (gsize) record_size;
  return record_size > 0;
}

static gboolean
gst_pcap_sink_event (GstBaseSink * base, GstEvent * event)
{
  GstPcapSink *self = GST_PCAP_SINK (base);
  if (GST_EVENT_TYPE (event) == GST_EVENT_EOS && self->dumper)
    gst_pcap_sink_flush_output (self);
  return GST_BASE_SINK_CLASS (parent_class)->event (base, event);
}

static GstFlowReturn
gst_pcap_sink_render_body (GstBaseSink * base, GstBuffer * buffer)
{
  GstPcapSink *self = GST_PCAP_SINK (base);
  GstPacketBatchMeta *meta = gst_buffer_get_packet_batch_meta (buffer);
  GstMapInfo results, batch;
  char why[256];

  if (!meta) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Results without their packets: no "
            "GstPacketBatchMeta on the buffer."), ("pcapsink must follow gpupacketproc, "
            "directly or through elements that keep buffer metas"));
    return GST_FLOW_ERROR;
  }
  GST_OBJECT_LOCK (self);
  const GstPcapSinkVerdict verdict = self->verdict;
  GST_OBJECT_UNLOCK (self);

  gst_buffer_map (buffer, &results, GST_MAP_READ);
  gst_buffer_map (meta->batch, &batch, GST_MAP_READ);
  GstFlowReturn ret = GST_FLOW_OK;
  const auto *records = reinterpret_cast<const GppResult *> (results.data);
  const size_t count = results.size / self->record_size;
  if (!gpp_batch_validate (batch.data, batch.size, why, sizeof why) ||
      results.size % self->record_size != 0 ||
      reinterpret_cast<const GppBatchHeader *> (batch.data)->packet_count != count) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("The results do not describe their batch: %s.",
            gpp_batch_validate (batch.data, batch.size, why, sizeof why) ?
            "different packet counts" : why), (NULL));
    ret = GST_FLOW_ERROR;
  } else {
    const guint linktype = reinterpret_cast<const GppBatchHeader *> (batch.data)->linktype;
    if (!self->dumper && !gst_pcap_sink_open (self, linktype)) {
      ret = GST_FLOW_ERROR;
    } else if (linktype != self->linktype) {
      GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("The link type changed from %u to %u: a pcap "
              "file holds one link type.", self->linktype, linktype), (NULL));
      ret = GST_FLOW_ERROR;
    } else {
      const GppPacketDesc *descs = gpp_batch_descs (batch.data);
      errno = 0;                /* the reason of a failed write below */
      for (size_t i = 0; i < count; i++) {
        const bool dropped = records[i].acl_action == GPP_ACL_DROP;
        if ((verdict == GST_PCAP_SINK_VERDICT_ALLOW && dropped) ||
            (verdict == GST_PCAP_SINK_VERDICT_DROP && !dropped))
          continue;
        struct pcap_pkthdr hdr;
        hdr.ts.tv_sec = (time_t) (descs[i].timestamp_ns / GST_SECOND);
        hdr.ts.tv_usec = (suseconds_t) (descs[i].timestamp_ns % GST_SECOND);  /* ns: nano dumper */
        hdr.caplen = descs[i].caplen;
        hdr.len = descs[i].wirelen;
        pcap_dump (reinterpret_cast<u_char *> (self->dumper), &hdr, batch.data + descs[i].offset);
        self->written++;
      }
      if (ferror (pcap_dump_file (self->dumper))) {
        gst_pcap_sink_write_failed (self, errno);
        ret = GST_FLOW_ERROR;
      }
    }
  }
  gst_buffer_unmap (meta->batch, &batch);
  gst_buffer_unmap (buffer, &results);
  return ret;
}

static void
gst_pcap_sink_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstPcapSink *self = GST_PCAP_SINK (object);

  if (GPP_REFUSE_READY_ONLY (object, pspec))
    return;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free (self->location);
      self->location = g_value_dup_string (value);
      break;
    case PROP_VERDICT:
      self->verdict = (GstPcapSinkVerdict) g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pcap_sink_get_property (GObject * object, guint prop_id, GValue * value, GParamSpec * pspec)
{
  GstPcapSink *self = GST_PCAP_SINK (object);
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_VERDICT:
      g_value_set_enum (value, self->verdict);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pcap_sink_finalize (GObject * object)
{
  GstPcapSink *self = GST_PCAP_SINK (object);
  g_free (self->location);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}


/* pcapsink's render, run so that no exception leaves it (noexcept.h). */
static GstFlowReturn
gst_pcap_sink_render (GstBaseSink * base, GstBuffer * buffer)
{
  return gpp_no_throw (GST_ELEMENT (base), "pcapsink's render", (GstFlowReturn) GST_FLOW_ERROR,
      [&] { return gst_pcap_sink_render_body (base, buffer); });
}

static void
gst_pcap_sink_class_init (GstPcapSinkClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSinkClass *basesink_class = GST_BASE_SINK_CLASS (klass);

  gobject_class->set_property = gst_pcap_sink_set_property;
  gobject_class->get_property = gst_pcap_sink_get_property;
  gobject_class->finalize = gst_pcap_sink_finalize;

  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location", "pcap file to write (nanosecond "
          "timestamps, the link type of the first batch)", DEFAULT_LOCATION,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property (gobject_class, PROP_VERDICT,
      g_param_spec_enum ("verdict", "Verdict",
          "Which packets to write: all, those the ACL allowed (or that no ACL judged), "
          "or those it dropped", GST_TYPE_PCAP_SINK_VERDICT, DEFAULT_VERDICT,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_PLAYING)));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_set_static_metadata (element_class, "Packet capture file sink",
      "Sink/Network", "Writes the packets of processed batches to a pcap file, "
      "optionally only those with a given ACL verdict", "gpupacket developers");

  basesink_class->start = GST_DEBUG_FUNCPTR (gst_pcap_sink_start);
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_pcap_sink_change_state);
  basesink_class->render = GST_DEBUG_FUNCPTR (gst_pcap_sink_render);
  basesink_class->event = GST_DEBUG_FUNCPTR (gst_pcap_sink_event);
  basesink_class->set_caps = GST_DEBUG_FUNCPTR (gst_pcap_sink_set_caps);

  gst_type_mark_as_plugin_api (GST_TYPE_PCAP_SINK_VERDICT, (GstPluginAPIFlags) 0);
  GST_DEBUG_CATEGORY_INIT (gst_pcap_sink_debug, "pcapsink", 0, "pcap file sink");
}

static void
gst_pcap_sink_init (GstPcapSink * self)
{
  self->location = g_strdup (DEFAULT_LOCATION);
  self->verdict = DEFAULT_VERDICT;
  self->dead = NULL;
  self->dumper = NULL;
  self->failed = FALSE;
  self->record_size = GPP_RESULTS_RECORD_SIZE;
  gst_base_sink_set_sync (GST_BASE_SINK (self), FALSE);
}
