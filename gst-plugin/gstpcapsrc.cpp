/**
 * SECTION:element-pcapsrc
 * @title: pcapsrc
 *
 * Reads a pcap or pcapng capture with libpcap and pushes its packets as
 * `application/x-packet-batch` buffers (see gpupacket/packet-batch.h): up to
 * #GstPcapSrc:batch-size packets per buffer, in one contiguous block.
 *
 * Packets are numbered by their place in the file, like tshark's
 * frame.number, also when #GstPcapSrc:filter skips some of them.  Capture
 * timestamps (ns) travel in the batch descriptors; the buffers themselves
 * carry no PTS, so a synchronising sink does not replay the capture's pace.
 *
 * ## Example launch line
 * |[
 * gst-launch-1.0 pcapsrc location=trace.pcap filter="tcp port 443" ! gpupacketproc ! \
 *     packetresultenc format=csv ! filesink location=trace.csv
 * ]|
 */
#include "gstpcapsrc.h"

#include <pcap/pcap.h>

#include <memory>
#include <string>

#include "batch_builder.h"
#include "batchbuffer.h"

GST_DEBUG_CATEGORY_STATIC (gst_pcap_src_debug);
#define GST_CAT_DEFAULT gst_pcap_src_debug

#define DEFAULT_LOCATION NULL
#define DEFAULT_FILTER NULL
#define DEFAULT_BATCH_SIZE 256
#define MAX_BATCH_SIZE (1u << 20)
/* A batch ends early once its packet bytes pass this, keeping every 32-bit
 * descriptor offset valid and one buffer a sensible size for one copy. */
#define MAX_BATCH_BYTES (256u << 20)

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_FILTER,
  PROP_BATCH_SIZE,
};

struct GstPcapSrcState
{
  pcap_t *pcap = nullptr;
  bpf_program filter_program {};
  bool have_filter = false;
  guint linktype = 0;
  guint64 packets_read = 0;     /* packets read from the file so far: frame number */
  bool at_end = false;
  std::string read_error;       /* libpcap error after a partial batch, posted next */
  gpp::BatchBuilder builder;

  ~GstPcapSrcState ()
  {
    if (have_filter)
      pcap_freecode (&filter_program);
    if (pcap)
      pcap_close (pcap);
  }
};

struct _GstPcapSrc
{
  GstPushSrc parent;

  /* settings, under the object lock */
  gchar *location;
  gchar *filter;
  guint batch_size;
  gint linktype;                /* of the open file, -1 when none is open */

  /* streaming state, owned by the streaming thread between start and stop */
  GstPcapSrcState *state;
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_BATCH_CAPS_NAME ", linktype = (int) [ 0, MAX ]"));

#define gst_pcap_src_parent_class parent_class
G_DEFINE_TYPE (GstPcapSrc, gst_pcap_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (pcapsrc, "pcapsrc", GST_RANK_NONE, GST_TYPE_PCAP_SRC);

/* libpcap reports DLT_ values; the batch format and caps carry LINKTYPE_
 * values, which differ only for raw IP (DLT_RAW is 12 or 14 by platform). */
static guint
linktype_from_dlt (int dlt)
{
  if (dlt == DLT_RAW)
    return GPP_LINKTYPE_RAW;
  return (guint) dlt;
}

static gboolean
gst_pcap_src_start (GstBaseSrc * base)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);
  char errbuf[PCAP_ERRBUF_SIZE] = "";
  auto state = std::make_unique < GstPcapSrcState > ();

  GST_OBJECT_LOCK (self);
  std::string location = self->location ? self->location : "";
  std::string filter = self->filter ? self->filter : "";
  GST_OBJECT_UNLOCK (self);

  if (location.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("No capture file given: set the \"location\" property."), (NULL));
    return FALSE;
  }
  state->pcap = pcap_open_offline_with_tstamp_precision (location.c_str (),
      PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (!state->pcap) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not read capture file \"%s\": %s", location.c_str (), errbuf),
        ("pcap_open_offline failed"));
    return FALSE;
  }
  if (!filter.empty ()) {
    if (pcap_compile (state->pcap, &state->filter_program, filter.c_str (), 1,
            PCAP_NETMASK_UNKNOWN) != 0) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
          ("Invalid packet filter \"%s\": %s", filter.c_str (),
              pcap_geterr (state->pcap)), ("pcap_compile failed for \"%s\"",
              location.c_str ()));
      return FALSE;
    }
    state->have_filter = true;
  }
  state->linktype = linktype_from_dlt (pcap_datalink (state->pcap));
  GST_INFO_OBJECT (self, "opened %s, link type %u (%s)", location.c_str (),
      state->linktype, pcap_datalink_val_to_name (pcap_datalink (state->pcap)));
  GST_OBJECT_LOCK (self);
  self->linktype = (gint) state->linktype;
  GST_OBJECT_UNLOCK (self);
  self->state = state.release ();
  return TRUE;
}

static gboolean
gst_pcap_src_stop (GstBaseSrc * base)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);

  GST_OBJECT_LOCK (self);
  self->linktype = -1;
  GST_OBJECT_UNLOCK (self);
  delete self->state;
  self->state = nullptr;
  return TRUE;
}

static GstCaps *
gst_pcap_src_get_caps (GstBaseSrc * base, GstCaps * filter)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);
  GstCaps *caps;

  GST_OBJECT_LOCK (self);
  const gint linktype = self->linktype;
  GST_OBJECT_UNLOCK (self);
  if (linktype >= 0)
    caps = gst_caps_new_simple (GPP_BATCH_CAPS_NAME, "linktype", G_TYPE_INT,
        linktype, NULL);
  else
    caps = gst_pad_get_pad_template_caps (GST_BASE_SRC_PAD (base));

  if (filter) {
    GstCaps *tmp = gst_caps_intersect_full (filter, caps, GST_CAPS_INTERSECT_FIRST);
    gst_caps_unref (caps);
    caps = tmp;
  }
  return caps;
}

