/**
 * SECTION:element-afxdpsrc
 * @title: afxdpsrc
 *
 * Captures live from a network interface with AF_XDP: one XSK socket and one
 * thread per receive queue (#GstAfXdpSrc:queues), behind a small XDP program
 * of its own that redirects those queues to them.  Each thread copies its
 * frames once, from its UMEM into a batch in the memory downstream offers
 * (gpupacketproc's pinned pool), and closes the batch at
 * #GstAfXdpSrc:batch-size packets or #GstAfXdpSrc:batch-timeout after its
 * first packet, as pcapsrc device= does; the batches are
 * `application/x-packet-batch` buffers of link type Ethernet.  With
 * #GstAfXdpSrc:frames-in-place a batch copies no frame: its descriptors
 * point at the frames in the UMEM (registered for the GPU), and the frames
 * go back to the kernel when the buffer is freed.
 *
 * A batch holds the packets of one queue in their arrival order; batches of
 * several queues are pushed in the order they were closed, so packets of
 * one queue (one flow, under the NIC's RSS) stay in order and packets of
 * different queues interleave batch by batch.  Packet numbers count up in
 * push order.  A packet's timestamp is when its queue's thread took it off
 * the ring (the wall clock, read once per burst of up to 64 frames), not a
 * NIC timestamp.  Capturing needs root or CAP_NET_ADMIN, CAP_BPF and
 * CAP_NET_RAW, and a memlock limit that holds the UMEMs.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 afxdpsrc device=eth0 batch-size=4096 ! gpupacketproc mode=persistent ! \
 *     packetresultenc format=csv ! filesink location=live.csv
 * gst-launch-1.0 afxdpsrc device=eth0 queues=0,1 batch-timeout=100 ! gpupacketproc ! fakesink
 * ]|
 */
#include "gstafxdpsrc.h"
#include "noexcept.h"
#include "readyonly.h"

#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "batchbuffer.h"
#include "engine.h"
#include "gpupacket/gstpacketbatchmeta.h"
#include "gpupacket/packet-batch.h"
#include "livecapture.h"
#include "xdp_capture.h"

GST_DEBUG_CATEGORY_STATIC (gst_af_xdp_src_debug);
#define GST_CAT_DEFAULT gst_af_xdp_src_debug

#define DEFAULT_DEVICE NULL
#define DEFAULT_QUEUES "all"
#define DEFAULT_BATCH_SIZE GPP_SRC_DEFAULT_BATCH_SIZE
#define MAX_BATCH_SIZE GPP_SRC_MAX_BATCH_SIZE
#define DEFAULT_BATCH_TIMEOUT GPP_SRC_DEFAULT_BATCH_TIMEOUT
#define MAX_BATCH_TIMEOUT GPP_SRC_MAX_BATCH_TIMEOUT
#define DEFAULT_ZERO_COPY GST_AF_XDP_SRC_ZERO_COPY_AUTO
#define DEFAULT_XDP_MODE GST_AF_XDP_SRC_XDP_MODE_AUTO
#define DEFAULT_BUSY_POLL FALSE
#define DEFAULT_FRAMES_IN_PLACE FALSE
#define DEFAULT_FRAME_SIZE gpp::capture::kDefaultFrameSize
#define DEFAULT_FRAME_COUNT gpp::capture::kDefaultFrameCount
#define DEFAULT_RING_SIZE gpp::capture::kDefaultRingSize
#define DEFAULT_STATS_INTERVAL GPP_SRC_DEFAULT_STATS_INTERVAL

typedef enum
{
  GST_AF_XDP_SRC_ZERO_COPY_AUTO,
  GST_AF_XDP_SRC_ZERO_COPY_ON,
  GST_AF_XDP_SRC_ZERO_COPY_OFF,
} GstAfXdpSrcZeroCopy;

typedef enum
{
  GST_AF_XDP_SRC_XDP_MODE_AUTO,
  GST_AF_XDP_SRC_XDP_MODE_NATIVE,
  GST_AF_XDP_SRC_XDP_MODE_GENERIC,
} GstAfXdpSrcXdpMode;

