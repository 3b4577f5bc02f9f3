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
 * ## Example launch lines
 * |[
 * gst-launch-1.0 pcapsrc location=trace.pcap filter="tcp port 443" ! gpupacketproc ! \
 *     packetresultenc format=csv ! filesink location=trace.csv
 * gst-launch-1.0 pcapsrc device=eth0 batch-size=256 batch-timeout=500 ! \
 *     gpupacketproc acl-rules=fw.rules ! pcapsink verdict=drop location=dropped.pcap
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

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "batch_builder.h"
#include "batch_producer.h"
#include "batchbuffer.h"
#include "capture_reader.h"

GST_DEBUG_CATEGORY_STATIC (gst_pcap_src_debug);
#define GST_CAT_DEFAULT gst_pcap_src_debug

#define DEFAULT_LOCATION NULL
#define DEFAULT_DEVICE NULL
#define DEFAULT_FILTER NULL
#define DEFAULT_BATCH_SIZE 256
#define MAX_BATCH_SIZE (1u << 20)
#define DEFAULT_BATCH_TIMEOUT 1000      /* µs */
#define MAX_BATCH_TIMEOUT 10000000      /* µs */
#define DEFAULT_SNAPLEN 262144          /* tcpdump's default: whole packets */
#define DEFAULT_PROMISCUOUS TRUE
#define DEFAULT_BUFFER_SIZE 16384       /* KiB */
#define MAX_BUFFER_SIZE (G_MAXINT / 1024)
#define DEFAULT_IMMEDIATE_MODE TRUE
#define DEFAULT_STATS_INTERVAL 1000     /* ms */
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
/* Packets taken from libpcap per call while a live batch fills, so the byte
 * limit above is overshot by at most this many packets. */
#define LIVE_DISPATCH_CHUNK 64

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
  PROP_STATS,
};

struct GstPcapSrcState
{
  /* A capture file: read ahead on the producer's thread. */
  GppBatchRecycler recycler;    /* batches' memory where downstream offers none */
  std::unique_ptr<gpp::capture::CaptureReader> reader;
  std::unique_ptr<gpp::capture::BatchProducer> producer;
  /* A live interface: read on the streaming thread. */
  pcap_t *pcap = nullptr;
  bpf_program filter_program {};
  bool have_filter = false;
  bool live = false;
  bool nano = true;             /* libpcap delivers ns (else µs) timestamps */
  guint linktype = 0;
  guint64 packets_read = 0;     /* packets read so far: frame number */
  bool at_end = false;
  std::string read_error;       /* libpcap error after a partial batch, posted next */
  gpp::BatchBuilder builder;
  guint64 builder_bytes = 0;    /* captured bytes of the packets in builder */
  guint64 first_ts = 0, last_ts = 0;  /* capture times (ns) in the live batch */
  guint64 first_arrival = 0;    /* monotonic ns when its first packet was read: bounds the
                                 * deadline if the wall clock steps back */
  std::chrono::steady_clock::time_point next_message;

  ~GstPcapSrcState ()
  {
    producer.reset ();          /* its thread uses the reader */
    if (have_filter)
      pcap_freecode (&filter_program);
    if (pcap)
      pcap_close (pcap);
  }
};

/* Counters for the stats property and messages.  The live pcap handle is
 * here too, so that pcap_stats never runs on a handle being closed. */
struct GstPcapSrcStats
{
  std::mutex lock;
  pcap_t *live_pcap = nullptr;
  guint64 packets = 0, batches = 0, bytes = 0;
  guint64 discarded = 0;        /* captured, never pushed (stop, EOS, PAUSED) */
  struct pcap_stat kernel {};   /* the last pcap_stats answer */

