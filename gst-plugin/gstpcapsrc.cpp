/**
 * SECTION:element-pcapsrc
 * @title: pcapsrc
 *
 * Reads packets with libpcap — from a pcap or pcapng capture
 * (#GstPcapSrc:location) or live from a network interface
 * (#GstPcapSrc:device) — and pushes them as `application/x-packet-batch`
 * buffers (see gpupacket/packet-batch.h): up to #GstPcapSrc:batch-size
 * packets per buffer, in one contiguous block.
 *
 * From a file, packets are numbered by their place in the file, like tshark's
 * frame.number, also when #GstPcapSrc:filter skips some of them.  Capture
 * timestamps (ns) travel in the batch descriptors; the buffers themselves
 * carry no PTS, so a synchronising sink does not replay the capture's pace.
 *
 * From an interface, pcapsrc is a live source: it captures only in PLAYING,
 * numbers packets in capture order, and closes a batch when it holds
 * batch-size packets or when #GstPcapSrc:batch-timeout has passed since the
 * first packet of the batch was captured, whichever comes first.  A batch
 * buffer's PTS is the running time at which its first packet was captured;
 * the LATENCY query answers batch-timeout.  Kernel and interface drops
 * (pcap_stats) appear in #GstPcapSrc:stats and in `pcapsrc-stats` element
 * messages every #GstPcapSrc:stats-interval ms.  Capturing needs root or the
 * CAP_NET_RAW and CAP_NET_ADMIN capabilities.
 *
 * With #GstPcapSrc:fanout N above 1, pcapsrc opens N sockets on the
 * interface, joined in one Linux PACKET_FANOUT group
 * (#GstPcapSrc:fanout-mode, #GstPcapSrc:fanout-group), each read by a thread
 * of its own that builds its batches by the same rules, as Suricata's and
 * Zeek's AF_PACKET workers do.  A batch holds the packets of one socket in
 * their capture order; batches of several sockets are pushed in the order
 * they were closed, so with fanout-mode=hash a flow's packets stay in order
 * and different flows interleave batch by batch.  Packet numbers count up
 * in push order.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 pcapsrc location=trace.pcap filter="tcp port 443" ! gpupacketproc ! \
 *     packetresultenc format=csv ! filesink location=trace.csv
 * gst-launch-1.0 pcapsrc device=eth0 batch-size=256 batch-timeout=500 ! \
 *     gpupacketproc acl-rules=fw.rules ! pcapsink verdict=drop location=dropped.pcap
 * gst-launch-1.0 pcapsrc device=eth0 fanout=4 immediate-mode=false ! gpupacketproc ! fakesink
 * ]|
 */
#include "gstpcapsrc.h"
#include "noexcept.h"
#include "pcap_linktype.h"
#include "readyonly.h"

#include <poll.h>
#include <pcap/pcap.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "batch_producer.h"
#include "batchbuffer.h"
#include "capture_reader.h"
#include "livecapture.h"
#include "pcap_fanout.h"
#include "pcap_live.h"

GST_DEBUG_CATEGORY_STATIC (gst_pcap_src_debug);
#define GST_CAT_DEFAULT gst_pcap_src_debug

#define DEFAULT_LOCATION NULL
#define DEFAULT_DEVICE NULL
#define DEFAULT_FILTER NULL
#define DEFAULT_BATCH_SIZE GPP_SRC_DEFAULT_BATCH_SIZE
#define MAX_BATCH_SIZE GPP_SRC_MAX_BATCH_SIZE
#define DEFAULT_BATCH_TIMEOUT GPP_SRC_DEFAULT_BATCH_TIMEOUT
#define MAX_BATCH_TIMEOUT GPP_SRC_MAX_BATCH_TIMEOUT
#define DEFAULT_SNAPLEN gpp::capture::kDefaultSnaplen
#define DEFAULT_PROMISCUOUS gpp::capture::kDefaultPromiscuous
#define DEFAULT_BUFFER_SIZE gpp::capture::kDefaultBufferKib     /* KiB */
#define MAX_BUFFER_SIZE (G_MAXINT / 1024)
#define DEFAULT_IMMEDIATE_MODE gpp::capture::kDefaultImmediate
#define DEFAULT_STATS_INTERVAL GPP_SRC_DEFAULT_STATS_INTERVAL
#define DEFAULT_THREADS 0
#define MAX_THREADS 256
/* Threads that write a file's batches when threads=0: copying packets into
 * a batch is bound by memory bandwidth, which a few cores saturate, and the
 * rest are left to the elements downstream. */
#define AUTO_THREADS_MAX 4
/* Batches read ahead of the one being pushed: the next one is read while
 * downstream works on the current one. */
#define FILE_READ_AHEAD 2
/* A batch ends early once its packet bytes pass this, keeping every 32-bit
 * descriptor offset valid and one buffer a sensible size for one copy. */
#define MAX_BATCH_BYTES (256u << 20)
#define DEFAULT_FANOUT 1
#define DEFAULT_FANOUT_MODE GST_PCAP_SRC_FANOUT_HASH
#define DEFAULT_FANOUT_GROUP 0
/* The fanout property's range: values above kMaxFanout (and 0) are refused
 * at start with a message, rather than by GLib's range check, which only
 * warns and keeps the old value. */
#define MAX_FANOUT_PARAM 65535
#define MAX_FANOUT 64           /* for the blurb: the capture library's kMaxFanout */

static_assert (MAX_FANOUT == gpp::capture::kMaxFanout, "pcapsrc's fanout blurb");

typedef enum
{
  GST_PCAP_SRC_FANOUT_HASH,
  GST_PCAP_SRC_FANOUT_HASH_DEFRAG,
  GST_PCAP_SRC_FANOUT_LB,
  GST_PCAP_SRC_FANOUT_CPU,
  GST_PCAP_SRC_FANOUT_QM,
  GST_PCAP_SRC_FANOUT_ROLLOVER,
} GstPcapSrcFanoutMode;

static gpp::capture::FanoutMode
gst_pcap_src_fanout_mode (GstPcapSrcFanoutMode mode)
{
  switch (mode) {
    case GST_PCAP_SRC_FANOUT_HASH_DEFRAG:
      return gpp::capture::FanoutMode::HashDefrag;
    case GST_PCAP_SRC_FANOUT_LB:
      return gpp::capture::FanoutMode::LoadBalance;
    case GST_PCAP_SRC_FANOUT_CPU:
      return gpp::capture::FanoutMode::Cpu;
    case GST_PCAP_SRC_FANOUT_QM:
      return gpp::capture::FanoutMode::QueueMapping;
    case GST_PCAP_SRC_FANOUT_ROLLOVER:
      return gpp::capture::FanoutMode::Rollover;
    case GST_PCAP_SRC_FANOUT_HASH:
      break;
  }
  return gpp::capture::FanoutMode::Hash;
}