static GType
gst_af_xdp_src_zero_copy_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_AF_XDP_SRC_ZERO_COPY_AUTO, "Zero-copy where the driver offers it, else copy", "auto"},
    {GST_AF_XDP_SRC_ZERO_COPY_ON, "Zero-copy only (an error where the driver has none)", "on"},
    {GST_AF_XDP_SRC_ZERO_COPY_OFF, "Copy mode: the kernel copies each frame into the UMEM",
        "off"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstAfXdpSrcZeroCopy", values));
  return type;
}

static GType
gst_af_xdp_src_xdp_mode_get_type (void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_AF_XDP_SRC_XDP_MODE_AUTO, "Native (driver) XDP, else generic with a warning", "auto"},
    {GST_AF_XDP_SRC_XDP_MODE_NATIVE, "Native (driver) XDP only", "native"},
    {GST_AF_XDP_SRC_XDP_MODE_GENERIC, "Generic (SKB) XDP: any interface, more cost a packet",
        "generic"},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstAfXdpSrcXdpMode", values));
  return type;
}

enum
{
  PROP_0,
  PROP_DEVICE,
  PROP_QUEUES,
  PROP_BATCH_SIZE,
  PROP_BATCH_TIMEOUT,
  PROP_ZERO_COPY,
  PROP_XDP_MODE,
  PROP_BUSY_POLL,
  PROP_FRAMES_IN_PLACE,
  PROP_FRAME_SIZE,
  PROP_FRAME_COUNT,
  PROP_RING_SIZE,
  PROP_STATS_INTERVAL,
  PROP_STATS,
};

struct GstAfXdpSrcState
{
  GppBatchRecycler recycler;    /* batches' memory where downstream offers none */
  std::unique_ptr<gpp::capture::XdpCapture> capture;
  GppLiveTimestamp timestamp;   /* the batches' PTS */
  std::chrono::steady_clock::time_point next_message;
};

/* Pushed counters; the queue and kernel counters come from the capture. */
struct GstAfXdpSrcStats
{
  std::mutex lock;
  guint64 packets = 0, batches = 0, bytes = 0, discarded = 0;
};

struct _GstAfXdpSrc
{
  GstPushSrc parent;

  /* settings, under the object lock */
  gchar *device;
  gchar *queues;
  guint batch_size;
  guint batch_timeout_us;
  GstAfXdpSrcZeroCopy zero_copy;
  GstAfXdpSrcXdpMode xdp_mode;
  gboolean busy_poll;
  gboolean frames_in_place;
  guint frame_size;
  guint frame_count;
  guint ring_size;
  guint stats_interval_ms;

  /* streaming state: made in start, used by the streaming thread, freed in stop */
  GstAfXdpSrcState *state;
  std::mutex state_lock;        /* state->capture for the stats getter and change_state */
  GstAfXdpSrcStats *stats;
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_BATCH_CAPS_NAME ", linktype = (int) 1"));

