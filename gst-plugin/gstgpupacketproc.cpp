/**
 * SECTION:element-gpupacketproc
 * @title: gpupacketproc
 *
 * Runs the gpupacket per-packet core over each `application/x-packet-batch`
 * buffer and pushes one `application/x-packet-results` buffer per batch: an
 * array of 128-byte GppResult records (gpupacket/packet-result.h), one per
 * packet, in batch order.  Each results buffer keeps the batch's timestamps
 * and offsets and carries a GstPacketBatchMeta that refers to the batch.
 *
 * The core parses the link layer (Ethernet with 802.1Q/802.1ad tags and MPLS,
 * Linux SLL/SLL2, raw IP, BSD loopback), IPv4 (options, fragments, header
 * checksum), IPv6 with extension-header chains, TCP/UDP/ICMP/ICMPv6, verifies
 * L4 checksums on request and computes the Toeplitz RSS hash.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 pcapsrc location=trace.pcap ! gpupacketproc mode=cpu cpu-threads=0 ! \
 *     packetresultenc format=csv ! filesink location=trace.csv
 * gst-launch-1.0 pcapsrc location=trace.pcap ! gpupacketproc verify-l4-checksum=true symmetric-rss=true ! \
 *     packetresultenc format=jsonl ! fdsink
 * ]|
 */
#include "gstgpupacketproc.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>

#include "cpu_engine.h"
#include "gpupacket/gstpacketbatchmeta.h"
#include "gpupacket/packet-batch.h"
#include "gpupacket/packet-result.h"
#include "latencywindow.h"

GST_DEBUG_CATEGORY_STATIC (gst_gpu_packet_proc_debug);
#define GST_CAT_DEFAULT gst_gpu_packet_proc_debug

#define DEFAULT_MODE GST_GPU_PACKET_PROC_MODE_CPU
#define DEFAULT_SYMMETRIC_RSS FALSE
#define DEFAULT_VERIFY_L4_CHECKSUM FALSE
#define DEFAULT_CPU_THREADS 1
#define MAX_CPU_THREADS 1024

enum
{
  PROP_0,
  PROP_MODE,
  PROP_RSS_KEY,
  PROP_SYMMETRIC_RSS,
  PROP_VERIFY_L4_CHECKSUM,
  PROP_CPU_THREADS,
  PROP_STATS,
};

/* What the streaming thread owns between READY→PAUSED and PAUSED→READY. */
struct GppProcState
{
  std::unique_ptr<gpp::CpuEngine> engine;
  unsigned engine_threads_setting = 0; /* cpu-threads the engine was built for */
};

struct GppProcStats
{
  std::mutex lock;
  guint64 batches = 0;
  guint64 packets = 0;
  guint64 bytes = 0;            /* captured packet bytes processed */
  guint64 malformed = 0;        /* packets with any status flag */
  LatencyWindow latency;        /* chain entry to result push, ns */

  void reset ()
  {
    std::lock_guard<std::mutex> guard (lock);
    batches = packets = bytes = malformed = 0;
    latency.clear ();
  }
};

struct _GstGpuPacketProc
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;

  /* settings, under the object lock */
  GstGpuPacketProcMode mode;
  gpp::CoreConfig config;
  gchar *rss_key_text;          /* as the user wrote it */
  gchar *rss_key_error;         /* why rss_key_text was refused, or NULL */
  guint cpu_threads;

  gint linktype;                /* from the sink caps; streaming thread */
  GppProcState *state;
  GppProcStats *stats;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_BATCH_CAPS_NAME ", linktype = (int) [ 0, MAX ]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_RESULTS_CAPS_NAME ", record-size = (int) 128"));