static GType
gst_pcap_src_fanout_mode_get_type (void)
{
  using gpp::capture::fanout_mode_name;
  using gpp::capture::FanoutMode;
  static GType type = 0;
  static const GEnumValue values[] = {
    {GST_PCAP_SRC_FANOUT_HASH, "PACKET_FANOUT_HASH: by flow hash, both directions of a flow "
          "on one socket; packets as on the wire (a datagram's fragments share a socket, "
          "maybe not its flow's)", fanout_mode_name (FanoutMode::Hash)},
    {GST_PCAP_SRC_FANOUT_HASH_DEFRAG, "PACKET_FANOUT_HASH with PACKET_FANOUT_FLAG_DEFRAG "
          "(Suricata's cluster_flow): IPv4 fragments reassembled by the kernel first, so a "
          "fragmented datagram arrives as one packet on its flow's socket, and one whose "
          "fragments do not all arrive is never seen", fanout_mode_name (FanoutMode::HashDefrag)},
    {GST_PCAP_SRC_FANOUT_LB, "PACKET_FANOUT_LB: round robin, packet by packet (a flow's "
          "packets spread over the sockets)", fanout_mode_name (FanoutMode::LoadBalance)},
    {GST_PCAP_SRC_FANOUT_CPU, "PACKET_FANOUT_CPU: by the CPU that received the packet",
        fanout_mode_name (FanoutMode::Cpu)},
    {GST_PCAP_SRC_FANOUT_QM, "PACKET_FANOUT_QM: by the NIC's receive queue (its RSS hash)",
        fanout_mode_name (FanoutMode::QueueMapping)},
    {GST_PCAP_SRC_FANOUT_ROLLOVER, "PACKET_FANOUT_ROLLOVER: fill one socket, then the next "
          "when its ring is full", fanout_mode_name (FanoutMode::Rollover)},
    {0, NULL, NULL},
  };
  if (g_once_init_enter (&type))
    g_once_init_leave (&type, g_enum_register_static ("GstPcapSrcFanoutMode", values));
  return type;
}

enum
{
  PROP_0,
  PROP_LOCATION,
  PROP_DEVICE,
  PROP_FILTER,
  PROP_BATCH_SIZE,
  PROP_BATCH_TIMEOUT,
  PROP_SNAPLEN,
  PROP_PROMISCUOUS,
  PROP_BUFFER_SIZE,
  PROP_IMMEDIATE_MODE,
  PROP_STATS_INTERVAL,
  PROP_THREADS,
  PROP_FANOUT,
  PROP_FANOUT_MODE,
  PROP_FANOUT_GROUP,
  PROP_STATS,
};

struct GstPcapSrcState
{
  /* A capture file: read ahead on the producer's thread. */
  GppBatchRecycler recycler;    /* batches' memory where downstream offers none */
  std::unique_ptr<gpp::capture::CaptureReader> reader;
  std::unique_ptr<gpp::capture::BatchProducer> producer;
  /* A live interface, fanout=1: one socket read on the streaming thread. */
  std::unique_ptr<gpp::capture::PcapSocket> socket;
  gpp::capture::LiveBatch batch;        /* being built; packets_read: frame number */
  gpp::capture::FillControl fill;       /* the element's side of socket->fill () */
  GstFlowReturn fill_stopped = GST_FLOW_FLUSHING;       /* why fill stopped */
  /* When PLAYING last began (ns, wall clock) and how often it has: packets
   * captured before it are not delivered, also those the kernel still holds
   * in an open TPACKET_V3 block or its queue (set by change_state). */
  std::atomic<guint64> playing_since_ns {0}, playing_starts {0};
  GppLiveTimestamp timestamp;   /* live batches' PTS */
  /* fanout>1: sockets read by threads of their own. */
  std::unique_ptr<gpp::capture::PcapFanout> fanout;
  bool live = false;
  guint linktype = 0;
  guint64 packets_read = 0;     /* from a file: records read so far */
  bool at_end = false;
  std::string read_error;       /* libpcap error after a partial batch, posted next */
  std::chrono::steady_clock::time_point next_message;

  ~GstPcapSrcState ()
  {
    producer.reset ();          /* its thread uses the reader */
    fanout.reset ();            /* its threads before the recycler */
  }
};

/* libpcap's counters (pcap_stats), summed over the sockets. */
struct GstPcapSrcKernelStats
{
  guint64 received = 0, dropped = 0, if_dropped = 0;
};

/* Counters for the stats property and messages.  The live sockets are here
 * too, so that pcap_stats never runs on a handle being closed. */
struct GstPcapSrcStats
{
  std::mutex lock;
  gpp::capture::PcapSocket *live_socket = nullptr;
  gpp::capture::PcapFanout *live_fanout = nullptr;
  guint64 packets = 0, batches = 0, bytes = 0;
  guint64 discarded = 0;        /* captured, never pushed (stop, EOS, PAUSED) */
  GstPcapSrcKernelStats kernel; /* the last pcap_stats answers */
  guint sockets = 0;

  void reset ()
  {
    std::lock_guard<std::mutex> guard (lock);
    packets = batches = bytes = discarded = 0;
    kernel = {};
    sockets = 0;
  }
};

struct _GstPcapSrc
{
  GstPushSrc parent;

  /* settings, under the object lock */
  gchar *location;
  gchar *device;
  gchar *filter;
  guint batch_size;
  guint batch_timeout_us;
  guint snaplen;
  gboolean promiscuous;
  guint buffer_size_kib;
  gboolean immediate_mode;
  guint stats_interval_ms;
  guint threads;
  guint fanout;
  GstPcapSrcFanoutMode fanout_mode;
  guint fanout_group;
  gint linktype;                /* of the open capture, -1 when none is open */

  int wakeup_fd;                /* eventfd: unlock () or a settings change ends a wait */
  gint unlocking;               /* atomic: unlock () until unlock_stop () */

  /* streaming state, owned by the streaming thread between start and stop */
  GstPcapSrcState *state;
  GstPcapSrcStats *stats;
};

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_BATCH_CAPS_NAME ", linktype = (int) [ 0, MAX ]"));

#define gst_pcap_src_parent_class parent_class
G_DEFINE_TYPE (GstPcapSrc, gst_pcap_src, GST_TYPE_PUSH_SRC);
GST_ELEMENT_REGISTER_DEFINE (pcapsrc, "pcapsrc", GST_RANK_NONE, GST_TYPE_PCAP_SRC);

/* Wakes a create () waiting for packets. */
static void
gst_pcap_src_wake (GstPcapSrc * self)
{
  if (self->wakeup_fd >= 0) {
    const uint64_t one = 1;
    if (write (self->wakeup_fd, &one, sizeof one) < 0)
      GST_WARNING_OBJECT (self, "eventfd write: %s", g_strerror (errno));
  }
}

static void
gst_pcap_src_drain_wakeups (GstPcapSrc * self)
{
  if (self->wakeup_fd >= 0) {
    uint64_t count;
    if (read (self->wakeup_fd, &count, sizeof count) < 0 && errno != EAGAIN)
      GST_WARNING_OBJECT (self, "eventfd read: %s", g_strerror (errno));
  }
}

static gboolean
gst_pcap_src_open_file (GstPcapSrc * self, GstPcapSrcState * state,
    const std::string & location, const std::string & filter)
{
  using gpp::capture::CaptureReader;
  std::string error;
  CaptureReader::OpenError kind;
  state->reader = CaptureReader::open (location, filter, &error, &kind);
  if (kind == CaptureReader::OpenError::Filter) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid packet filter \"%s\": %s. Check its syntax in man pcap-filter.",
            filter.c_str (), error.c_str ()),
        ("pcap_compile failed for \"%s\"", location.c_str ()));
    return FALSE;
  }
  if (!state->reader) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not read capture file \"%s\": %s", location.c_str (), error.c_str ()),
        ("pcap_open_offline failed"));
    return FALSE;
  }
  state->linktype = state->reader->linktype ();
  GST_INFO_OBJECT (self, "%s: %s compression, records walked %s", location.c_str (),
      gpp::capture::compression_name (state->reader->compression ()),
      state->reader->walking_natively ()? "in place" : "by libpcap");
  return TRUE;
}