#define gst_af_xdp_src_parent_class parent_class
G_DEFINE_TYPE (GstAfXdpSrc, gst_af_xdp_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (afxdpsrc, "afxdpsrc", GST_RANK_NONE, GST_TYPE_AF_XDP_SRC);

static GstStructure *
gst_af_xdp_src_make_stats (GstAfXdpSrc * self)
{
  guint64 rx_dropped = 0, invalid = 0, ring_full = 0, fill_empty = 0, discarded = 0;
  guint queues = 0;
  gboolean zero_copy = FALSE;
  const char *xdp_mode = "none";
  const char *in_place = "off";
  {
    std::lock_guard<std::mutex> guard (self->state_lock);
    if (self->state && self->state->capture) {
      const auto &cap = *self->state->capture;
      for (const auto &q : cap.stats ()) {
        rx_dropped += q.rx_dropped;
        invalid += q.rx_invalid_descs;
        ring_full += q.rx_ring_full;
        fill_empty += q.rx_fill_ring_empty;
      }
      queues = cap.queues ().size ();
      zero_copy = cap.zero_copy ();
      xdp_mode = cap.native ()? "native" : "generic";
      discarded = cap.discarded ();
      in_place = !cap.frames_in_place ()? "off" : cap.device_mapped ()? "device-mapped" : "host";
    }
  }
  std::lock_guard<std::mutex> guard (self->stats->lock);
  return gst_structure_new ("afxdpsrc-stats",
      "packets", G_TYPE_UINT64, self->stats->packets,
      "batches", G_TYPE_UINT64, self->stats->batches,
      "bytes", G_TYPE_UINT64, self->stats->bytes,
      "discarded", G_TYPE_UINT64, self->stats->discarded + discarded,
      /* Frames the kernel lost: a frame lost to an empty fill ring is in
       * rx-dropped already (rx-fill-ring-empty counts times, not frames). */
      "dropped", G_TYPE_UINT64, rx_dropped + ring_full,
      "rx-dropped", G_TYPE_UINT64, rx_dropped,
      "rx-invalid-descs", G_TYPE_UINT64, invalid,
      "rx-ring-full", G_TYPE_UINT64, ring_full,
      "rx-fill-ring-empty", G_TYPE_UINT64, fill_empty,
      "queues", G_TYPE_UINT, queues,
      "zero-copy", G_TYPE_BOOLEAN, zero_copy,
      "xdp-mode", G_TYPE_STRING, xdp_mode,
      "frames-in-place", G_TYPE_STRING, in_place, NULL);
}

static void
gst_af_xdp_src_maybe_post_stats (GstAfXdpSrc * self)
{
  GST_OBJECT_LOCK (self);
  const guint interval_ms = self->stats_interval_ms;
  GST_OBJECT_UNLOCK (self);
  if (!interval_ms)
    return;
  const auto now = std::chrono::steady_clock::now ();
  if (now < self->state->next_message)
    return;
  gst_element_post_message (GST_ELEMENT (self), gst_message_new_element (GST_OBJECT (self),
          gst_af_xdp_src_make_stats (self)));
  self->state->next_message = now + std::chrono::milliseconds (interval_ms);
}

static gboolean
gst_af_xdp_src_start_body (GstBaseSrc * base)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (base);
  gpp::capture::XdpSettings settings;
  std::string queues_text;
  GST_OBJECT_LOCK (self);
  settings.interface = self->device ? self->device : "";
  queues_text = self->queues ? self->queues : "";
  settings.copy_mode = self->zero_copy == GST_AF_XDP_SRC_ZERO_COPY_ON ?
      gpp::capture::XdpCopyMode::ZeroCopy : self->zero_copy == GST_AF_XDP_SRC_ZERO_COPY_OFF ?
      gpp::capture::XdpCopyMode::Copy : gpp::capture::XdpCopyMode::Auto;
  settings.attach_mode = self->xdp_mode == GST_AF_XDP_SRC_XDP_MODE_NATIVE ?
      gpp::capture::XdpAttachMode::Native : self->xdp_mode == GST_AF_XDP_SRC_XDP_MODE_GENERIC ?
      gpp::capture::XdpAttachMode::Generic : gpp::capture::XdpAttachMode::Auto;
  settings.busy_poll = self->busy_poll;
  settings.frames_in_place = self->frames_in_place;
  /* Registered for every GPU, so gpupacketproc's zerocopy and persistent
   * modes read the frames there; without one (or CUDA) the frames stay in
   * plain memory, which the other modes copy from. */
  settings.on_mapped =[self] (void *base, size_t bytes) -> std::shared_ptr < void > {
    std::string why;
    std::unique_ptr < gpp::HostRegistration > reg =
        gpp::gpu_device_count () > 0 ? gpp::register_host_memory (base, bytes, &why) : nullptr;
    if (!reg)
      GST_INFO_OBJECT (self, "frames stay in host memory, not mapped for a GPU: %s",
          why.empty ()? "no GPU" : why.c_str ());
    return std::shared_ptr < void >(std::move (reg));
  };
  settings.frame_size = self->frame_size;
  settings.frame_count = self->frame_count;
  settings.ring_size = self->ring_size;
  const guint batch_size = self->batch_size;
  const guint64 timeout_ns = (guint64) self->batch_timeout_us * 1000;
  GST_OBJECT_UNLOCK (self);

  if (settings.interface.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("No network interface to capture from: set "
            "\"device\" (e.g. device=eth0; \"ip link\" lists them)."), (NULL));
    return FALSE;
  }
  bool all = true;
  std::string error, warning;
  if (!gpp::capture::parse_queue_list (queues_text, &settings.queues, &all, &error)) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s.", error.c_str ()), (NULL));
    return FALSE;
  }
  self->stats->lock.lock ();
  self->stats->packets = self->stats->batches = self->stats->bytes = self->stats->discarded = 0;
  self->stats->lock.unlock ();

  auto *state = new GstAfXdpSrcState ();
  state->capture = gpp::capture::XdpCapture::open (settings,
      gpp_mapped_batch_allocator (base, &state->recycler), gpp_mapped_batch_discard, &error,
      &warning);
  if (!state->capture) {
    delete state;
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", error.c_str ()),
        ("AF_XDP set-up failed"));
    return FALSE;
  }
  if (!warning.empty ())
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS, ("%s.", warning.c_str ()), (NULL));
  state->capture->set_batch_limits (batch_size, timeout_ns);
  GST_INFO_OBJECT (self, "%zu queue(s) on %s, %s XDP, %s", state->capture->queues ().size (),
      settings.interface.c_str (), state->capture->native ()? "native" : "generic",
      state->capture->zero_copy ()? "zero-copy" : "copy mode");
  {
    std::lock_guard<std::mutex> guard (self->state_lock);
    self->state = state;
  }
  return TRUE;
}