  void reset ()
  {
    std::lock_guard<std::mutex> guard (lock);
    packets = batches = bytes = discarded = 0;
    kernel = {};
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

static guint64
monotonic_ns ()
{
  return std::chrono::duration_cast<std::chrono::nanoseconds> (
      std::chrono::steady_clock::now ().time_since_epoch ()).count ();
}

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
gst_pcap_src_compile_filter (GstPcapSrc * self, GstPcapSrcState * state,
    const std::string & filter, const std::string & source)
{
  if (filter.empty ())
    return TRUE;
  if (pcap_compile (state->pcap, &state->filter_program, filter.c_str (), 1,
          PCAP_NETMASK_UNKNOWN) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Invalid packet filter \"%s\": %s. Check its syntax in man pcap-filter.",
            filter.c_str (), pcap_geterr (state->pcap)),
        ("pcap_compile failed for \"%s\"", source.c_str ()));
    return FALSE;
  }
  state->have_filter = true;
  return TRUE;
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

/* Posts the error for a failed pcap_activate, with what to do about it. */
static void
gst_pcap_src_activate_error (GstPcapSrc * self, pcap_t * pcap, int rc, const char *device)
{
  const char *detail = pcap_geterr (pcap);
  switch (rc) {
    case PCAP_ERROR_NO_SUCH_DEVICE:
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_FOUND,
          ("No network interface \"%s\". List the interfaces with \"ip link\" and "
              "set device to one of them.", device), ("%s", detail));
      break;
    case PCAP_ERROR_PERM_DENIED:
    case PCAP_ERROR_PROMISC_PERM_DENIED:
      GST_ELEMENT_ERROR (self, RESOURCE, NOT_AUTHORIZED,
          ("No permission to capture on \"%s\" (capturing needs CAP_NET_RAW%s). Run as "
              "root, or grant the capabilities to the program, e.g. \"sudo setcap "
              "cap_net_raw,cap_net_admin+eip $(command -v gst-launch-1.0)\".", device,
              rc == PCAP_ERROR_PROMISC_PERM_DENIED ? ", and CAP_NET_ADMIN for "
              "promiscuous mode" : ""), ("%s", detail));
      break;
    case PCAP_ERROR_IFACE_NOT_UP:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Network interface \"%s\" is down. Bring it up with \"ip link set %s up\".",
              device, device), ("%s", detail));
      break;
    default:
      GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
          ("Could not capture on network interface \"%s\": %s", device,
              *detail ? detail : pcap_statustostr (rc)), ("pcap_activate: %s",
              pcap_statustostr (rc)));
      break;
  }
}

static gboolean gst_pcap_src_unlock_stop (GstBaseSrc * base);