/* Posts the error of a live socket or fanout that could not be opened. */
static void
gst_pcap_src_live_error (GstPcapSrc * self, const gpp::capture::PcapLiveError & e)
{
  using Kind = gpp::capture::PcapLiveError::Kind;
  const char *detail = e.detail.c_str ();
  switch (e.kind) {
    case Kind::NoSuchDevice:
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND, ("%s", e.message.c_str ()), ("%s", detail));
      break;
    case Kind::Permission:
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_AUTHORIZED, ("%s", e.message.c_str ()), ("%s",
              detail));
      break;
    case Kind::Filter:
    case Kind::Fanout:
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", e.message.c_str ()), ("%s", detail));
      break;
    case Kind::InterfaceDown:
    case Kind::Other:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ, ("%s", e.message.c_str ()), ("%s", detail));
      break;
  }
}

static gboolean gst_pcap_src_unlock_stop (GstBaseSrc * base);
static gint64 gst_pcap_src_maybe_post_stats (GstPcapSrc * self);
static void gst_pcap_src_begin_playing (GstPcapSrc * self);
static void gst_pcap_src_count_skipped (GstPcapSrc * self);

/* The element's side of a fill on the streaming thread: PAUSED waits for
 * PLAYING (dropping what came meanwhile), the settings are read under the
 * object lock, the stats message is posted when due, and unlock () ends
 * the wait. */
static void
gst_pcap_src_make_fill_control (GstPcapSrc * self, GstPcapSrcState * st)
{
  GstBaseSrc *base = GST_BASE_SRC (self);
  st->fill.proceed =[self, base, st] {
    while (!base->live_running) {
      /* PAUSED: capture stops until PLAYING (or a flush / READY). */
      st->fill_stopped = gst_base_src_wait_playing (base);
      if (st->fill_stopped != GST_FLOW_OK)
        return false;
    }
    /* The first look in this PLAYING (whether this thread waited for it
     * here, or the pause unlocked a fill that the task now resumes). */
    const guint64 starts = st->playing_starts.load (std::memory_order_acquire);
    if (st->batch.follow_start (starts, st->playing_since_ns.load (), *st->socket))
      gst_pcap_src_begin_playing (self);
    gst_pcap_src_count_skipped (self);  /* by the look before: in the stats at once */
    return true;
  };
  st->fill.limits =[self] (uint32_t * packets, uint64_t * timeout_ns) {
    GST_OBJECT_LOCK (self);
    *packets = self->batch_size;
    *timeout_ns = (guint64) self->batch_timeout_us * 1000;
    GST_OBJECT_UNLOCK (self);
  };
  /* (guint64) -1 where no message is due: no limit. */
  st->fill.wait_limit =[self] {
    return (uint64_t) gst_pcap_src_maybe_post_stats (self);
  };
  st->fill.wake_fd = self->wakeup_fd;
  st->fill.on_wake =[self, st] {
    if (g_atomic_int_get (&self->unlocking)) {
      st->fill_stopped = GST_FLOW_FLUSHING;     /* unlock_stop () drains the eventfd */
      return false;
    }
    /* Woken by a setting change or by PLAYING→PAUSED: look again; proceed ()
     * notices the pause and the limits are read again. */
    gst_pcap_src_drain_wakeups (self);
    return true;
  };
}

/* The settings every live socket is opened with. */
static gpp::capture::PcapLiveSettings
gst_pcap_src_live_settings (GstPcapSrc * self, const std::string & device,
    const std::string & filter)
{
  gpp::capture::PcapLiveSettings settings;
  settings.interface = device;
  settings.filter = filter;
  GST_OBJECT_LOCK (self);
  settings.snaplen = self->snaplen;
  settings.promiscuous = self->promiscuous;
  settings.buffer_kib = self->buffer_size_kib;
  settings.immediate = self->immediate_mode;
  settings.timeout_us = self->batch_timeout_us;
  GST_OBJECT_UNLOCK (self);
  return settings;
}

static gboolean
gst_pcap_src_open_device (GstPcapSrc * self, GstPcapSrcState * state,
    const std::string & device, const std::string & filter, guint fanout)
{
  const gpp::capture::PcapLiveSettings settings =
      gst_pcap_src_live_settings (self, device, filter);
  gpp::capture::PcapLiveError error;
  std::string warning;
  state->live = true;
  if (self->wakeup_fd < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Could not create an eventfd: %s",
            g_strerror (errno)), (NULL));
    return FALSE;
  }
  if (fanout == 1) {
    state->socket = gpp::capture::PcapSocket::open (settings, &error, &warning);
  } else {
    gpp::capture::PcapFanoutSettings fan;
    fan.socket = settings;
    fan.sockets = fanout;
    fan.max_batch_bytes = MAX_BATCH_BYTES;
    GST_OBJECT_LOCK (self);
    fan.mode = gst_pcap_src_fanout_mode (self->fanout_mode);
    fan.group = self->fanout_group;
    GST_OBJECT_UNLOCK (self);
    state->fanout = gpp::capture::PcapFanout::open (fan,
        gpp_mapped_batch_allocator (GST_BASE_SRC (self), &state->recycler),
        gpp_mapped_batch_discard, &error, &warning);
  }
  if (!state->socket && !state->fanout) {
    gst_pcap_src_live_error (self, error);
    return FALSE;
  }
  if (!warning.empty ())
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS, ("%s.", warning.c_str ()), (NULL));
  if (state->socket) {
    state->linktype = state->socket->linktype ();
    state->batch.linktype = state->linktype;
    state->batch.builder.reset (state->linktype);
    gst_pcap_src_make_fill_control (self, state);
  } else {
    state->linktype = state->fanout->linktype ();
  }
  /* The stop before this start unlocked without an unlock_stop. */
  gst_pcap_src_unlock_stop (GST_BASE_SRC (self));
  state->next_message = std::chrono::steady_clock::now ();
  GST_INFO_OBJECT (self, "capturing on %s, snaplen %u, %u socket(s), fanout group %u",
      device.c_str (), settings.snaplen, fanout, state->fanout ? state->fanout->group () : 0);
  return TRUE;
}

/* Whether the element downstream takes this capture's link type, asked at
 * start (CAPS query): a refusal then fails READY→PAUSED with an error naming both,
 * before any data flows.  Found only on the first buffer, the error reached
 * gst-launch-1.0 while it was still setting up its main loop, and about one
 * run in seven never ended (its bus handler's quit came before the loop ran). */
static gboolean
gst_pcap_src_downstream_accepts (GstPcapSrc * self, GstPcapSrcState * state,
    const std::string & source, const char *dlt_name)
{
  GstPad *peer = gst_pad_get_peer (GST_BASE_SRC_PAD (self));
  if (!peer)
    return TRUE;                /* not linked: basesrc says so itself */
  GstCaps *caps = gst_caps_new_simple (GPP_BATCH_CAPS_NAME, "linktype", G_TYPE_INT,
      (gint) state->linktype, NULL);
  GstCaps *taken = gst_pad_query_caps (peer, caps);
  const gboolean accepted = !gst_caps_is_empty (taken);
  gst_caps_unref (taken);
  gst_caps_unref (caps);
  if (!accepted) {
    GstElement *element = gst_pad_get_parent_element (peer);
    gchar *name = element ? gst_element_get_name (element) : gst_pad_get_name (peer);
    GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
        ("%s does not accept link type %u (%s) of \"%s\".", name, state->linktype,
            dlt_name && *dlt_name ? dlt_name : "unnamed in libpcap", source.c_str ()),
        ("checked with a CAPS query at start"));
    g_free (name);
    if (element)
      gst_object_unref (element);
  }
  gst_object_unref (peer);
  return accepted;
}