#define gst_gpu_packet_proc_parent_class parent_class
G_DEFINE_TYPE (GstGpuPacketProc, gst_gpu_packet_proc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (gpupacketproc, "gpupacketproc", GST_RANK_NONE,
    GST_TYPE_GPU_PACKET_PROC);

GType
gst_gpu_packet_proc_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue modes[] = {
    {GST_GPU_PACKET_PROC_MODE_CPU, "The packet core on host threads (see cpu-threads)",
        "cpu"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuPacketProcMode", modes);
    g_once_init_leave (&type, t);
  }
  return type;
}

/* The key as 80 hex digits, the form the rss-key property shows. */
static gchar *
rss_key_to_text (const uint8_t * key)
{
  GString *s = g_string_sized_new (2 * gpp::kRssKeySize);
  for (int i = 0; i < gpp::kRssKeySize; i++)
    g_string_append_printf (s, "%02x", key[i]);
  return g_string_free (s, FALSE);
}

/* Parses 40 bytes of hex, allowing ':', '-' and space between digit pairs
 * (the forms ethtool -x and driver docs print).  Returns NULL on success or a
 * message saying what is wrong. */
static gchar *
rss_key_from_text (const gchar * text, uint8_t * key)
{
  int n = 0;
  const gchar *p = text;

  while (*p) {
    if (*p == ':' || *p == '-' || *p == ' ') {
      p++;
      continue;
    }
    if (!g_ascii_isxdigit (p[0]) || !g_ascii_isxdigit (p[1]))
      return g_strdup_printf ("rss-key \"%s\": expected hex digit pairs at \"%s\"",
          text, p);
    if (n == gpp::kRssKeySize)
      return g_strdup_printf ("rss-key \"%s\": longer than %d bytes", text,
          gpp::kRssKeySize);
    key[n++] = (uint8_t) (g_ascii_xdigit_value (p[0]) * 16 + g_ascii_xdigit_value (p[1]));
    p += 2;
  }
  if (n != gpp::kRssKeySize)
    return g_strdup_printf ("rss-key \"%s\": %d bytes, a Toeplitz key needs %d",
        text, n, gpp::kRssKeySize);
  return NULL;
}

static gboolean
gst_gpu_packet_proc_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (parent);

  if (GST_EVENT_TYPE (event) == GST_EVENT_CAPS) {
    GstCaps *caps;
    gint linktype = -1;

    gst_event_parse_caps (event, &caps);
    gst_structure_get_int (gst_caps_get_structure (caps, 0), "linktype", &linktype);
    if (!gpp::linktype_supported ((uint32_t) linktype)) {
      GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
          ("Link type %d is not supported by gpupacketproc.", linktype),
          ("supported pcap link types: 0 (BSD loopback), 1 (Ethernet), 101 (raw IP), "
              "108 (OpenBSD loopback), 113 (Linux SLL), 228 (IPv4), 229 (IPv6), "
              "276 (Linux SLL2)"));
      gst_event_unref (event);
      return FALSE;
    }
    gst_event_unref (event);
    self->linktype = linktype;
    GstCaps *src_caps = gst_pad_get_pad_template_caps (self->srcpad);
    gboolean ok = gst_pad_push_event (self->srcpad, gst_event_new_caps (src_caps));
    gst_caps_unref (src_caps);
    return ok;
  }
  return gst_pad_event_default (pad, parent, event);
}

/* Rebuilds the engine when cpu-threads changed; streaming thread only. */
static void
gst_gpu_packet_proc_ensure_engine (GstGpuPacketProc * self, guint threads_setting)
{
  GppProcState *st = self->state;
  if (st->engine && st->engine_threads_setting == threads_setting)
    return;
  st->engine = std::make_unique<gpp::CpuEngine> (threads_setting);
  st->engine_threads_setting = threads_setting;
  GST_INFO_OBJECT (self, "cpu engine with %u threads", st->engine->threads ());
}

static GstFlowReturn
gst_gpu_packet_proc_chain (GstPad *, GstObject * parent, GstBuffer * batch)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (parent);
  const auto entry = std::chrono::steady_clock::now ();
  GstMapInfo in;
  char why[256];

  if (!gst_buffer_map (batch, &in, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the packet batch."), (NULL));
    gst_buffer_unref (batch);
    return GST_FLOW_ERROR;
  }
  if (!gpp_batch_validate (in.data, in.size, why, sizeof why)) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Malformed packet batch: %s.", why),
        ("buffer offset %" G_GUINT64_FORMAT ", %" G_GSIZE_FORMAT " bytes",
            GST_BUFFER_OFFSET (batch), in.size));
    gst_buffer_unmap (batch, &in);
    gst_buffer_unref (batch);
    return GST_FLOW_ERROR;
  }
  const auto *header = reinterpret_cast<const GppBatchHeader *> (in.data);
  if (header->linktype != (guint) self->linktype) {
    GST_ELEMENT_ERROR (self, STREAM, FORMAT,
        ("Malformed packet batch: its header says link type %u, the caps say %d.",
            header->linktype, self->linktype), (NULL));
    gst_buffer_unmap (batch, &in);
    gst_buffer_unref (batch);
    return GST_FLOW_ERROR;
  }
  const uint32_t count = header->packet_count;

  GST_OBJECT_LOCK (self);
  const gpp::CoreConfig config = self->config;
  const guint threads_setting = self->cpu_threads;
  GST_OBJECT_UNLOCK (self);
  gst_gpu_packet_proc_ensure_engine (self, threads_setting);

  GstBuffer *results = gst_buffer_new_allocate (NULL, (gsize) count * sizeof (GppResult), NULL);
  GstMapInfo out;
  gst_buffer_map (results, &out, GST_MAP_WRITE);
  auto *records = reinterpret_cast<GppResult *> (out.data);
  self->state->engine->process (in.data, config, records);

  guint64 malformed = 0, bytes = 0;
  const GppPacketDesc *descs = gpp_batch_descs (in.data);
  for (uint32_t i = 0; i < count; i++) {
    malformed += records[i].status != 0;
    bytes += descs[i].caplen;
  }
  gst_buffer_unmap (results, &out);
  gst_buffer_unmap (batch, &in);

  gst_buffer_copy_into (results, batch, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
  gst_buffer_add_packet_batch_meta (results, batch);
  gst_buffer_unref (batch);

  const guint64 latency_ns = std::chrono::duration_cast<std::chrono::nanoseconds> (
      std::chrono::steady_clock::now () - entry).count ();
  {
    std::lock_guard<std::mutex> guard (self->stats->lock);
    self->stats->batches++;
    self->stats->packets += count;
    self->stats->bytes += bytes;
    self->stats->malformed += malformed;
    self->stats->latency.add (latency_ns);
  }
  return gst_pad_push (self->srcpad, results);
}