static gboolean
gst_pcap_src_open_device (GstPcapSrc * self, GstPcapSrcState * state,
    const std::string & device, const std::string & filter)
{
  char errbuf[PCAP_ERRBUF_SIZE] = "";

  GST_OBJECT_LOCK (self);
  const guint snaplen = self->snaplen;
  const gboolean promiscuous = self->promiscuous;
  const guint buffer_kib = self->buffer_size_kib;
  const gboolean immediate = self->immediate_mode;
  const guint timeout_us = self->batch_timeout_us;
  GST_OBJECT_UNLOCK (self);

  state->live = true;
  state->pcap = pcap_create (device.c_str (), errbuf);
  if (!state->pcap) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Could not capture on network interface \"%s\": %s", device.c_str (), errbuf),
        ("pcap_create failed"));
    return FALSE;
  }
  pcap_set_snaplen (state->pcap, (int) snaplen);
  pcap_set_promisc (state->pcap, promiscuous);
  if (buffer_kib)
    pcap_set_buffer_size (state->pcap, (int) (buffer_kib * 1024));
  pcap_set_immediate_mode (state->pcap, immediate);
  /* Without immediate mode the kernel hands over blocks of packets when a
   * block fills or this timeout passes; keep it within one batch timeout. */
  pcap_set_timeout (state->pcap, (int) MAX (1u, (timeout_us + 999) / 1000));
  state->nano = pcap_set_tstamp_precision (state->pcap, PCAP_TSTAMP_PRECISION_NANO) == 0;

  const int rc = pcap_activate (state->pcap);
  if (rc < 0) {
    gst_pcap_src_activate_error (self, state->pcap, rc, device.c_str ());
    return FALSE;
  }
  if (rc > 0)
    GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
        ("Capturing on \"%s\" with a limitation: %s", device.c_str (),
            pcap_statustostr (rc)), ("%s", pcap_geterr (state->pcap)));
  if (!gst_pcap_src_compile_filter (self, state, filter, device))
    return FALSE;
  if (state->have_filter && pcap_setfilter (state->pcap, &state->filter_program) != 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("Could not install packet filter \"%s\" on \"%s\": %s", filter.c_str (),
            device.c_str (), pcap_geterr (state->pcap)), ("pcap_setfilter failed"));
    return FALSE;
  }
  if (pcap_setnonblock (state->pcap, 1, errbuf) != 0 ||
      pcap_get_selectable_fd (state->pcap) < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, OPEN_READ,
        ("Network interface \"%s\" cannot be waited on without blocking: %s",
            device.c_str (), errbuf), ("pcap_setnonblock / pcap_get_selectable_fd"));
    return FALSE;
  }
  if (self->wakeup_fd < 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, FAILED, ("Could not create an eventfd: %s",
            g_strerror (errno)), (NULL));
    return FALSE;
  }
  /* The stop before this start unlocked without an unlock_stop. */
  gst_pcap_src_unlock_stop (GST_BASE_SRC (self));
  state->next_message = std::chrono::steady_clock::now ();
  GST_INFO_OBJECT (self, "capturing on %s, snaplen %u, %s timestamps", device.c_str (),
      snaplen, state->nano ? "ns" : "µs");
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
  GST_OBJECT_UNLOCK (self);

  if (batch_size == 0) {
    GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS,
        ("batch-size=0: " GPP_BATCH_SIZE_ZERO_REASON "."), (NULL));
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
          gst_pcap_src_open_device (self, state.get (), device, filter)))
    return FALSE;

  const char *dlt_name;
  if (state->live) {
    state->linktype = gpp::linktype_of (state->pcap);
    dlt_name = pcap_datalink_val_to_name (pcap_datalink (state->pcap));
  } else {
    dlt_name = state->reader->linktype_name ();
  }
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
    self->stats->live_pcap = state->pcap;
  } else {
    gst_pcap_src_make_producer (self, state.get ());
  }
  self->state = state.release ();
  return TRUE;
}

/* Refreshes the kernel counters; call with the stats lock. */
static void
gst_pcap_src_read_kernel_stats_locked (GstPcapSrcStats * s)
{
  struct pcap_stat ps;
  if (s->live_pcap && pcap_stats (s->live_pcap, &ps) == 0)
    s->kernel = ps;
}

static guint64 gst_pcap_src_drain_queue (GstPcapSrcState * st);