static void gst_pcap_src_make_producer (GstPcapSrc * self, GstPcapSrcState * state);

static gboolean
gst_pcap_src_start_body (GstBaseSrc * base)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);
  auto state = std::make_unique < GstPcapSrcState > ();

  GST_OBJECT_LOCK (self);
  std::string location = self->location ? self->location : "";
  std::string device = self->device ? self->device : "";
  std::string filter = self->filter ? self->filter : "";
  const guint batch_size = self->batch_size;
  const guint fanout = self->fanout;
  GST_OBJECT_UNLOCK (self);

  if (batch_size == 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("batch-size=0: " GPP_BATCH_SIZE_ZERO_REASON "."), (NULL));
    return FALSE;
  }
  if (fanout == 0 || fanout > gpp::capture::kMaxFanout) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("fanout=%u: set 1 (one socket, read by the streaming thread) to %u sockets "
            "(a thread each).", fanout, gpp::capture::kMaxFanout), (NULL));
    return FALSE;
  }
  if (fanout > 1 && !location.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("fanout=%u applies to live capture (device=) only: a capture file (location=%s) "
            "is read by one reader; use threads= to copy its batches with more threads, or "
            "leave fanout at 1.", fanout, location.c_str ()), (NULL));
    return FALSE;
  }

  if (!location.empty () && !device.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Both \"location\" (%s) and \"device\" (%s) are set: set \"location\" to read "
            "a capture file or \"device\" to capture live, not both.", location.c_str (),
            device.c_str ()), (NULL));
    return FALSE;
  }
  if (location.empty () && device.empty ()) {
    GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
        ("Nothing to read: set \"location\" to a capture file or \"device\" to a network "
            "interface."), (NULL));
    return FALSE;
  }
  self->stats->reset ();
  if (!(device.empty ()? gst_pcap_src_open_file (self, state.get (), location, filter) :
          gst_pcap_src_open_device (self, state.get (), device, filter, fanout)))
    return FALSE;

  const char *dlt_name = state->socket ? state->socket->linktype_name () :
      state->fanout ? state->fanout->linktype_name () : state->reader->linktype_name ();
  GST_INFO_OBJECT (self, "opened %s, link type %u (%s)",
      device.empty ()? location.c_str () : device.c_str (), state->linktype,
      dlt_name ? dlt_name : "");
  if (!gst_pcap_src_downstream_accepts (self, state.get (),
          device.empty ()? location : device, dlt_name))
    return FALSE;
  GST_OBJECT_LOCK (self);
  self->linktype = (gint) state->linktype;
  GST_OBJECT_UNLOCK (self);
  if (state->live) {
    std::lock_guard<std::mutex> guard (self->stats->lock);
    self->stats->live_socket = state->socket.get ();
    self->stats->live_fanout = state->fanout.get ();
    self->stats->sockets = fanout;
  } else {
    gst_pcap_src_make_producer (self, state.get ());
  }
  self->state = state.release ();
  return TRUE;
}

/* Refreshes the kernel counters, summed over the sockets; call with the
 * stats lock. */
static void
gst_pcap_src_read_kernel_stats_locked (GstPcapSrcStats * s)
{
  struct pcap_stat ps;
  if (s->live_socket && s->live_socket->stats (&ps))
    s->kernel = { ps.ps_recv, ps.ps_drop, ps.ps_ifdrop };
  if (s->live_fanout) {
    s->kernel = {};
    for (const auto & one : s->live_fanout->stats ()) {
      s->kernel.received += one.received;
      s->kernel.dropped += one.dropped;
      s->kernel.if_dropped += one.if_dropped;
    }
  }
}

static gboolean
gst_pcap_src_stop (GstBaseSrc * base)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);
  GstPcapSrcState *st = self->state;

  if (st && st->producer)
    st->producer->stop ();      /* its queued batches count as discarded */
  if (st && st->fanout)
    st->fanout->stop ();        /* threads ended, what they held or queued counted */
  if (st) {
    std::lock_guard<std::mutex> guard (self->stats->lock);
    /* What the kernel still queues was received but will never be pushed:
     * count it with the unfinished batch, so received = packets + dropped +
     * discarded holds after a stop. */
    gst_pcap_src_read_kernel_stats_locked (self->stats);
    const guint64 queued = st->socket ? st->socket->drain () : 0;
    self->stats->live_socket = nullptr;
    self->stats->live_fanout = nullptr;
    self->stats->discarded += st->batch.packets () + queued;
    if (st->fanout)
      self->stats->discarded += st->fanout->discarded ();
    if (st->batch.packets () || queued)
      GST_INFO_OBJECT (self, "stopped with %u packets in an unfinished batch and %"
          G_GUINT64_FORMAT " queued in the kernel", st->batch.packets (), queued);
  }
  GST_OBJECT_LOCK (self);
  self->linktype = -1;
  GST_OBJECT_UNLOCK (self);
  delete st;
  self->state = nullptr;
  return TRUE;
}

/* Interrupts a wait for packets in create () (flush, READY); the live batch
 * being built is kept for the next create or counted as discarded by stop. */
static gboolean
gst_pcap_src_unlock (GstBaseSrc * base)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);
  g_atomic_int_set (&self->unlocking, 1);
  gst_pcap_src_wake (self);
  if (self->state && self->state->producer)
    self->state->producer->interrupt ();
  if (self->state && self->state->fanout)
    self->state->fanout->interrupt ();
  return TRUE;
}

static gboolean
gst_pcap_src_unlock_stop (GstBaseSrc * base)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);
  g_atomic_int_set (&self->unlocking, 0);
  gst_pcap_src_drain_wakeups (self);
  if (self->state && self->state->producer)
    self->state->producer->resume ();
  if (self->state && self->state->fanout)
    self->state->fanout->resume ();
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

/* The batching latency of a live capture: the first packet of a batch waits
 * at most batch-timeout.  The kernel ring holds packets while downstream is
 * busy, so there is no maximum (as for udpsrc). */
static gboolean
gst_pcap_src_query (GstBaseSrc * base, GstQuery * query)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);

  if (GST_QUERY_TYPE (query) == GST_QUERY_LATENCY && gst_base_src_is_live (base)) {
    GST_OBJECT_LOCK (self);
    const GstClockTime min = (GstClockTime) self->batch_timeout_us * GST_USECOND;
    GST_OBJECT_UNLOCK (self);
    GST_DEBUG_OBJECT (self, "latency: min %" GST_TIME_FORMAT, GST_TIME_ARGS (min));
    gst_query_set_latency (query, TRUE, min, GST_CLOCK_TIME_NONE);
    return TRUE;
  }
  return GST_BASE_SRC_CLASS (parent_class)->query (base, query);
}