static GstStateChangeReturn
gst_gpu_packet_proc_change_state (GstElement * element, GstStateChange transition)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (element);

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    GST_OBJECT_LOCK (self);
    gchar *key_error = g_strdup (self->rss_key_error);
    const guint threads_setting = self->cpu_threads;
    GST_OBJECT_UNLOCK (self);
    if (key_error) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("Invalid %s.", key_error), (NULL));
      g_free (key_error);
      return GST_STATE_CHANGE_FAILURE;
    }
    self->stats->reset ();
    self->state = new GppProcState ();
    gst_gpu_packet_proc_ensure_engine (self, threads_setting);
  }

  GstStateChangeReturn ret = GST_ELEMENT_CLASS (parent_class)->change_state (element,
      transition);

  if (transition == GST_STATE_CHANGE_PAUSED_TO_READY) {
    delete self->state;
    self->state = nullptr;
  }
  return ret;
}

static GstStructure *
gst_gpu_packet_proc_make_stats (GstGpuPacketProc * self)
{
  GppProcStats *s = self->stats;
  std::lock_guard<std::mutex> guard (s->lock);
  return gst_structure_new ("application/x-gpupacketproc-stats",
      "batches", G_TYPE_UINT64, s->batches,
      "packets", G_TYPE_UINT64, s->packets,
      "bytes", G_TYPE_UINT64, s->bytes,
      "malformed", G_TYPE_UINT64, s->malformed,
      "latency-p50-ns", G_TYPE_UINT64, s->latency.percentile (50),
      "latency-p99-ns", G_TYPE_UINT64, s->latency.percentile (99),
      "latency-p999-ns", G_TYPE_UINT64, s->latency.percentile (99.9),
      "latency-max-ns", G_TYPE_UINT64, s->latency.percentile (100), NULL);
}