static gboolean
gst_af_xdp_src_start (GstBaseSrc * base)
{
  return gpp_no_throw (GST_ELEMENT (base), "afxdpsrc's start", (gboolean) FALSE,
      [&] { return gst_af_xdp_src_start_body (base); });
}

static gboolean
gst_af_xdp_src_stop (GstBaseSrc * base)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (base);
  GstAfXdpSrcState *state;
  {
    std::lock_guard<std::mutex> guard (self->state_lock);
    state = self->state;
    self->state = nullptr;
  }
  if (state) {
    /* The threads end, and what they held or queued is counted, before the
     * sockets and the program go. */
    state->capture->stop ();
    std::lock_guard<std::mutex> guard (self->stats->lock);
    self->stats->discarded += state->capture->discarded ();
  }
  delete state;
  return TRUE;
}

static gboolean
gst_af_xdp_src_unlock (GstBaseSrc * base)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (base);
  std::lock_guard<std::mutex> guard (self->state_lock);
  if (self->state)
    self->state->capture->interrupt ();
  return TRUE;
}

/* GstBaseSrc also calls this on every PAUSED->PLAYING of a live source,
 * with batches of this PLAYING already queued: they stay. */
static gboolean
gst_af_xdp_src_unlock_stop (GstBaseSrc * base)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (base);
  std::lock_guard<std::mutex> guard (self->state_lock);
  if (self->state)
    self->state->capture->resume ();
  return TRUE;
}