static GstStructure *
gst_pcap_src_make_stats (GstPcapSrc * self, bool refresh)
{
  GstPcapSrcStats *s = self->stats;
  std::lock_guard<std::mutex> guard (s->lock);
  if (refresh)
    gst_pcap_src_read_kernel_stats_locked (s);
  /* The fanout threads' own discards, until stop adds them up. */
  const guint64 discarded = s->live_fanout ? s->live_fanout->discarded () : 0;
  return gst_structure_new ("pcapsrc-stats",
      "packets", G_TYPE_UINT64, s->packets,
      "batches", G_TYPE_UINT64, s->batches,
      "bytes", G_TYPE_UINT64, s->bytes,
      "discarded", G_TYPE_UINT64, s->discarded + discarded,
      "received", G_TYPE_UINT64, s->kernel.received,
      "dropped", G_TYPE_UINT64, s->kernel.dropped,
      "if-dropped", G_TYPE_UINT64, s->kernel.if_dropped,
      "sockets", G_TYPE_UINT, s->sockets, NULL);
}

static void
gst_pcap_src_post_read_error (GstPcapSrc * self, const std::string & error)
{
  gchar *location;

  GST_OBJECT_LOCK (self);
  location = g_strdup (self->location);
  GST_OBJECT_UNLOCK (self);
  /* libpcap reads one link type per file: a pcapng whose interfaces differ
   * is valid, only not readable here (said so, not called damaged). */
  if (error.find ("different from the type of the first interface") != std::string::npos)
    GST_ELEMENT_ERROR (self, STREAM, NOT_IMPLEMENTED,
        ("Capture file \"%s\" is not supported: its interfaces have different link "
            "types, and a stream of batches has one (libpcap: %s).", location, error.c_str ()),
        ("split it by interface first, e.g. tshark -r FILE -Y frame.interface_id==N -w PART"));
  else
    GST_ELEMENT_ERROR (self, STREAM, DECODE,
        ("Capture file \"%s\" is damaged after packet %" G_GUINT64_FORMAT ": %s",
            location, self->state->packets_read, error.c_str ()),
        ("pcap_next_ex failed"));
  g_free (location);
}

/* Ends the stream at damage in a file so that the packets read before it
 * are not lost.  The error is posted only once they have reached the sinks:
 * a DRAIN query waits for elements that push from a thread of their own
 * (gpupacketproc's GPU modes), and, being serialized, for the sinks' render
 * of everything before it.  No EOS follows the error, as GstBaseSrc would
 * send on GST_FLOW_ERROR: an application stops the pipeline when it hears of
 * the error, and an EOS racing that stop makes filesink drop the rows it
 * still buffers (its flush at EOS fails while unlocked); without that EOS
 * filesink writes them when it closes.  So the source waits for the stop
 * (unlock) and answers FLUSHING. */
static GstFlowReturn
gst_pcap_src_end_with_read_error (GstPcapSrc * self)
{
  GstQuery *drain = gst_query_new_drain ();
  gst_pad_peer_query (GST_BASE_SRC_PAD (self), drain);
  gst_query_unref (drain);
  gst_pcap_src_post_read_error (self, self->state->read_error);
  while (!g_atomic_int_get (&self->unlocking)) {
    struct pollfd wakeup = { self->wakeup_fd, POLLIN, 0 };
    if (poll (&wakeup, 1, -1) < 0 && errno != EINTR)
      return GST_FLOW_ERROR;    /* the error is posted: no second one */
    if (!g_atomic_int_get (&self->unlocking))
      gst_pcap_src_drain_wakeups (self);    /* a setting change, not a stop */
  }
  return GST_FLOW_FLUSHING;
}

/* The producer that reads the file ahead, its batches written into buffers
 * from the allocator downstream proposed (gpupacketproc's pinned pool). */
static void
gst_pcap_src_make_producer (GstPcapSrc * self, GstPcapSrcState * state)
{
  GST_OBJECT_LOCK (self);
  guint threads = self->threads;
  GST_OBJECT_UNLOCK (self);
  if (threads == 0)
    threads = MIN (AUTO_THREADS_MAX, MAX (1u, g_get_num_processors ()));
  GstBaseSrc *base = GST_BASE_SRC (self);
  GstPcapSrcStats *stats = self->stats;
  auto discard =[stats] (const gpp::capture::ProducedBatch & batch) {
    gpp_mapped_batch_discard (batch.memory);
    std::lock_guard<std::mutex> guard (stats->lock);
    stats->discarded += batch.packets;
  };
  state->producer = std::make_unique<gpp::capture::BatchProducer> (*state->reader,
      gpp_mapped_batch_allocator (base, &state->recycler), discard, threads, FILE_READ_AHEAD);
  state->producer->set_max_batch_bytes (MAX_BATCH_BYTES);
  GST_INFO_OBJECT (self, "reading ahead %d batches, written by %u threads",
      FILE_READ_AHEAD, state->producer->writer_threads ());
}

static void
gst_pcap_src_count_pushed (GstPcapSrc * self, guint packets, guint64 bytes)
{
  std::lock_guard<std::mutex> guard (self->stats->lock);
  self->stats->packets += packets;
  self->stats->batches++;
  self->stats->bytes += bytes;
}

/* The next batch of the file, in file order: read ahead by the producer's
 * thread, which starts with the first batch (the allocator downstream is
 * known from then on). */
static GstFlowReturn
gst_pcap_src_create_from_file (GstPcapSrc * self, GstBuffer ** out)
{
  using gpp::capture::ProducedBatch;
  GstPcapSrcState *st = self->state;
  GST_OBJECT_LOCK (self);
  const guint batch_size = self->batch_size;
  GST_OBJECT_UNLOCK (self);

  if (!st->read_error.empty ())
    return gst_pcap_src_end_with_read_error (self);
  if (st->at_end)
    return GST_FLOW_EOS;
  st->producer->set_batch_size (batch_size);
  st->producer->start ();
  ProducedBatch batch = st->producer->take ();
  switch (batch.kind) {
    case ProducedBatch::Kind::Stopped:
      return GST_FLOW_FLUSHING;
    case ProducedBatch::Kind::NoMemory:
      return GST_FLOW_ERROR;    /* posted by gpp_src_alloc_batch */
    case ProducedBatch::Kind::End:
      st->at_end = true;
      return GST_FLOW_EOS;
    case ProducedBatch::Kind::Error:
      st->read_error = batch.error;
      st->packets_read = batch.last_record;
      return gst_pcap_src_end_with_read_error (self);
    case ProducedBatch::Kind::Batch:
      break;
  }
  GstBuffer *buf = gpp_mapped_batch_finish (batch.memory);
  st->packets_read = batch.last_record;
  GST_BUFFER_OFFSET (buf) = batch.first_record;
  GST_BUFFER_OFFSET_END (buf) = batch.last_record;
  GST_LOG_OBJECT (self, "batch of %u packets, %" G_GSIZE_FORMAT " bytes", batch.packets,
      gst_buffer_get_size (buf));
  gst_pcap_src_count_pushed (self, batch.packets, batch.captured_bytes);
  *out = buf;
  return GST_FLOW_OK;
}

/* Posts the periodic stats message when it is due; returns how long until
 * the next one (-1: never). */