static gboolean
gst_pcap_src_stop (GstBaseSrc * base)
{
  GstPcapSrc *self = GST_PCAP_SRC (base);
  GstPcapSrcState *st = self->state;

  if (st && st->producer)
    st->producer->stop ();      /* its queued batches count as discarded */
  if (st) {
    std::lock_guard<std::mutex> guard (self->stats->lock);
    gst_pcap_src_read_kernel_stats_locked (self->stats);
    self->stats->live_pcap = nullptr;
    /* What the kernel still queues was received but will never be pushed:
     * count it with the unfinished batch, so received = packets + dropped +
     * discarded holds after a stop. */
    const guint64 queued = st->live && st->pcap ? gst_pcap_src_drain_queue (st) : 0;
    self->stats->discarded += st->builder.packet_count () + queued;
    if (st->builder.packet_count () || queued)
      GST_INFO_OBJECT (self, "stopped with %u packets in an unfinished batch and %"
          G_GUINT64_FORMAT " queued in the kernel", st->builder.packet_count (), queued);
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
  return gst_structure_new ("pcapsrc-stats",
      "packets", G_TYPE_UINT64, s->packets,
      "batches", G_TYPE_UINT64, s->batches,
      "bytes", G_TYPE_UINT64, s->bytes,
      "discarded", G_TYPE_UINT64, s->discarded,
      "received", G_TYPE_UINT64, (guint64) s->kernel.ps_recv,
      "dropped", G_TYPE_UINT64, (guint64) s->kernel.ps_drop,
      "if-dropped", G_TYPE_UINT64, (guint64) s->kernel.ps_ifdrop, NULL);
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
  GppBatchRecycler *recycler = &state->recycler;
  auto allocate =[base, recycler] (size_t size, void **memory) -> uint8_t * {
    GppMappedBatch *mapped = gpp_mapped_batch_new (base, size, recycler);
    *memory = mapped;
    return mapped ? mapped->map.data : nullptr;
  };
  auto discard =[stats] (const gpp::capture::ProducedBatch & batch) {
    gst_buffer_unref (gpp_mapped_batch_finish (batch.memory));
    std::lock_guard<std::mutex> guard (stats->lock);
    stats->discarded += batch.packets;
  };
  state->producer = std::make_unique<gpp::capture::BatchProducer> (*state->reader,
      allocate, discard, threads, FILE_READ_AHEAD);
  state->producer->set_max_batch_bytes (MAX_BATCH_BYTES);
  GST_INFO_OBJECT (self, "reading ahead %d batches, written by %u threads",
      FILE_READ_AHEAD, state->producer->writer_threads ());
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
  {
    std::lock_guard<std::mutex> guard (self->stats->lock);
    self->stats->packets += batch.packets;
    self->stats->batches++;
    self->stats->bytes += batch.captured_bytes;
  }
  *out = buf;
  return GST_FLOW_OK;
}

static void
gst_pcap_src_add_live_packet (u_char * user, const struct pcap_pkthdr *hdr,
    const u_char * data)
{
  auto *st = reinterpret_cast<GstPcapSrcState *> (user);
  const guint64 ts_ns = (guint64) hdr->ts.tv_sec * GST_SECOND +
      (guint64) hdr->ts.tv_usec * (st->nano ? 1 : 1000);
  if (st->builder.packet_count () == 0) {
    st->first_ts = ts_ns;
    st->first_arrival = monotonic_ns ();
  }
  st->last_ts = ts_ns;
  st->packets_read++;
  st->builder.add (data, hdr->caplen, hdr->len, ts_ns, st->packets_read);
  st->builder_bytes += hdr->caplen;
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

/* Nanoseconds until the live batch is due (0: due now): batch-timeout after
 * its first packet's capture, and never later than batch-timeout after that
 * packet was read, whatever the wall clock does meanwhile. */
static guint64
gst_pcap_src_batch_due_in (const GstPcapSrcState * st, guint64 timeout_ns)
{
  const guint64 wall = gpp_capture_clock_ns (), mono = monotonic_ns ();
  const guint64 by_capture = st->first_ts + timeout_ns;
  const guint64 by_arrival = st->first_arrival + timeout_ns;
  const guint64 left_capture = by_capture > wall ? by_capture - wall : 0;
  const guint64 left_arrival = by_arrival > mono ? by_arrival - mono : 0;
  return MIN (left_capture, left_arrival);
}

static void gst_pcap_src_discard_pending (GstPcapSrc * self);

/* Fills the builder from the interface: batch-size packets, or what has
 * arrived when batch-timeout has passed since the first packet's capture.
 * Both settings are read again after every wait, so a change while playing
 * applies to the batch being built. */
static GstFlowReturn
gst_pcap_src_fill_from_device (GstPcapSrc * self)
{
  GstPcapSrcState *st = self->state;

  GstBaseSrc *base = GST_BASE_SRC (self);
  while (st->builder.size () < MAX_BATCH_BYTES) {
    if (!base->live_running) {
      /* PAUSED: capture stops until PLAYING (or a flush / READY). */
      const GstFlowReturn playing = gst_base_src_wait_playing (base);
      if (playing != GST_FLOW_OK)
        return playing;
      gst_pcap_src_discard_pending (self);
      continue;
    }
    GST_OBJECT_LOCK (self);
    const guint batch_size = self->batch_size;
    const guint64 timeout_ns = (guint64) self->batch_timeout_us * 1000;
    GST_OBJECT_UNLOCK (self);
    if (st->builder.packet_count () >= batch_size)
      break;
    const guint64 message_in = (guint64) gst_pcap_src_maybe_post_stats (self);
    const int want = (int) MIN (batch_size - st->builder.packet_count (), LIVE_DISPATCH_CHUNK);
    const int n = pcap_dispatch (st->pcap, want, gst_pcap_src_add_live_packet,
        reinterpret_cast<u_char *> (st));
    if (n < 0) {
      gchar *device;
      GST_OBJECT_LOCK (self);
      device = g_strdup (self->device);
      GST_OBJECT_UNLOCK (self);
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Capture on \"%s\" failed: %s", device,
              pcap_geterr (st->pcap)), ("pcap_dispatch returned %d", n));
      g_free (device);
      return GST_FLOW_ERROR;
    }
    if (n > 0) {
      /* Packets keep coming: the deadline still holds. */
      if (st->builder.packet_count () && gst_pcap_src_batch_due_in (st, timeout_ns) == 0)
        break;
      continue;
    }

    /* Nothing ready: wait for packets, the batch deadline, the next stats
     * message or unlock (), whichever comes first. */
    guint64 wait_ns = message_in;   /* (guint64) -1: no message due */
    if (st->builder.packet_count ()) {
      const guint64 due_in = gst_pcap_src_batch_due_in (st, timeout_ns);
      if (due_in == 0)
        break;
      wait_ns = MIN (wait_ns, due_in);
    }
    struct timespec ts = { (time_t) (wait_ns / GST_SECOND), (long) (wait_ns % GST_SECOND) };
    struct pollfd fds[2] = {
      {pcap_get_selectable_fd (st->pcap), POLLIN, 0},
      {self->wakeup_fd, POLLIN, 0},
    };
    const int rc = ppoll (fds, 2, wait_ns == (guint64) - 1 ? NULL : &ts, NULL);
    if (rc < 0 && errno != EINTR) {
      GST_ELEMENT_ERROR (self, RESOURCE, READ, ("Waiting for packets failed: %s",
              g_strerror (errno)), ("ppoll"));
      return GST_FLOW_ERROR;
    }
    if (fds[1].revents) {
      if (g_atomic_int_get (&self->unlocking))
        return GST_FLOW_FLUSHING;   /* unlock_stop () drains the eventfd */
      /* Woken by a setting change or by PLAYING→PAUSED: loop again; its top
       * re-reads the settings and notices the pause. */
      gst_pcap_src_drain_wakeups (self);
    }
  }
  return GST_FLOW_OK;
}