/* The batching latency: a batch's first packet waits at most batch-timeout. */
static gboolean
gst_af_xdp_src_query (GstBaseSrc * base, GstQuery * query)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (base);
  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY) {
    GST_OBJECT_LOCK (self);
    const GstClockTime min = (GstClockTime) self->batch_timeout_us * GST_USECOND;
    GST_OBJECT_UNLOCK (self);
    gst_query_set_latency (query, TRUE, min, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
  return GST_BASE_SRC_CLASS (parent_class)->query (base, query);
}

static GstFlowReturn
gst_af_xdp_src_create_body (GstPushSrc * src, GstBuffer ** out)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (src);
  gpp::capture::XdpBatch batch;
  const GstFlowReturn taken = gpp_live_capture_take (self, *self->state->capture, &batch,
      "AF_XDP capture", gst_af_xdp_src_maybe_post_stats);
  if (taken != GST_FLOW_OK)
    return taken;
  GstBuffer *buf;
  if (batch.data) {
    /* Frames in place: the slot's header and descriptors, running to the
     * end of the UMEM; the frames go back when the buffer is freed. */
    GstMemory *mem = gst_memory_new_wrapped (GST_MEMORY_FLAG_READONLY, batch.data, batch.size,
        0, batch.size, batch.memory, gpp::capture::XdpCapture::release_in_place);
    if (batch.device_mapped)
      gpp_memory_mark_device_mapped (mem);
    buf = gst_buffer_new ();
    gst_buffer_append_memory (buf, mem);
  } else {
    buf = gpp_mapped_batch_finish (batch.memory);
    /* Memory taken when the batch opened may be larger than the batch. */
    if (gst_buffer_get_size (buf) != batch.size)
      gst_buffer_set_size (buf, (gssize) batch.size);
  }
  gpp_live_capture_stamp (GST_ELEMENT (self), self->state->timestamp, buf, batch);
  GST_LOG_OBJECT (self, "batch of %u packets from queue %u", batch.packets, batch.queue);
  {
    std::lock_guard<std::mutex> guard (self->stats->lock);
    self->stats->packets += batch.packets;
    self->stats->batches++;
    self->stats->bytes += batch.captured_bytes;
  }
  *out = buf;
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_af_xdp_src_create (GstPushSrc * src, GstBuffer ** out)
{
  return gpp_no_throw (GST_ELEMENT (src), "afxdpsrc's create", (GstFlowReturn) GST_FLOW_ERROR,
      [&] { return gst_af_xdp_src_create_body (src, out); });
}

/* PLAYING→PAUSED: the queues stop delivering at once (what they hold and
 * what arrives until PLAYING is discarded), and create () is woken to wait
 * for PLAYING. */
static GstStateChangeReturn
gst_af_xdp_src_change_state (GstElement * element, GstStateChange transition)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (element);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING) {
    std::lock_guard<std::mutex> guard (self->state_lock);
    if (self->state) {
      self->state->timestamp.restart ();        /* a new base time, perhaps a new clock */
      gpp_live_capture_play (*self->state->capture);
    }
  }
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (gpp_live_capture_pauses_after (transition, ret)) {
    std::lock_guard<std::mutex> guard (self->state_lock);
    if (self->state)
      gpp_live_capture_pause (*self->state->capture);
  }
  return ret;
}

static void
gst_af_xdp_src_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (object);
  if (GPP_REFUSE_READY_ONLY (object, pspec))
    return;
  if (prop_id == PROP_BATCH_SIZE && g_value_get_uint (value) == 0
      && GPP_REFUSE_VALUE (object, pspec, GPP_BATCH_SIZE_ZERO_REASON))
    return;
  gboolean latency_changed = FALSE;
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_DEVICE:
      g_free (self->device);
      self->device = g_value_dup_string (value);
      break;
    case PROP_QUEUES:
      g_free (self->queues);
      self->queues = g_value_dup_string (value);
      break;
    case PROP_BATCH_SIZE:
      self->batch_size = g_value_get_uint (value);
      break;
    case PROP_BATCH_TIMEOUT:
      latency_changed = self->batch_timeout_us != g_value_get_uint (value);
      self->batch_timeout_us = g_value_get_uint (value);
      break;
    case PROP_ZERO_COPY:
      self->zero_copy = (GstAfXdpSrcZeroCopy) g_value_get_enum (value);
      break;
    case PROP_XDP_MODE:
      self->xdp_mode = (GstAfXdpSrcXdpMode) g_value_get_enum (value);
      break;
    case PROP_BUSY_POLL:
      self->busy_poll = g_value_get_boolean (value);
      break;
    case PROP_FRAMES_IN_PLACE:
      self->frames_in_place = g_value_get_boolean (value);
      break;
    case PROP_FRAME_SIZE:
      self->frame_size = g_value_get_uint (value);
      break;
    case PROP_FRAME_COUNT:
      self->frame_count = g_value_get_uint (value);
      break;
    case PROP_RING_SIZE:
      self->ring_size = g_value_get_uint (value);
      break;
    case PROP_STATS_INTERVAL:
      self->stats_interval_ms = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
  if (latency_changed)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
}