static gint64
gst_pcap_src_maybe_post_stats (GstPcapSrc * self)
{
  GstPcapSrcState *st = self->state;
  GST_OBJECT_LOCK (self);
  const guint interval_ms = self->stats_interval_ms;
  GST_OBJECT_UNLOCK (self);
  if (!interval_ms)
    return -1;
  const auto now = std::chrono::steady_clock::now ();
  if (now >= st->next_message) {
    gst_element_post_message (GST_ELEMENT (self), gst_message_new_element (GST_OBJECT (self),
            gst_pcap_src_make_stats (self, true)));
    st->next_message = now + std::chrono::milliseconds (interval_ms);
  }
  return std::chrono::duration_cast<std::chrono::nanoseconds> (st->next_message - now).count ();
}

/* The stats message, when due (fanout: between the takes). */
static void
gst_pcap_src_post_stats_when_due (GstPcapSrc * self)
{
  gst_pcap_src_maybe_post_stats (self);
}

/* Fills the live batch from the interface: batch-size packets, or what has
 * arrived when batch-timeout has passed since the first packet's capture.
 * Both settings are read again after every wait, so a change while playing
 * applies to the batch being built. */
static GstFlowReturn
gst_pcap_src_fill_from_device (GstPcapSrc * self)
{
  GstPcapSrcState *st = self->state;
  std::string error;
  const gpp::capture::Fill filled = st->socket->fill (st->batch, st->fill, MAX_BATCH_BYTES,
      &error);
  gst_pcap_src_count_skipped (self);
  switch (filled) {
    case gpp::capture::Fill::Ready:
      return GST_FLOW_OK;
    case gpp::capture::Fill::Stopped:
      return st->fill_stopped;
    case gpp::capture::Fill::Failed:
      break;
  }
  gchar *device;
  GST_OBJECT_LOCK (self);
  device = g_strdup (self->device);
  GST_OBJECT_UNLOCK (self);
  GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Capture on \"%s\" failed: %s", device,
          error.c_str ()), ("libpcap"));
  g_free (device);
  return GST_FLOW_ERROR;
}

/* Packets the fill skipped as captured before PLAYING: into `discarded`. */
static void
gst_pcap_src_count_skipped (GstPcapSrc * self)
{
  const guint64 skipped = self->state->batch.take_skipped ();
  if (!skipped)
    return;
  GST_INFO_OBJECT (self, "skipped %" G_GUINT64_FORMAT " packets captured before PLAYING",
      skipped);
  std::lock_guard<std::mutex> guard (self->stats->lock);
  self->stats->discarded += skipped;
}

/* A PLAYING begins (the batch follows it: packets captured before it, the
 * ring's and without immediate mode those of the block still open, are
 * skipped as they are read, by capture time): the batch begun before it is
 * dropped; both are counted as discarded.  As a camera does not deliver
 * what it saw while paused, so no batch carries a stale time.  Nothing
 * captured after the PLAYING is lost to this: the socket is not drained. */
static void
gst_pcap_src_begin_playing (GstPcapSrc * self)
{
  GstPcapSrcState *st = self->state;
  const guint64 dropped = st->batch.packets ();
  if (!dropped)
    return;
  st->batch.drop ();
  GST_INFO_OBJECT (self, "dropped a batch of %" G_GUINT64_FORMAT " packets begun before "
      "PLAYING", dropped);
  std::lock_guard<std::mutex> guard (self->stats->lock);
  self->stats->discarded += dropped;
}

/* fanout>1: the next batch the sockets' threads closed, in the order they
 * closed them (afxdpsrc's create over its queues). */
static GstFlowReturn
gst_pcap_src_create_from_fanout (GstPcapSrc * self, GstBuffer ** out)
{
  gpp::capture::FanoutBatch batch;
  const GstFlowReturn taken = gpp_live_capture_take (self, *self->state->fanout, &batch,
      "Capture", gst_pcap_src_post_stats_when_due);
  if (taken != GST_FLOW_OK)
    return taken;
  GstBuffer *buf = gpp_mapped_batch_finish (batch.memory);
  gpp_live_capture_stamp (GST_ELEMENT (self), self->state->timestamp, buf, batch);
  GST_LOG_OBJECT (self, "batch of %u packets from socket %u", batch.packets, batch.socket);
  gst_pcap_src_count_pushed (self, batch.packets, batch.captured_bytes);
  *out = buf;
  return GST_FLOW_OK;
}

static GstFlowReturn
gst_pcap_src_create_body (GstPushSrc * src, GstBuffer ** out)
{
  GstPcapSrc *self = GST_PCAP_SRC (src);
  GstPcapSrcState *st = self->state;
  GstBaseSrc *base = GST_BASE_SRC (src);

  if (!st->live)
    return gst_pcap_src_create_from_file (self, out);
  if (st->fanout)
    return gst_pcap_src_create_from_fanout (self, out);
  /* A live batch cut short by unlock () is still being built: go on with it. */
  const guint64 first_read = st->batch.packets_read - st->batch.packets ();
  const GstFlowReturn fill = gst_pcap_src_fill_from_device (self);
  if (fill != GST_FLOW_OK)
    return fill;

  GstMapInfo map;
  GstBuffer *buf = gpp_src_alloc_batch (base, st->batch.builder.size (), &map);
  if (!buf)
    return GST_FLOW_ERROR;
  st->batch.builder.write (map.data);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_OFFSET (buf) = first_read;
  GST_BUFFER_OFFSET_END (buf) = st->batch.packets_read;
  gpp_src_timestamp_live (GST_ELEMENT (self), st->timestamp, buf, st->batch.first_ts,
      st->batch.last_ts);
  GST_LOG_OBJECT (self, "batch of %u packets, %" G_GSIZE_FORMAT " bytes",
      st->batch.packets (), st->batch.builder.size ());
  gst_pcap_src_count_pushed (self, st->batch.packets (), st->batch.bytes);
  st->batch.builder.reset (st->linktype);
  st->batch.bytes = 0;
  *out = buf;
  return GST_FLOW_OK;
}