static void
gst_pcap_src_post_read_error (GstPcapSrc * self, const std::string & error)
{
  gchar *location;

  GST_OBJECT_LOCK (self);
  location = g_strdup (self->location);
  GST_OBJECT_UNLOCK (self);
  GST_ELEMENT_ERROR (self, STREAM, DECODE,
      ("Capture file \"%s\" is damaged after packet %" G_GUINT64_FORMAT ": %s",
          location, self->state->packets_read, error.c_str ()),
      ("pcap_next_ex failed"));
  g_free (location);
}

static GstFlowReturn
gst_pcap_src_create (GstPushSrc * src, GstBuffer ** out)
{
  GstPcapSrc *self = GST_PCAP_SRC (src);
  GstPcapSrcState *st = self->state;
  GstBaseSrc *base = GST_BASE_SRC (src);

  if (!st->read_error.empty ()) {
    gst_pcap_src_post_read_error (self, st->read_error);
    return GST_FLOW_ERROR;
  }
  if (st->at_end)
    return GST_FLOW_EOS;

  GST_OBJECT_LOCK (self);
  const guint batch_size = self->batch_size;
  GST_OBJECT_UNLOCK (self);

  st->builder.reset (st->linktype);
  const guint64 first_read = st->packets_read;
  while (st->builder.packet_count () < batch_size
      && st->builder.size () < MAX_BATCH_BYTES) {
    struct pcap_pkthdr *hdr;
    const u_char *data;
    int rc = pcap_next_ex (st->pcap, &hdr, &data);
    if (rc == PCAP_ERROR_BREAK) {
      st->at_end = true;
      break;
    }
    if (rc != 1) {
      st->read_error = pcap_geterr (st->pcap);
      break;
    }
    st->packets_read++;
    if (st->have_filter && !pcap_offline_filter (&st->filter_program, hdr, data))
      continue;
    const guint64 ts_ns = (guint64) hdr->ts.tv_sec * GST_SECOND + (guint64) hdr->ts.tv_usec;
    st->builder.add (data, hdr->caplen, hdr->len, ts_ns, st->packets_read);
  }

  if (st->builder.packet_count () == 0) {
    if (!st->read_error.empty ()) {
      gst_pcap_src_post_read_error (self, st->read_error);
      return GST_FLOW_ERROR;
    }
    return GST_FLOW_EOS;
  }

  GstMapInfo map;
  GstBuffer *buf = gpp_src_alloc_batch (base, st->builder.size (), &map);
  if (!buf)
    return GST_FLOW_ERROR;
  st->builder.write (map.data);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_OFFSET (buf) = first_read;
  GST_BUFFER_OFFSET_END (buf) = st->packets_read;
  GST_LOG_OBJECT (self, "batch of %u packets, %" G_GSIZE_FORMAT " bytes",
      st->builder.packet_count (), st->builder.size ());
  *out = buf;
  return GST_FLOW_OK;
}

static void
gst_pcap_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPcapSrc *self = GST_PCAP_SRC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free (self->location);
      self->location = g_value_dup_string (value);
      break;
    case PROP_FILTER:
      g_free (self->filter);
      self->filter = g_value_dup_string (value);
      break;
    case PROP_BATCH_SIZE:
      self->batch_size = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pcap_src_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstPcapSrc *self = GST_PCAP_SRC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_FILTER:
      g_value_set_string (value, self->filter);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_uint (value, self->batch_size);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_pcap_src_finalize (GObject * object)
{
  GstPcapSrc *self = GST_PCAP_SRC (object);

  delete self->state;
  g_free (self->location);
  g_free (self->filter);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_pcap_src_class_init (GstPcapSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);

  gobject_class->set_property = gst_pcap_src_set_property;
  gobject_class->get_property = gst_pcap_src_get_property;
  gobject_class->finalize = gst_pcap_src_finalize;

  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location",
          "Capture file to read: pcap (any timestamp precision, either byte "
          "order) or pcapng", DEFAULT_LOCATION,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property (gobject_class, PROP_FILTER,
      g_param_spec_string ("filter", "Filter",
          "BPF filter in tcpdump syntax (man pcap-filter), e.g. \"tcp port 80\"; "
          "packets it rejects are skipped but still counted in packet numbers",
          DEFAULT_FILTER, (GParamFlags) (G_PARAM_READWRITE |
              G_PARAM_STATIC_STRINGS | GST_PARAM_MUTABLE_READY)));
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size",
          "Packets per batch buffer: larger batches amortise per-batch cost "
          "(GPU launches, copies), smaller ones cut latency; a batch also ends "
          "early at 256 MiB of packet data", 1, MAX_BATCH_SIZE, DEFAULT_BATCH_SIZE,
          (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
              GST_PARAM_MUTABLE_PLAYING)));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Packet capture file source", "Source/Network",
      "Reads pcap/pcapng captures with libpcap into packet batches",
      "gpupacket developers");

  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_pcap_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_pcap_src_stop);
  basesrc_class->get_caps = GST_DEBUG_FUNCPTR (gst_pcap_src_get_caps);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_pcap_src_create);

  GST_DEBUG_CATEGORY_INIT (gst_pcap_src_debug, "pcapsrc", 0,
      "pcap/pcapng capture file source");
}

static void
gst_pcap_src_init (GstPcapSrc * self)
{
  self->location = g_strdup (DEFAULT_LOCATION);
  self->filter = g_strdup (DEFAULT_FILTER);
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->linktype = -1;
  self->state = nullptr;
}