static void
gst_af_xdp_src_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (object);
  if (prop_id == PROP_STATS) {
    g_value_take_boxed (value, gst_af_xdp_src_make_stats (self));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_DEVICE:
      g_value_set_string (value, self->device);
      break;
    case PROP_QUEUES:
      g_value_set_string (value, self->queues);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_uint (value, self->batch_size);
      break;
    case PROP_BATCH_TIMEOUT:
      g_value_set_uint (value, self->batch_timeout_us);
      break;
    case PROP_ZERO_COPY:
      g_value_set_enum (value, self->zero_copy);
      break;
    case PROP_XDP_MODE:
      g_value_set_enum (value, self->xdp_mode);
      break;
    case PROP_BUSY_POLL:
      g_value_set_boolean (value, self->busy_poll);
      break;
    case PROP_FRAMES_IN_PLACE:
      g_value_set_boolean (value, self->frames_in_place);
      break;
    case PROP_FRAME_SIZE:
      g_value_set_uint (value, self->frame_size);
      break;
    case PROP_FRAME_COUNT:
      g_value_set_uint (value, self->frame_count);
      break;
    case PROP_RING_SIZE:
      g_value_set_uint (value, self->ring_size);
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint (value, self->stats_interval_ms);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_af_xdp_src_finalize (GObject * object)
{
  GstAfXdpSrc *self = GST_AF_XDP_SRC (object);
  delete self->state;
  delete self->stats;
  self->state_lock.~mutex ();
  g_free (self->device);
  g_free (self->queues);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

static void
gst_af_xdp_src_class_init (GstAfXdpSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);
  const auto rw_ready = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);
  const auto rw_playing = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING);

  gobject_class->set_property = gst_af_xdp_src_set_property;
  gobject_class->get_property = gst_af_xdp_src_get_property;
  gobject_class->finalize = gst_af_xdp_src_finalize;
  element_class->change_state = gst_af_xdp_src_change_state;

  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_string ("device", "Device",
          "Network interface to capture from (e.g. eth0; needs root or CAP_NET_ADMIN, "
          "CAP_BPF and CAP_NET_RAW)", DEFAULT_DEVICE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_QUEUES,
      g_param_spec_string ("queues", "Queues",
          "Receive queues to capture, a socket and a thread each: all (every queue the "
          "interface has), a count N (queues 0 to N-1), or a list of queues and ranges "
          "such as 0,2,4-7 (one queue alone: 3-3); other afxdpsrc of the process may "
          "capture other queues of the same interface", DEFAULT_QUEUES, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size",
          "Packets per batch buffer at most (a batch holds one queue's packets; it also "
          "ends early when its frames are needed to refill the queue's fill ring, at "
          "frame-count - 2 x ring-size frames); 0 is refused", 0, MAX_BATCH_SIZE,
          DEFAULT_BATCH_SIZE, rw_playing));
  g_object_class_install_property (gobject_class, PROP_BATCH_TIMEOUT,
      g_param_spec_uint ("batch-timeout", "Batch timeout",
          "Microseconds from a batch's first packet until the batch is pushed with what "
          "has arrived, if batch-size packets have not arrived before; the source's "
          "latency. 0 = push whatever is ready at once", 0, MAX_BATCH_TIMEOUT,
          DEFAULT_BATCH_TIMEOUT, rw_playing));
  g_object_class_install_property (gobject_class, PROP_ZERO_COPY,
      g_param_spec_enum ("zero-copy", "Zero copy",
          "Whether the NIC writes frames straight into the UMEM (zero-copy, drivers that "
          "support it) or the kernel copies them there (copy mode: any driver, veth "
          "included); stats says which is in use", gst_af_xdp_src_zero_copy_get_type (),
          DEFAULT_ZERO_COPY, rw_ready));
  g_object_class_install_property (gobject_class, PROP_XDP_MODE,
      g_param_spec_enum ("xdp-mode", "XDP mode",
          "How the XDP program that redirects the queues is attached",
          gst_af_xdp_src_xdp_mode_get_type (), DEFAULT_XDP_MODE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BUSY_POLL,
      g_param_spec_boolean ("busy-poll", "Busy poll",
          "Preferred busy polling (SO_PREFER_BUSY_POLL): each queue's thread drives the "
          "driver's receive processing when it waits, instead of interrupts, and while a "
          "batch is being built the queue's thread and the streaming thread spin instead "
          "of sleeping, so the batch leaves at its deadline and is pushed at once (lower "
          "latency, and lower cost a packet at high rates; up to a busy core per queue "
          "and one for the streaming thread)",
          DEFAULT_BUSY_POLL, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FRAMES_IN_PLACE,
      g_param_spec_boolean ("frames-in-place", "Frames in place",
          "Batches point at the frames where the kernel wrote them (each queue's UMEM, "
          "registered with the GPU where there is one) instead of copying them: "
          "gpupacketproc mode=zerocopy or persistent then reads them there, the other "
          "modes copy what they need; a batch's frames go back to the kernel when "
          "downstream frees the batch, so frame-count must cover the batches in flight",
          DEFAULT_FRAMES_IN_PLACE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FRAME_SIZE,
      g_param_spec_uint ("frame-size", "Frame size",
          "Bytes of a UMEM frame (a power of two, 2048 or more): longer packets are "
          "dropped by the kernel and counted in rx-dropped", 2048, 65536,
          DEFAULT_FRAME_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FRAME_COUNT,
      g_param_spec_uint ("frame-count", "Frame count",
          "UMEM frames per queue (a power of two); frame-count x frame-size bytes of "
          "locked memory per queue", 64, 1u << 20, DEFAULT_FRAME_COUNT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_RING_SIZE,
      g_param_spec_uint ("ring-size", "Ring size",
          "Entries of each queue's RX ring (a power of two, at most frame-count / 4; the "
          "fill ring has twice as many); a full RX ring drops packets (rx-ring-full)",
          32, 1u << 18, DEFAULT_RING_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint ("stats-interval", "Stats interval",
          "Milliseconds between \"afxdpsrc-stats\" element messages (the stats fields); "
          "0 = none", 0, G_MAXINT, DEFAULT_STATS_INTERVAL, rw_playing));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Since the last READY→PAUSED: packets, batches, bytes (captured bytes) pushed; "
          "discarded (captured, never pushed: a stop, what arrived while PAUSED); "
          "dropped (frames the kernel lost: rx-dropped + rx-ring-full); "
          "summed over the queues from XDP_STATISTICS: rx-dropped (dropped by the kernel: "
          "a frame too long for frame-size, or no free frame to receive into), "
          "rx-invalid-descs, rx-ring-full (frames dropped because the RX ring was full: the "
          "queue's thread fell behind), rx-fill-ring-empty (times the kernel found the fill "
          "ring empty: its lost frames are in rx-dropped); queues, zero-copy, xdp-mode "
          "(native or generic)",
          GST_TYPE_STRUCTURE, (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "AF_XDP capture source", "Source/Network",
      "Captures live from a network interface with AF_XDP, a socket and a thread per "
      "receive queue, into packet batches", "gpupacket developers");

  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_af_xdp_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_af_xdp_src_stop);
  basesrc_class->unlock = GST_DEBUG_FUNCPTR (gst_af_xdp_src_unlock);
  basesrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_af_xdp_src_unlock_stop);
  basesrc_class->query = GST_DEBUG_FUNCPTR (gst_af_xdp_src_query);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_af_xdp_src_create);

  gst_type_mark_as_plugin_api (gst_af_xdp_src_zero_copy_get_type (), (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (gst_af_xdp_src_xdp_mode_get_type (), (GstPluginAPIFlags) 0);
  GST_DEBUG_CATEGORY_INIT (gst_af_xdp_src_debug, "afxdpsrc", 0, "AF_XDP live source");
}

static void
gst_af_xdp_src_init (GstAfXdpSrc * self)
{
  self->device = g_strdup (DEFAULT_DEVICE);
  self->queues = g_strdup (DEFAULT_QUEUES);
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->batch_timeout_us = DEFAULT_BATCH_TIMEOUT;
  self->zero_copy = DEFAULT_ZERO_COPY;
  self->xdp_mode = DEFAULT_XDP_MODE;
  self->busy_poll = DEFAULT_BUSY_POLL;
  self->frames_in_place = DEFAULT_FRAMES_IN_PLACE;
  self->frame_size = DEFAULT_FRAME_SIZE;
  self->frame_count = DEFAULT_FRAME_COUNT;
  self->ring_size = DEFAULT_RING_SIZE;
  self->stats_interval_ms = DEFAULT_STATS_INTERVAL;
  self->state = nullptr;
  new (&self->state_lock) std::mutex ();
  self->stats = new GstAfXdpSrcStats ();
  gst_base_src_set_live (GST_BASE_SRC (self), TRUE);
  gst_base_src_set_format (GST_BASE_SRC (self), GST_FORMAT_TIME);
}