static void
gst_pcap_src_set_property (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstPcapSrc *self = GST_PCAP_SRC (object);

  if (GPP_REFUSE_READY_ONLY (object, pspec))
    return;
  if (prop_id == PROP_BATCH_SIZE && g_value_get_uint (value) == 0
      && GPP_REFUSE_VALUE (object, pspec, GPP_BATCH_SIZE_ZERO_REASON))
    return;
  gboolean latency_changed = FALSE, wake = FALSE;

  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_free (self->location);
      self->location = g_value_dup_string (value);
      break;
    case PROP_DEVICE:
      g_free (self->device);
      self->device = g_value_dup_string (value);
      break;
    case PROP_FILTER:
      g_free (self->filter);
      self->filter = g_value_dup_string (value);
      break;
    case PROP_BATCH_SIZE:
      self->batch_size = g_value_get_uint (value);
      wake = TRUE;
      break;
    case PROP_BATCH_TIMEOUT:
      latency_changed = self->batch_timeout_us != g_value_get_uint (value);
      self->batch_timeout_us = g_value_get_uint (value);
      wake = TRUE;
      break;
    case PROP_SNAPLEN:
      self->snaplen = g_value_get_uint (value);
      break;
    case PROP_PROMISCUOUS:
      self->promiscuous = g_value_get_boolean (value);
      break;
    case PROP_BUFFER_SIZE:
      self->buffer_size_kib = g_value_get_uint (value);
      break;
    case PROP_IMMEDIATE_MODE:
      self->immediate_mode = g_value_get_boolean (value);
      break;
    case PROP_STATS_INTERVAL:
      self->stats_interval_ms = g_value_get_uint (value);
      wake = TRUE;
      break;
    case PROP_THREADS:
      self->threads = g_value_get_uint (value);
      break;
    case PROP_FANOUT:
      self->fanout = g_value_get_uint (value);
      break;
    case PROP_FANOUT_MODE:
      self->fanout_mode = (GstPcapSrcFanoutMode) g_value_get_enum (value);
      break;
    case PROP_FANOUT_GROUP:
      self->fanout_group = g_value_get_uint (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  const gboolean live = self->device != NULL && *self->device;
  GST_OBJECT_UNLOCK (self);
  if (wake) {
    /* A create () waiting for packets picks the new value up now. */
    gst_pcap_src_wake (self);
  }

  if (prop_id == PROP_DEVICE) {
    /* Decided before READY→PAUSED, where a live source skips preroll. */
    gst_base_src_set_live (GST_BASE_SRC (self), live);
    gst_base_src_set_format (GST_BASE_SRC (self), live ? GST_FORMAT_TIME : GST_FORMAT_BYTES);
  }
  if (latency_changed && live)
    gst_element_post_message (GST_ELEMENT (self),
        gst_message_new_latency (GST_OBJECT (self)));
}

static void
gst_pcap_src_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  GstPcapSrc *self = GST_PCAP_SRC (object);

  if (prop_id == PROP_STATS) {
    /* pcap_stats () from this thread, serialised with the streaming
     * thread's own calls by the stats lock (a getsockopt on Linux). */
    g_value_take_boxed (value, gst_pcap_src_make_stats (self, true));
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
    case PROP_LOCATION:
      g_value_set_string (value, self->location);
      break;
    case PROP_DEVICE:
      g_value_set_string (value, self->device);
      break;
    case PROP_FILTER:
      g_value_set_string (value, self->filter);
      break;
    case PROP_BATCH_SIZE:
      g_value_set_uint (value, self->batch_size);
      break;
    case PROP_BATCH_TIMEOUT:
      g_value_set_uint (value, self->batch_timeout_us);
      break;
    case PROP_SNAPLEN:
      g_value_set_uint (value, self->snaplen);
      break;
    case PROP_PROMISCUOUS:
      g_value_set_boolean (value, self->promiscuous);
      break;
    case PROP_BUFFER_SIZE:
      g_value_set_uint (value, self->buffer_size_kib);
      break;
    case PROP_IMMEDIATE_MODE:
      g_value_set_boolean (value, self->immediate_mode);
      break;
    case PROP_STATS_INTERVAL:
      g_value_set_uint (value, self->stats_interval_ms);
      break;
    case PROP_THREADS:
      g_value_set_uint (value, self->threads);
      break;
    case PROP_FANOUT:
      g_value_set_uint (value, self->fanout);
      break;
    case PROP_FANOUT_MODE:
      g_value_set_enum (value, self->fanout_mode);
      break;
    case PROP_FANOUT_GROUP:
      g_value_set_uint (value, self->fanout_group);
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
  delete self->stats;
  if (self->wakeup_fd >= 0)
    close (self->wakeup_fd);
  g_free (self->location);
  g_free (self->device);
  g_free (self->filter);
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* GstBaseSrc does not interrupt create () on PLAYING→PAUSED: wake its wait,
 * so it notices and waits for PLAYING (gst_base_src_wait_playing) instead of
 * finishing a batch whose time would be stale after the pause.  With fanout
 * the sockets' threads stop delivering at once (what they hold and what
 * arrives until PLAYING is discarded), as afxdpsrc's queues do. */
static GstStateChangeReturn
gst_pcap_src_change_state (GstElement * element, GstStateChange transition)
{
  GstPcapSrc *self = GST_PCAP_SRC (element);
  const gboolean pausing = transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED &&
      gst_base_src_is_live (GST_BASE_SRC (element));
  if (pausing)
    gst_pcap_src_wake (self);
  if (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING && self->state) {
    /* Before the base class lets create () run: the cut-off for what the
     * socket holds from before (fanout=1), or the fanout threads delivering
     * from now on, with their cut-off stamped now. */
    self->state->playing_since_ns = gpp::capture::wall_clock_ns ();
    self->state->timestamp.restart ();  /* a new base time, perhaps a new clock */
    self->state->playing_starts.fetch_add (1, std::memory_order_release);
    std::lock_guard<std::mutex> guard (self->stats->lock);
    if (self->stats->live_fanout)
      gpp_live_capture_play (*self->stats->live_fanout);
  }
  const GstStateChangeReturn ret =
      GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
  if (gpp_live_capture_pauses_after (transition, ret)) {   /* fanout>1 only */
    std::lock_guard<std::mutex> guard (self->stats->lock);
    if (self->stats->live_fanout)
      gpp_live_capture_pause (*self->stats->live_fanout);
  }
  return ret;
}


/* pcapsrc's start, run so that no exception leaves it (noexcept.h). */
static gboolean
gst_pcap_src_start (GstBaseSrc * base)
{
  return gpp_no_throw (GST_ELEMENT (base), "pcapsrc's start", (gboolean) FALSE,
      [&] { return gst_pcap_src_start_body (base); });
}


/* pcapsrc's create, run so that no exception leaves it (noexcept.h). */
static GstFlowReturn
gst_pcap_src_create (GstPushSrc * src, GstBuffer ** out)
{
  return gpp_no_throw (GST_ELEMENT (src), "pcapsrc's create", (GstFlowReturn) GST_FLOW_ERROR,
      [&] { return gst_pcap_src_create_body (src, out); });
}

static void
gst_pcap_src_class_init (GstPcapSrcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  GstBaseSrcClass *basesrc_class = GST_BASE_SRC_CLASS (klass);
  GstPushSrcClass *pushsrc_class = GST_PUSH_SRC_CLASS (klass);
  const auto rw_ready = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);
  const auto rw_playing = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING);

  gobject_class->set_property = gst_pcap_src_set_property;
  gobject_class->get_property = gst_pcap_src_get_property;
  gobject_class->finalize = gst_pcap_src_finalize;
  element_class->change_state = gst_pcap_src_change_state;

  g_object_class_install_property (gobject_class, PROP_LOCATION,
      g_param_spec_string ("location", "Location",
          "Capture file to read: pcap (any timestamp precision, either byte "
          "order) or pcapng, stored plainly or compressed with gzip or zstd "
          "(recognised by its first bytes, not its name). Exclusive with device",
          DEFAULT_LOCATION, rw_ready));
  g_object_class_install_property (gobject_class, PROP_DEVICE,
      g_param_spec_string ("device", "Device",
          "Network interface to capture from live (e.g. eth0; needs root or "
          "CAP_NET_RAW + CAP_NET_ADMIN). Makes pcapsrc a live source. Exclusive with "
          "location", DEFAULT_DEVICE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FILTER,
      g_param_spec_string ("filter", "Filter",
          "BPF filter in tcpdump syntax (man pcap-filter), e.g. \"tcp port 80\"; "
          "from a file, packets it rejects are skipped but still counted in packet "
          "numbers; live, it runs in the kernel", DEFAULT_FILTER, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BATCH_SIZE,
      g_param_spec_uint ("batch-size", "Batch size",
          "Packets per batch buffer: larger batches amortise per-batch cost "
          "(GPU launches, copies), smaller ones cut latency; a batch also ends "
          "early at 256 MiB of packet data; 0 is refused", 0, MAX_BATCH_SIZE, DEFAULT_BATCH_SIZE,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_BATCH_TIMEOUT,
      g_param_spec_uint ("batch-timeout", "Batch timeout",
          "Live capture: microseconds from the capture of a batch's first packet "
          "until the batch is pushed with what has arrived, if batch-size packets "
          "have not arrived before; the source's latency. 0 = push whatever is "
          "ready at once. Changing it while playing posts a LATENCY message",
          0, MAX_BATCH_TIMEOUT, DEFAULT_BATCH_TIMEOUT, rw_playing));
  g_object_class_install_property (gobject_class, PROP_SNAPLEN,
      g_param_spec_uint ("snaplen", "Snapshot length",
          "Live capture: bytes kept of each packet (the rest is counted in its "
          "wire length only)", 1, G_MAXINT, DEFAULT_SNAPLEN, rw_ready));
  g_object_class_install_property (gobject_class, PROP_PROMISCUOUS,
      g_param_spec_boolean ("promiscuous", "Promiscuous mode",
          "Live capture: put the interface into promiscuous mode to see traffic not "
          "addressed to this host (needs CAP_NET_ADMIN)", DEFAULT_PROMISCUOUS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_BUFFER_SIZE,
      g_param_spec_uint ("buffer-size", "Kernel buffer size",
          "Live capture: KiB of kernel ring buffer holding packets until pcapsrc "
          "takes them; a full ring drops packets (stats: dropped). In immediate mode "
          "every packet takes a slot sized for the interface MTU, or 64 KiB while the "
          "interface has offloads on (TSO, GSO, GRO, LRO: pcapsrc warns; turn them off "
          "with ethtool -K), so large-MTU interfaces need more. 0 = libpcap's default "
          "(2 MiB)", 0, MAX_BUFFER_SIZE,
          DEFAULT_BUFFER_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_IMMEDIATE_MODE,
      g_param_spec_boolean ("immediate-mode", "Immediate mode",
          "Live capture: the kernel hands over each packet as it arrives (lowest "
          "latency). Off: it hands over blocks of packets, filled or after "
          "batch-timeout rounded up to a millisecond — packs the ring tighter at "
          "high rates, at up to that much more latency", DEFAULT_IMMEDIATE_MODE,
          rw_ready));
  g_object_class_install_property (gobject_class, PROP_STATS_INTERVAL,
      g_param_spec_uint ("stats-interval", "Stats interval",
          "Live capture: milliseconds between \"pcapsrc-stats\" element messages "
          "(the stats fields); 0 = none", 0, G_MAXINT, DEFAULT_STATS_INTERVAL,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_THREADS,
      g_param_spec_uint ("threads", "Threads",
          "Capture files: threads that copy packets into each batch (the file "
          "reading thread is one of them; a batch under 256 KiB of packets takes "
          "one). Copying is bound by memory bandwidth: a few threads reach it, and "
          "more take cores from the elements downstream. 0 = one per core, at "
          "most " G_STRINGIFY (AUTO_THREADS_MAX), 0, MAX_THREADS, DEFAULT_THREADS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FANOUT,
      g_param_spec_uint ("fanout", "Fanout",
          "Live capture: sockets on the interface, joined in one PACKET_FANOUT group, each "
          "read by a thread of its own that builds its own batches (the kernel spreads "
          "packets over them by fanout-mode); each socket has a kernel ring of buffer-size "
          "KiB. 1 = one socket, read by the streaming thread. 0 and more than "
          G_STRINGIFY (MAX_FANOUT) " are refused at start, as is fanout>1 with location",
          0, MAX_FANOUT_PARAM, DEFAULT_FANOUT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FANOUT_MODE,
      g_param_spec_enum ("fanout-mode", "Fanout mode",
          "Live capture with fanout>1: how the kernel spreads packets over the sockets; "
          "hash keeps both directions of a flow on one socket, in order",
          gst_pcap_src_fanout_mode_get_type (), DEFAULT_FANOUT_MODE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FANOUT_GROUP,
      g_param_spec_uint ("fanout-group", "Fanout group",
          "Live capture with fanout>1: the PACKET_FANOUT group id; sockets of other "
          "processes that join the same id (and fanout-mode) share the packets. 0 = a "
          "group of its own, with an id the kernel picks", 0, 65535, DEFAULT_FANOUT_GROUP,
          rw_ready));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Since the last READY→PAUSED: packets, batches, bytes (captured bytes) "
          "pushed; discarded "
          "(captured packets never pushed: a batch cut off by a stop or EOS, the "
          "kernel's queue at a stop, what was captured before PLAYING or while "
          "PAUSED); live capture, "
          "from libpcap's pcap_stats: received (packets the filter accepted, "
          "dropped ones included), dropped (by the kernel: ring buffer full), "
          "if-dropped (by the interface, in promiscuous mode), summed over the "
          "sockets with fanout; sockets",
          GST_TYPE_STRUCTURE, (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_type_mark_as_plugin_api (gst_pcap_src_fanout_mode_get_type (), (GstPluginAPIFlags) 0);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_set_static_metadata (element_class,
      "Packet capture source", "Source/Network",
      "Reads pcap/pcapng captures or captures live from a network interface with "
      "libpcap, into packet batches", "gpupacket developers");

  basesrc_class->start = GST_DEBUG_FUNCPTR (gst_pcap_src_start);
  basesrc_class->stop = GST_DEBUG_FUNCPTR (gst_pcap_src_stop);
  basesrc_class->unlock = GST_DEBUG_FUNCPTR (gst_pcap_src_unlock);
  basesrc_class->unlock_stop = GST_DEBUG_FUNCPTR (gst_pcap_src_unlock_stop);
  basesrc_class->get_caps = GST_DEBUG_FUNCPTR (gst_pcap_src_get_caps);
  basesrc_class->query = GST_DEBUG_FUNCPTR (gst_pcap_src_query);
  pushsrc_class->create = GST_DEBUG_FUNCPTR (gst_pcap_src_create);

  GST_DEBUG_CATEGORY_INIT (gst_pcap_src_debug, "pcapsrc", 0,
      "pcap/pcapng capture file and live interface source");
}

static void
gst_pcap_src_init (GstPcapSrc * self)
{
  self->location = g_strdup (DEFAULT_LOCATION);
  self->device = g_strdup (DEFAULT_DEVICE);
  self->filter = g_strdup (DEFAULT_FILTER);
  self->batch_size = DEFAULT_BATCH_SIZE;
  self->batch_timeout_us = DEFAULT_BATCH_TIMEOUT;
  self->snaplen = DEFAULT_SNAPLEN;
  self->promiscuous = DEFAULT_PROMISCUOUS;
  self->buffer_size_kib = DEFAULT_BUFFER_SIZE;
  self->immediate_mode = DEFAULT_IMMEDIATE_MODE;
  self->stats_interval_ms = DEFAULT_STATS_INTERVAL;
  self->threads = DEFAULT_THREADS;
  self->fanout = DEFAULT_FANOUT;
  self->fanout_mode = DEFAULT_FANOUT_MODE;
  self->fanout_group = DEFAULT_FANOUT_GROUP;
  self->linktype = -1;
  self->state = nullptr;
  self->stats = new GstPcapSrcStats ();
  self->wakeup_fd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
}