static void
gst_gpu_packet_proc_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (object);

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      self->mode = (GstGpuPacketProcMode) g_value_get_enum (value);
      break;
    case PROP_RSS_KEY:{
      const gchar *text = g_value_get_string (value);
      uint8_t key[gpp::kRssKeySize];
      gchar *error = rss_key_from_text (text ? text : "", key);
      if (error && GST_STATE (self) > GST_STATE_READY) {
        /* Keep hashing with the key in use; the stream goes on. */
        GST_OBJECT_UNLOCK (self);
        GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
            ("Ignoring invalid %s; keeping the current key.", error), (NULL));
        g_free (error);
        return;
      }
      g_free (self->rss_key_error);
      self->rss_key_error = error;
      g_free (self->rss_key_text);
      self->rss_key_text = g_strdup (text);
      if (!error)
        memcpy (self->config.rss_key, key, sizeof key);
      break;
    }
    case PROP_SYMMETRIC_RSS:
      self->config.symmetric_rss = g_value_get_boolean (value);
      break;
    case PROP_VERIFY_L4_CHECKSUM:
      self->config.verify_l4_checksum = g_value_get_boolean (value);
      break;
    case PROP_CPU_THREADS:
      self->cpu_threads = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_packet_proc_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (object);

  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, gst_gpu_packet_proc_make_stats (self));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_MODE:
      g_value_set_enum (value, self->mode);
      break;
    case PROP_RSS_KEY:
      g_value_set_string (value, self->rss_key_text);
      break;
    case PROP_SYMMETRIC_RSS:
      g_value_set_boolean (value, self->config.symmetric_rss);
      break;
    case PROP_VERIFY_L4_CHECKSUM:
      g_value_set_boolean (value, self->config.verify_l4_checksum);
      break;
    case PROP_CPU_THREADS:
      g_value_set_uint (value, self->cpu_threads);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_packet_proc_finalize (GObject * object)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (object);

  delete self->state;
  delete self->stats;
  g_free (self->rss_key_text);
  g_free (self->rss_key_error);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_gpu_packet_proc_class_init (GstGpuPacketProcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const auto rw_playing = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING);

  gobject_class->set_property = gst_gpu_packet_proc_set_property;
  gobject_class->get_property = gst_gpu_packet_proc_get_property;
  gobject_class->finalize = gst_gpu_packet_proc_finalize;

  gchar *default_key = rss_key_to_text (gpp::kDefaultRssKey);
  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "Where the packet core runs; this build offers only what works",
          GST_TYPE_GPU_PACKET_PROC_MODE, DEFAULT_MODE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_RSS_KEY,
      g_param_spec_string ("rss-key", "RSS key",
          "40-byte Toeplitz key as 80 hex digits (':', '-' or ' ' may separate "
          "bytes); the default is the standard Microsoft/Intel verification key "
          "most NICs use. Applies from the next batch", default_key, rw_playing));
  g_free (default_key);
  g_object_class_install_property (gobject_class, PROP_SYMMETRIC_RSS,
      g_param_spec_boolean ("symmetric-rss", "Symmetric RSS",
          "Hash both directions of a flow alike by ordering the (address, port) "
          "endpoints before hashing; off gives the NIC-compatible hash",
          DEFAULT_SYMMETRIC_RSS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_VERIFY_L4_CHECKSUM,
      g_param_spec_boolean ("verify-l4-checksum", "Verify L4 checksums",
          "Verify TCP, UDP, ICMP and ICMPv6 checksums of wholly captured, "
          "unfragmented packets; costs one pass over each payload. Off: "
          "l4_checksum reads 'unverified'", DEFAULT_VERIFY_L4_CHECKSUM, rw_playing));
  g_object_class_install_property (gobject_class, PROP_CPU_THREADS,
      g_param_spec_uint ("cpu-threads", "CPU threads",
          "Host threads for mode=cpu, 0 = one per core; batches under 512 "
          "packets per thread use fewer threads, since handing them out costs more",
          0, MAX_CPU_THREADS, DEFAULT_CPU_THREADS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Since the last READY→PAUSED: batches, packets, bytes (captured), "
          "malformed (packets with any status flag), latency-p50/p99/p999/max-ns "
          "(chain entry to result push, over the last 4096 batches)",
          GST_TYPE_STRUCTURE, (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "GPU packet processor", "Filter/Network",
      "Parses, validates and RSS-hashes batches of packets into per-packet result records",
      "gpupacket developers");
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_gpu_packet_proc_change_state);

  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_MODE, (GstPluginAPIFlags) 0);
  GST_DEBUG_CATEGORY_INIT (gst_gpu_packet_proc_debug, "gpupacketproc", 0,
      "GPU packet processor");
}

static void
gst_gpu_packet_proc_init (GstGpuPacketProc * self)
{
  self->sinkpad = gst_pad_new_from_static_template (&sink_template, "sink");
  gst_pad_set_chain_function (self->sinkpad, GST_DEBUG_FUNCPTR (gst_gpu_packet_proc_chain));
  gst_pad_set_event_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_packet_proc_sink_event));
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->mode = DEFAULT_MODE;
  memset (&self->config, 0, sizeof self->config);
  memcpy (self->config.rss_key, gpp::kDefaultRssKey, sizeof self->config.rss_key);
  self->config.symmetric_rss = DEFAULT_SYMMETRIC_RSS;
  self->config.verify_l4_checksum = DEFAULT_VERIFY_L4_CHECKSUM;
  self->rss_key_text = rss_key_to_text (gpp::kDefaultRssKey);
  self->rss_key_error = NULL;
  self->cpu_threads = DEFAULT_CPU_THREADS;
  self->linktype = -1;
  self->state = nullptr;
  self->stats = new GppProcStats ();
}