static void
gst_pcap_src_count_packet (u_char * user, const struct pcap_pkthdr *, const u_char *)
{
  (*reinterpret_cast<guint64 *> (user))++;
}

/* Reads and drops what the kernel has queued (the handle is non-blocking);
 * returns how many packets that was. */
static guint64
gst_pcap_src_drain_queue (GstPcapSrcState * st)
{
  guint64 queued = 0;
  while (pcap_dispatch (st->pcap, -1, gst_pcap_src_count_packet,
          reinterpret_cast<u_char *> (&queued)) > 0) {
  }
  return queued;
}

/* Back in PLAYING: the batch begun before the pause and what the kernel
 * queued meanwhile are dropped (counted as discarded), as a camera does not
 * deliver what it saw while paused, and so no batch carries a stale time. */
static void
gst_pcap_src_discard_pending (GstPcapSrc * self)
{
  GstPcapSrcState *st = self->state;
  guint64 dropped = st->builder.packet_count ();
  st->packets_read -= st->builder.packet_count ();
  st->builder.reset (st->linktype);
  st->builder_bytes = 0;
  dropped += gst_pcap_src_drain_queue (st);
  if (dropped)
    GST_INFO_OBJECT (self, "dropped %" G_GUINT64_FORMAT " packets captured while not playing",
        dropped);
  std::lock_guard<std::mutex> guard (self->stats->lock);
  self->stats->discarded += dropped;
}

static GstFlowReturn
gst_pcap_src_create_body (GstPushSrc * src, GstBuffer ** out)
{
  GstPcapSrc *self = GST_PCAP_SRC (src);
  GstPcapSrcState *st = self->state;
  GstBaseSrc *base = GST_BASE_SRC (src);

  if (!st->live)
    return gst_pcap_src_create_from_file (self, out);
  /* A live batch cut short by unlock () is still in the builder: go on with it. */
  if (st->builder.packet_count () == 0) {
    st->builder.reset (st->linktype);
    st->builder_bytes = 0;
  }
  const guint64 first_read = st->packets_read - st->builder.packet_count ();
  const GstFlowReturn fill = gst_pcap_src_fill_from_device (self);
  if (fill != GST_FLOW_OK)
    return fill;

  GstMapInfo map;
  GstBuffer *buf = gpp_src_alloc_batch (base, st->builder.size (), &map);
  if (!buf)
    return GST_FLOW_ERROR;
  st->builder.write (map.data);
  gst_buffer_unmap (buf, &map);
  GST_BUFFER_OFFSET (buf) = first_read;
  GST_BUFFER_OFFSET_END (buf) = st->packets_read;
  gpp_src_timestamp_live (GST_ELEMENT (self), buf, st->first_ts, st->last_ts);
  GST_LOG_OBJECT (self, "batch of %u packets, %" G_GSIZE_FORMAT " bytes",
      st->builder.packet_count (), st->builder.size ());
  {
    std::lock_guard<std::mutex> guard (self->stats->lock);
    self->stats->packets += st->builder.packet_count ();
    self->stats->batches++;
    self->stats->bytes += st->builder_bytes;
  }
  st->builder.reset (st->linktype);
  st->builder_bytes = 0;
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
 * finishing a batch whose time would be stale after the pause. */
static GstStateChangeReturn
gst_pcap_src_change_state (GstElement * element, GstStateChange transition)
{
  GstPcapSrc *self = GST_PCAP_SRC (element);
  if (transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED &&
      gst_base_src_is_live (GST_BASE_SRC (element))) {
    gst_pcap_src_wake (self);
  }
  return GST_ELEMENT_CLASS (parent_class)->change_state (element, transition);
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
          "every packet takes a slot sized for the interface MTU, so large-MTU "
          "interfaces need more. 0 = libpcap's default (2 MiB)", 0, MAX_BUFFER_SIZE,
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
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          "Since the last READY→PAUSED: packets, batches, bytes (captured bytes) "
          "pushed; discarded "
          "(captured packets never pushed: a batch cut off by a stop or EOS, the "
          "kernel's queue at a stop, what arrived while PAUSED); live capture, "
          "from libpcap's pcap_stats: received (packets the filter accepted, "
          "dropped ones included), dropped (by the kernel: ring buffer full), "
          "if-dropped (by the interface, in promiscuous mode)",
          GST_TYPE_STRUCTURE, (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

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
  self->linktype = -1;
  self->state = nullptr;
  self->stats = new GstPcapSrcStats ();
  self->wakeup_fd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
}
