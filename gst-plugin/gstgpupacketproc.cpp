/**
 * SECTION:element-gpupacketproc
 * @title: gpupacketproc
 *
 * Runs the gpupacket per-packet core over each `application/x-packet-batch`
 * buffer and pushes one `application/x-packet-results` buffer per batch: an
 * array of 128-byte GppResult records (gpupacket/packet-result.h), one per
 * packet, in batch order.  Each results buffer keeps the batch's timestamps
 * and offsets and carries a GstPacketBatchMeta that refers to the batch.
 * With packet-records=false a gap event takes each results buffer's place
 * (for flows=true alone: the records then need not leave the GPU).
 *
 * The core parses the link layer (Ethernet with 802.1Q/802.1ad tags and MPLS,
 * Linux SLL/SLL2, raw IP, BSD loopback), IPv4 (options, fragments, header
 * checksum), IPv6 with extension-header chains, TCP/UDP/ICMP/ICMPv6, verifies
 * L4 checksums on request and computes the Toeplitz RSS hash.  The same
 * source runs on host threads (mode=cpu) or on a CUDA GPU:
 *
 * - streams: copy in, kernel, copy out on one of num-streams CUDA streams,
 *   several batches in flight so neighbours' copies and kernels overlap;
 * - zerocopy: the kernel reads the batch from and writes results to pinned
 *   host memory, no copies;
 * - graph: the copy-kernel-copy sequence as a CUDA graph per stream, built
 *   once, updated and replayed per batch (less launch cost);
 * - persistent: a resident kernel polls a work queue in mapped memory; the
 *   lowest latency, at the price of a GPU and a host core kept busy.
 *
 * Results always leave in input order; serialized events never overtake
 * earlier batches, and EOS waits for every batch in flight.  mode and
 * num-streams may change while playing: work in flight drains first.
 *
 * Pinned memory (pool-size MiB for batches, four times that for results) is
 * allocated on READY→PAUSED where a GPU is usable, and offered upstream in the
 * ALLOCATION query so that pcapsrc writes batches straight into it.  Without
 * a usable GPU the element still works in mode=cpu; asking for a GPU mode
 * there is an error that says why (no fallback: a silent CPU run would
 * misreport performance).
 *
 * Latency: the element adds to the LATENCY query the p99 of its measured
 * batches in the current mode (a conservative 2 ms until 128 batches ran in
 * it) and posts a LATENCY message when mode changes, when a mode is first
 * measured and when its p99 later moves by more than a quarter.  A p99 means
 * about one batch in a hundred arrives later than announced.
 * stats holds capture-to-result latency (capture timestamp of a batch's
 * first packet to the push of its results) for live sources.
 *
 * ## Example launch lines
 * |[
 * gst-launch-1.0 pcapsrc location=trace.pcap ! gpupacketproc mode=cpu cpu-threads=0 ! \
 *     packetresultenc format=csv ! filesink location=trace.csv
 * gst-launch-1.0 pcapsrc location=trace.pcap batch-size=4096 ! gpupacketproc mode=graph ! fakesink
 * gst-launch-1.0 pcapsrc location=trace.pcap batch-size=64 ! gpupacketproc mode=persistent ! fakesink
 * gst-launch-1.0 pcapsrc location=trace.pcap batch-size=4096 ! gpupacketproc mode=zerocopy \
 *     num-streams=32 packet-records=false flows=true name=p p.src ! fakesink \
 *     p.flows ! queue ! packetresultenc format=jsonl ! filesink location=conn.jsonl
 * ]|
 */
#include "gstgpupacketproc.h"
#include "noexcept.h"
#include "readyonly.h"

#include <cstdarg>
#include <chrono>
#include <cstdio>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "acl_rules.h"
#include "batchrunner.h"
#include "cpu_engine.h"
#include "dpi_patterns.h"
#include "engine.h"
#include "gpupacket/packet-batch.h"
#include "gpupacket/packet-result.h"
#include "latencywindow.h"
#include "procsettings.h"
#include "procstats.h"
#include "sharded_engine.h"

GST_DEBUG_CATEGORY (gst_gpu_packet_proc_debug); /* batchrunner.cpp logs to it too */
#define GST_CAT_DEFAULT gst_gpu_packet_proc_debug

#define DEFAULT_MODE GST_GPU_PACKET_PROC_MODE_CPU
#define DEFAULT_SYMMETRIC_RSS FALSE
#define DEFAULT_VERIFY_L4_CHECKSUM FALSE
#define DEFAULT_CPU_THREADS 1
#define MAX_CPU_THREADS 1024
#define DEFAULT_DEVICE_ID (gpp::EngineSettings {}.device_id)
#define DEFAULT_DEVICE_IDS NULL
#define DEFAULT_NUM_STREAMS gpp::kDefaultNumStreams
#define MAX_NUM_STREAMS gpp::kMaxNumStreams
#define DEFAULT_POOL_SIZE gpp::kDefaultPoolSizeMib
#define MAX_POOL_SIZE (64 * 1024)
#define DEFAULT_POOL_MEMORY GST_GPU_PACKET_PROC_MEMORY_DEFAULT
#define DEFAULT_PERSISTENT_BLOCKS (gpp::EngineSettings {}.persistent_blocks)
#define DEFAULT_WAIT ((GstGpuPacketProcWait) gpp::EngineSettings {}.wait)
#define DEFAULT_LOW_LATENCY FALSE
#define DEFAULT_PACKET_RECORDS TRUE
#define DEFAULT_FLOWS FALSE
#define DEFAULT_FLOW_IDLE_TIMEOUT gpp::kDefaultFlowIdleTimeoutS
#define DEFAULT_FLOW_ACTIVE_TIMEOUT gpp::kDefaultFlowActiveTimeoutS
#define DEFAULT_FLOW_MAX gpp::kDefaultMaxFlows
#define DEFAULT_COMMUNITY_ID_SEED gpp::kDefaultCommunityIdSeed
#define DEFAULT_ACL_RULES NULL
#define DEFAULT_DPI_PATTERNS NULL
#define DEFAULT_DEFAULT_ACTION GST_GPU_PACKET_PROC_ACTION_ALLOW
#define DEFAULT_DPI_SELECT GST_GPU_PACKET_PROC_DPI_SELECT_ALL
static_assert ((int) GST_GPU_PACKET_PROC_DPI_SELECT_ALL == (int) gpp::DpiSelect::All &&
    (int) GST_GPU_PACKET_PROC_DPI_SELECT_FAST_PATTERN == (int) gpp::DpiSelect::FastPattern,
    "dpi-select values are gpp::DpiSelect's");
/* Properties whose values the engine takes by a cast. */
static_assert ((int) GST_GPU_PACKET_PROC_WAIT_SPIN == (int) gpp::WaitStrategy::Spin &&
    (int) GST_GPU_PACKET_PROC_WAIT_YIELD == (int) gpp::WaitStrategy::Yield &&
    (int) GST_GPU_PACKET_PROC_WAIT_BLOCK == (int) gpp::WaitStrategy::Block,
    "wait-strategy values are gpp::WaitStrategy's");
static_assert ((int) GST_GPU_PACKET_PROC_MEMORY_DEFAULT == (int) gpp::HostMemoryKind::Default &&
    (int) GST_GPU_PACKET_PROC_MEMORY_WRITE_COMBINED == (int) gpp::HostMemoryKind::WriteCombined &&
    (int) GST_GPU_PACKET_PROC_MEMORY_MAPPED == (int) gpp::HostMemoryKind::Mapped,
    "pool-memory values are gpp::HostMemoryKind's");
static_assert ((int) GST_GPU_PACKET_PROC_ACTION_ALLOW == GPP_ACL_ALLOW &&
    (int) GST_GPU_PACKET_PROC_ACTION_DROP == GPP_ACL_DROP,
    "default-action values are the records' GPP_ACL_* actions");

enum
{
  PROP_0,
  PROP_MODE,
  PROP_RSS_KEY,
  PROP_SYMMETRIC_RSS,
  PROP_VERIFY_L4_CHECKSUM,
  PROP_CPU_THREADS,
  PROP_DEVICE_ID,
  PROP_DEVICE_IDS,
  PROP_NUM_STREAMS,
  PROP_POOL_SIZE,
  PROP_POOL_MEMORY,
  PROP_PERSISTENT_BLOCKS,
  PROP_WAIT_STRATEGY,
  PROP_LOW_LATENCY,
  PROP_PACKET_RECORDS,
  PROP_FLOWS,
  PROP_FLOW_IDLE_TIMEOUT,
  PROP_FLOW_ACTIVE_TIMEOUT,
  PROP_FLOW_MAX,
  PROP_COMMUNITY_ID_SEED,
  PROP_ACL_RULES,
  PROP_DEFAULT_ACTION,
  PROP_DPI_PATTERNS,
  PROP_DPI_SELECT,
  PROP_STATS,
};

/* What the streaming threads own between READY→PAUSED and PAUSED→READY. */
struct _GstGpuPacketProc
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;
  GstPad *flowpad;

  /* settings, under the object lock */
  GstGpuPacketProcMode mode;
  gpp::CoreConfig config;
  gchar *rss_key_text;          /* as the user wrote it */
  gchar *rss_key_error;         /* why rss_key_text was refused, or NULL */
  guint cpu_threads;
  gint device_id;
  gchar *device_ids_text;       /* device-ids as the user wrote it */
  gchar *device_ids_error;      /* why it was refused, or NULL */
  std::vector<int> *device_ids; /* parsed: empty = device-id alone */
  guint num_streams;
  guint pool_size_mib;
  GstGpuPacketProcMemory pool_memory;
  guint persistent_blocks;
  GstGpuPacketProcWait wait_strategy;
  gboolean low_latency;
  gboolean packet_records;
  gboolean flows;
  guint flow_idle_timeout, flow_active_timeout, flow_max, community_id_seed;
  gchar *acl_path;
  gchar *acl_error;             /* why acl_path was refused, or NULL */
  std::shared_ptr<const gpp::AclRuleSet> *acl;  /* current rule set (may hold nullptr) */
  GstGpuPacketProcAction default_action;
  gchar *dpi_path;
  gchar *dpi_error;
  std::shared_ptr<const gpp::DpiPatternSet> *dpi;
  GstGpuPacketProcDpiSelect dpi_select;

  gint linktype;                /* from the sink caps; streaming thread */
  gboolean linktype_refused;    /* the error for unsupported caps is posted (once) */
  GppBatchRunner *state;          /* READY→PAUSED to PAUSED→READY */
  GppProcStats *stats;
};

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE ("sink",
    GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_BATCH_CAPS_NAME ", linktype = (int) [ 0, MAX ]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE ("src",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_RESULTS_CAPS_NAME ", record-size = (int) 128"));

/* Flow records (flows=true); unlinked, they are dropped. */
static GstStaticPadTemplate flows_template = GST_STATIC_PAD_TEMPLATE ("flows",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_FLOW_CAPS_NAME ", record-size = (int) 144"));

#define gst_gpu_packet_proc_parent_class parent_class
G_DEFINE_TYPE (GstGpuPacketProc, gst_gpu_packet_proc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (gpupacketproc, "gpupacketproc", GST_RANK_NONE,
    GST_TYPE_GPU_PACKET_PROC);

/* The element's enum values are gpp::Mode's. */
static_assert ((int) GST_GPU_PACKET_PROC_MODE_CPU == (int) gpp::Mode::Cpu &&
    (int) GST_GPU_PACKET_PROC_MODE_STREAMS == (int) gpp::Mode::Streams &&
    (int) GST_GPU_PACKET_PROC_MODE_ZEROCOPY == (int) gpp::Mode::ZeroCopy &&
    (int) GST_GPU_PACKET_PROC_MODE_GRAPH == (int) gpp::Mode::Graph &&
    (int) GST_GPU_PACKET_PROC_MODE_PERSISTENT == (int) gpp::Mode::Persistent &&
    gpp::kModeCount == 5, "GstGpuPacketProcMode values are gpp::Mode's");

GType
gst_gpu_packet_proc_mode_get_type (void)
{
  static GType type = 0;
  /* From gpp::kModes (gpu/engine.h), the one table of modes. */
  static GEnumValue modes[gpp::kModeCount + 1];

  if (g_once_init_enter (&type)) {
    for (int i = 0; i < gpp::kModeCount; i++)
      modes[i] = {(gint) gpp::kModes[i].mode, gpp::kModes[i].description, gpp::kModes[i].name};
    modes[gpp::kModeCount] = {0, NULL, NULL};
    GType t = g_enum_register_static ("GstGpuPacketProcMode", modes);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_action_get_type (void)
{
  static GType type = 0;
  static const GEnumValue actions[] = {
    {GST_GPU_PACKET_PROC_ACTION_ALLOW, "Allow the packet", "allow"},
    {GST_GPU_PACKET_PROC_ACTION_DROP, "Drop the packet", "drop"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuPacketProcAction", actions);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_dpi_select_get_type (void)
{
  static GType type = 0;
  /* Nicks from gpp::dpi_select_name, the loader's own names. */
  static GEnumValue selects[] = {
    {GST_GPU_PACKET_PROC_DPI_SELECT_ALL, "Every positive content of every rule "
          "(ids number contents)", NULL},
    {GST_GPU_PACKET_PROC_DPI_SELECT_FAST_PATTERN, "One content per rule as an IDS "
          "gives its multi-pattern matcher: the one marked fast_pattern, else the "
          "longest (ids number rules)", NULL},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    for (GEnumValue * v = selects; v->value_name; v++)
      v->value_nick = gpp::dpi_select_name ((gpp::DpiSelect) v->value);
    GType t = g_enum_register_static ("GstGpuPacketProcDpiSelect", selects);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_wait_get_type (void)
{
  static GType type = 0;
  static const GEnumValue waits[] = {
    {GST_GPU_PACKET_PROC_WAIT_SPIN, "Poll without pause: lowest latency, one busy core",
        "spin"},
    {GST_GPU_PACKET_PROC_WAIT_YIELD, "Poll, yielding the core between polls", "yield"},
    {GST_GPU_PACKET_PROC_WAIT_BLOCK, "Sleep until done: frees the core, about doubles "
          "completion latency", "block"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuPacketProcWait", waits);
    g_once_init_leave (&type, t);
  }
  return type;
}

GType
gst_gpu_packet_proc_memory_get_type (void)
{
  static GType type = 0;
  static const GEnumValue kinds[] = {
    {GST_GPU_PACKET_PROC_MEMORY_DEFAULT, "Page-locked, cached (cudaHostAllocPortable)",
        "default"},
    {GST_GPU_PACKET_PROC_MEMORY_WRITE_COMBINED, "Write-combined batches: faster copies to "
          "the GPU, very slow for the CPU to read (bad for mode=cpu)", "write-combined"},
    {GST_GPU_PACKET_PROC_MEMORY_MAPPED, "Page-locked and explicitly mapped "
          "(cudaHostAllocMapped)", "mapped"},
    {0, NULL, NULL}
  };

  if (g_once_init_enter (&type)) {
    GType t = g_enum_register_static ("GstGpuPacketProcMemory", kinds);
    g_once_init_leave (&type, t);
  }
  return type;
}

static gpp::Mode
to_engine_mode (GstGpuPacketProcMode mode)
{
  return static_cast<gpp::Mode> (mode);
}

static void gst_gpu_packet_proc_loop (GstGpuPacketProc * self);

/* Queues a serialized event behind the batches in flight, or sends it now
 * (no streaming state: nothing is in flight). */
static gboolean
gst_gpu_packet_proc_forward_serialized (GstGpuPacketProc * self, GstEvent * event)
{
  return self->state ? self->state->forward_serialized (event) :
      gst_pad_push_event (self->srcpad, event);
}

/* Batches of every link type process_packet() parses (gpp::kParsedLinktypes). */
static GstCaps *
gst_gpu_packet_proc_parsed_caps (void)
{
  GValue list = G_VALUE_INIT, item = G_VALUE_INIT;
  g_value_init (&list, GST_TYPE_LIST);
  g_value_init (&item, G_TYPE_INT);
  for (const auto & l : gpp::kParsedLinktypes) {
    g_value_set_int (&item, (gint) l.linktype);
    gst_value_list_append_value (&list, &item);
  }
  GstCaps *caps = gst_caps_new_empty_simple (GPP_BATCH_CAPS_NAME);
  gst_caps_set_value (caps, "linktype", &list);
  g_value_unset (&item);
  g_value_unset (&list);
  return caps;
}

/* "0 (BSD loopback), 1 (Ethernet), ...": for messages. */
static std::string
gst_gpu_packet_proc_parsed_linktypes_text (void)
{
  std::string text;
  for (const auto & l : gpp::kParsedLinktypes)
    text += (text.empty ()? "" : ", ") + std::to_string (l.linktype) + " (" + l.name + ")";
  return text;
}

static gboolean
gst_gpu_packet_proc_sink_event_body (GstPad * pad, GstObject * parent, GstEvent * event)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (parent);
  GppBatchRunner *st = self->state;

  switch (GST_EVENT_TYPE (event)) {
    case GST_EVENT_CAPS:{
      GstCaps *caps;
      gint linktype = -1;
      gst_event_parse_caps (event, &caps);
      gst_structure_get_int (gst_caps_get_structure (caps, 0), "linktype", &linktype);
      gst_event_unref (event);
      if (!gpp::linktype_supported ((uint32_t) linktype)) {
        /* The sticky CAPS event comes again with every buffer pushed after
         * it: one error, not one per retry (each made gst-launch start its
         * shutdown again, and at times hang). */
        if (!self->linktype_refused)
          GST_ELEMENT_ERROR (self, STREAM, WRONG_TYPE,
              ("Link type %d is not supported by gpupacketproc.", linktype),
              ("supported pcap link types: %s",
                  gst_gpu_packet_proc_parsed_linktypes_text ().c_str ()));
        self->linktype_refused = TRUE;
        return FALSE;
      }
      self->linktype = linktype;
      self->linktype_refused = FALSE;
      GstCaps *src_caps = gst_pad_get_pad_template_caps (self->srcpad);
      gboolean ok = gst_gpu_packet_proc_forward_serialized (self, gst_event_new_caps (src_caps));
      gst_caps_unref (src_caps);
      return ok;
    }
    case GST_EVENT_FLUSH_START:
      if (st)
        st->set_flushing ();
      gst_pad_push_event (self->flowpad, gst_event_ref (event));
      return gst_pad_push_event (self->srcpad, event);
    case GST_EVENT_FLUSH_STOP:
      if (st) {
        /* The task retires what the GPU still holds, discarding it. */
        st->results.stop_flushing ();
        st->idle_engine ();
        st->flushed ();         /* nothing in flight: the task is paused */
        gst_pad_start_task (self->srcpad, (GstTaskFunction) gst_gpu_packet_proc_loop, self,
            NULL);
      }
      gst_pad_push_event (self->flowpad, gst_event_ref (event));
      return gst_pad_push_event (self->srcpad, event);
    case GST_EVENT_EOS:
      /* EOS leaves after every batch in flight; then the resident kernel,
       * if any, stops (the next batch starts it again). */
      if (st && !st->drain ()) {
        gst_event_unref (event);
        return FALSE;
      }
      if (st) {
        st->idle_engine ();
        /* Every open flow ends with the stream, then EOS follows its records. */
        st->flows.finish ();
      }
      gst_pad_push_event (self->flowpad, gst_event_ref (event));
      return gst_pad_push_event (self->srcpad, event);
    default:
      if (GST_EVENT_IS_SERIALIZED (event))
        return gst_gpu_packet_proc_forward_serialized (self, event);
      return gst_pad_event_default (pad, parent, event);
  }
}

static gboolean
gst_gpu_packet_proc_sink_query_body (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (parent);
  GppBatchRunner *st = self->state;

  if (GST_QUERY_TYPE (query) == GST_QUERY_CAPS) {
    /* The link types the core parses, so a source can tell before it starts
     * (pcapsrc asks at start).  ACCEPT_CAPS still takes any link type (the
     * pad accepts by its template): a CAPS event of another one reaches the
     * event handler, which names the problem. */
    GstCaps *filter, *caps = gst_gpu_packet_proc_parsed_caps ();
    gst_query_parse_caps (query, &filter);
    if (filter) {
      GstCaps *both = gst_caps_intersect_full (filter, caps, GST_CAPS_INTERSECT_FIRST);
      gst_caps_unref (caps);
      caps = both;
    }
    gst_query_set_caps_result (query, caps);
    gst_caps_unref (caps);
    return TRUE;
  }
  if (GST_QUERY_TYPE (query) == GST_QUERY_ALLOCATION) {
    if (st && st->dispatch.pools.input ()) {
      GstAllocationParams params;
      gst_allocation_params_init (&params);
      params.align = gpp::HostArena::kAlign - 1;
      gst_query_add_allocation_param (query, st->dispatch.pools.input (), &params);
      return TRUE;
    }
    return FALSE;
  }
  if (GST_QUERY_IS_SERIALIZED (query) && st && !st->drain ())
    return FALSE;
  return gst_pad_query_default (pad, parent, query);
}

/* The processing latency this element adds in the mode now set: the p99 of
 * its measured batches, or a conservative default before it has enough. */
static GstClockTime
gst_gpu_packet_proc_processing_latency (GstGpuPacketProc * self)
{
  GST_OBJECT_LOCK (self);
  const int mode = static_cast<int> (to_engine_mode (self->mode));
  GST_OBJECT_UNLOCK (self);
  return self->stats->processing_latency (static_cast<gpp::Mode> (mode));
}

static gboolean
gst_gpu_packet_proc_src_query_body (GstPad * pad, GstObject * parent, GstQuery * query)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (parent);

  if (GST_QUERY_TYPE (query) != GST_QUERY_LATENCY)
    return gst_pad_query_default (pad, parent, query);
  if (!gst_pad_peer_query (self->sinkpad, query))
    return FALSE;
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency (query, &live, &min, &max);
  const GstClockTime own = gst_gpu_packet_proc_processing_latency (self);
  GST_DEBUG_OBJECT (self, "upstream latency %" GST_TIME_FORMAT ", adding %" GST_TIME_FORMAT,
      GST_TIME_ARGS (min), GST_TIME_ARGS (own));
  gst_query_set_latency (query, live, min + own,
      GST_CLOCK_TIME_IS_VALID (max) ? max + own : max);
  return TRUE;
}

static gboolean
gst_gpu_packet_proc_src_activate_mode_body (GstPad * pad, GstObject * parent, GstPadMode mode,
    gboolean active)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (parent);
  GppBatchRunner *st = self->state;

  if (mode != GST_PAD_MODE_PUSH || !st)
    return TRUE;
  if (active) {
    st->results.reset ();
    return gst_pad_start_task (pad, (GstTaskFunction) gst_gpu_packet_proc_loop, self, NULL);
  }
  st->set_flushing ();
  return gst_pad_stop_task (pad);
}

/* The engine settings the properties ask for; call with the object lock. */
static gpp::EngineSettings
engine_settings_locked (GstGpuPacketProc * self)
{
  gpp::EngineSettings settings;
  settings.cpu_threads = self->cpu_threads;
  settings.device_id = self->device_id;
  /* Several devices: an engine that shards by flow over them. */
  if (self->device_ids->size () == 1)
    settings.device_id = self->device_ids->front ();
  else if (self->device_ids->size () > 1)
    settings.device_ids = *self->device_ids;
  settings.num_streams = self->num_streams;
  settings.persistent_blocks = self->persistent_blocks;
  settings.wait = static_cast<gpp::WaitStrategy> (self->wait_strategy);
  settings.max_batch_bytes = (size_t) self->pool_size_mib << 20;
  settings.records_to_host = self->packet_records;
  /* low-latency: each batch on the streaming thread; otherwise the next one
   * arrives while the engine's threads run this one. */
  settings.cpu_pipelined = !self->low_latency;
  return settings;
}

/* Asks upstream once per stream whether it is live (capture-to-result
 * latency means something only then). */
static void
gst_gpu_packet_proc_learn_liveness (GstGpuPacketProc * self)
{
  if (self->state->upstream_live >= 0)
    return;
  GstQuery *query = gst_query_new_latency ();
  gboolean live = FALSE;
  if (gst_pad_peer_query (self->sinkpad, query))
    gst_query_parse_latency (query, &live, NULL, NULL);
  gst_query_unref (query);
  self->state->upstream_live = live;
}

/* Whether the mapped batch is well formed and of the caps' link type; posts
 * the error naming the problem when not. */
static gboolean
gst_gpu_packet_proc_valid_batch (GstGpuPacketProc * self, const PendingItem & item)
{
  const guint8 *data = item.batch_map.data;
  const gsize size = item.batch_map.size;
  char why[256];
  const char *problem = NULL;
  if (!gpp_batch_validate (data, size, why, sizeof why)) {
    problem = why;
  } else if (reinterpret_cast<const GppBatchHeader *> (data)->linktype !=
      (guint) self->linktype) {
    g_snprintf (why, sizeof why, "its header says link type %u, the caps say %d",
        reinterpret_cast<const GppBatchHeader *> (data)->linktype, self->linktype);
    problem = why;
  }
  if (problem)
    GST_ELEMENT_ERROR (self, STREAM, FORMAT, ("Malformed packet batch: %s.", problem),
        ("buffer offset %" G_GUINT64_FORMAT ", %" G_GSIZE_FORMAT " bytes",
            GST_BUFFER_OFFSET (item.batch), size));
  return problem == NULL;
}

static GstFlowReturn
gst_gpu_packet_proc_chain_body (GstPad *, GstObject * parent, GstBuffer * batch)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (parent);
  GppBatchRunner *st = self->state;
  const auto entry = std::chrono::steady_clock::now ();

  gst_gpu_packet_proc_learn_liveness (self);
  const GstFlowReturn failed = st->results.last_flow ();
  if (failed != GST_FLOW_OK) {
    gst_buffer_unref (batch);
    return failed;
  }
  /* From here the item owns the batch (and its map): every return, an
   * exception's too, unmaps and unrefs whatever it still holds. */
  PendingItem item;
  item.batch = batch;
  if (!gst_buffer_map (batch, &item.batch_map, GST_MAP_READ)) {
    GST_ELEMENT_ERROR (self, STREAM, FAILED, ("Could not map the packet batch."), (NULL));
    return GST_FLOW_ERROR;
  }
  if (!gst_gpu_packet_proc_valid_batch (self, item))
    return GST_FLOW_ERROR;

  /* The settings this batch runs with, and the rule sets it holds. */
  GST_OBJECT_LOCK (self);
  gpp::CoreConfig config = self->config;
  item.acl = *self->acl;
  item.dpi = *self->dpi;
  config.acl = item.acl ? item.acl->blob.data () : nullptr;
  config.acl_default_action = item.acl ? (uint8_t) self->default_action :
      (uint8_t) GPP_ACL_NONE;
  config.dpi = item.dpi ? item.dpi->blob.data () : nullptr;
  const gpp::Mode mode = to_engine_mode (self->mode);
  const gpp::EngineSettings settings = engine_settings_locked (self);
  item.push_records = self->packet_records;
  const bool low_latency = self->low_latency;
  const guint pool_size_mib = self->pool_size_mib;
  GST_OBJECT_UNLOCK (self);

  const GstFlowReturn ready = st->prepare (mode, settings, low_latency);
  if (ready != GST_FLOW_OK)
    return ready;
  return st->run (std::move (item), config, mode, entry, low_latency, pool_size_mib);
}

/* Allocates the pinned pools where a GPU is usable (GppBatchRunner::open_pools). */
static gboolean
gst_gpu_packet_proc_setup_pool (GstGpuPacketProc * self)
{
  GST_OBJECT_LOCK (self);
  const gpp::Mode mode = to_engine_mode (self->mode);
  /* The pool is portable pinned memory; it lives with the first device. */
  const int device = self->device_ids->empty () ? self->device_id : self->device_ids->front ();
  const guint pool_size_mib = self->pool_size_mib;
  const auto kind = static_cast<gpp::HostMemoryKind> (self->pool_memory);
  GST_OBJECT_UNLOCK (self);
  return self->state->open_pools (mode, device, pool_size_mib, kind);
}

/* Retires what the GPU still holds, then frees the streaming state; pads are
 * inactive and the task has stopped. */
static void
gst_gpu_packet_proc_teardown (GstGpuPacketProc * self)
{
  GppBatchRunner *st = self->state;
  st->retire_all ();
  GST_OBJECT_LOCK (self);
  self->state = nullptr;
  GST_OBJECT_UNLOCK (self);
  delete st;                    /* and its pools: the process's pinned count goes down */
  self->linktype = -1;
  self->linktype_refused = FALSE;
}

static GstStateChangeReturn
gst_gpu_packet_proc_change_state_body (GstElement * element, GstStateChange transition)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (element);

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    GST_OBJECT_LOCK (self);
    gchar *key_error = g_strdup (self->rss_key_error ? self->rss_key_error :
        self->device_ids_error);
    gchar *acl_error = g_strdup (self->acl_error);
    gchar *dpi_error = g_strdup (self->dpi_error);
    GST_OBJECT_UNLOCK (self);
    if (key_error || acl_error || dpi_error) {
      if (key_error)            /* rss-key's, or device-ids' */
        GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("Invalid %s.", key_error), (NULL));
      else if (acl_error)
        GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("Invalid ACL rules: %s", acl_error),
            (NULL));
      else
        GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("Invalid DPI patterns: %s", dpi_error),
            (NULL));
      g_free (key_error);
      g_free (acl_error);
      g_free (dpi_error);
      return GST_STATE_CHANGE_FAILURE;
    }
    self->stats->reset ();
    auto *state = new GppBatchRunner (GST_ELEMENT (self), self->srcpad, self->flowpad,
        *self->stats);
    GST_OBJECT_LOCK (self);
    self->state = state;
    const gpp::Mode mode = to_engine_mode (self->mode);
    const gpp::EngineSettings settings = engine_settings_locked (self);
    const bool flows = self->flows;
    gpp::FlowSettings flow_settings;
    flow_settings.max_flows = self->flow_max;
    flow_settings.idle_timeout_ns = (guint64) self->flow_idle_timeout * GST_SECOND;
    flow_settings.active_timeout_ns = (guint64) self->flow_active_timeout * GST_SECOND;
    flow_settings.community_id_seed = (uint16_t) self->community_id_seed;
    /* A host flow table (mode=cpu) counts on as many threads as the
     * cpu mode parses on. */
    flow_settings.threads = self->cpu_threads;
    GST_OBJECT_UNLOCK (self);
    /* Pinned memory and the engine are set up here, not in the streaming
     * path.  A failure, an exception's too, leaves no state behind. */
    bool started = false;
    try {
      if (flows)
        state->flows.start (flow_settings);
      started = gst_gpu_packet_proc_setup_pool (self) && state->switch_engine (mode, settings);
    } catch (...) {
      gst_gpu_packet_proc_teardown (self);
      throw;                    /* posted by gpp_no_throw */
    }
    if (!started) {
      gst_gpu_packet_proc_teardown (self);
      return GST_STATE_CHANGE_FAILURE;
    }
  }

  GstStateChangeReturn ret = GST_ELEMENT_CLASS (parent_class)->change_state (element,
      transition);

  const bool failed_start = transition == GST_STATE_CHANGE_READY_TO_PAUSED &&
      ret == GST_STATE_CHANGE_FAILURE;
  if ((transition == GST_STATE_CHANGE_PAUSED_TO_READY || failed_start) && self->state)
    gst_gpu_packet_proc_teardown (self);
  return ret;
}

static GstStructure *
gst_gpu_packet_proc_make_stats (GstGpuPacketProc * self)
{
  GppLiveFigures live;
  /* The state exists between READY→PAUSED and PAUSED→READY; the object lock
   * keeps it from going away under us (change_state takes it too). */
  GST_OBJECT_LOCK (self);
  /* The rule and pattern sets in use: their lookup blobs are what a GPU
   * engine copies to device memory (once per set), and the CPU reads. */
  live.acl_bytes = *self->acl ? (*self->acl)->blob.size () : 0;
  live.acl_rules = *self->acl ? (guint) (*self->acl)->rules.size () : 0;
  live.dpi_bytes = *self->dpi ? (*self->dpi)->blob.size () : 0;
  live.dpi_patterns = *self->dpi ? (guint) (*self->dpi)->patterns.size () : 0;
  GppBatchRunner *st = self->state;
  if (st)
    live.in_flight = st->results.in_flight ();
  /* Under the object lock: the state (and its flow meter) stays meanwhile. */
  GstStructure *stats = st ? st->dispatch.make_stats (live, *self->stats)
      : self->stats->to_structure (live);
  if (st)
    st->flows.add_stats (stats);
  GST_OBJECT_UNLOCK (self);
  return stats;
}

static bool
set_is_empty (const gpp::AclRuleSet & set)
{
  return set.rules.empty ();
}

static bool
set_is_empty (const gpp::DpiPatternSet & set)
{
  return set.patterns.empty ();
}

/* Loads a rule or pattern file in the caller's thread, never the streaming
 * one, and swaps it in: each batch runs wholly with the old or wholly with
 * the new set.  A bad file while playing keeps the old set (warning); before
 * start it makes READY→PAUSED fail (error). */
template <typename Set, typename Load>
static void
gst_gpu_packet_proc_set_file (GstGpuPacketProc * self, const gchar * path, Load load,
    const char *what, gchar ** stored_path, gchar ** stored_error,
    std::shared_ptr<const Set> *current)
{
  std::shared_ptr<const Set> set;
  std::string error;
  /* No exception may leave a GObject callback: a set too large to build
   * (std::bad_alloc, std::length_error) is a bad file like any other. */
  try {
    if (path && *path)
      set = load (path, &error);
  } catch (const std::exception & e) {
    set = nullptr;
    error = std::string (path) + ": cannot load: " + e.what ();
  }

  /* An empty set is valid (it clears the stage's matches) but is rarely
   * meant: a file emptied or cut short by a writer.  Say so. */
  if (set && set_is_empty (*set))
    GST_ELEMENT_WARNING (self, RESOURCE, READ, ("%s from \"%s\": the file holds none; "
            "no packet will match.", what, path), (NULL));
  GST_OBJECT_LOCK (self);
  if (!error.empty () && GST_STATE (self) > GST_STATE_READY) {
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_WARNING (self, RESOURCE, READ, ("Ignoring %s from \"%s\"; keeping the "
            "current ones.", what, path), ("%s", error.c_str ()));
    return;
  }
  g_free (*stored_path);
  *stored_path = g_strdup (path);
  g_free (*stored_error);
  *stored_error = error.empty () ? NULL : g_strdup (error.c_str ());
  *current = std::move (set);
  GST_OBJECT_UNLOCK (self);
  if (!error.empty ())
    GST_WARNING_OBJECT (self, "%s", error.c_str ());
}

static void
gst_gpu_packet_proc_set_property_body (GObject * object, guint prop_id,
    const GValue * value, GParamSpec * pspec)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (object);

  if (GPP_REFUSE_READY_ONLY (object, pspec))
    return;

  if (prop_id == PROP_ACL_RULES) {
    gst_gpu_packet_proc_set_file (self, g_value_get_string (value), gpp::load_acl_rules,
        "ACL rules", &self->acl_path, &self->acl_error, self->acl);
    return;
  }
  if (prop_id == PROP_DPI_PATTERNS || prop_id == PROP_DPI_SELECT) {
    /* A new selection reloads the current file with it. */
    GST_OBJECT_LOCK (self);
    if (prop_id == PROP_DPI_SELECT)
      self->dpi_select = (GstGpuPacketProcDpiSelect) g_value_get_enum (value);
    const auto select = (gpp::DpiSelect) self->dpi_select;
    gchar *path = prop_id == PROP_DPI_PATTERNS ? g_value_dup_string (value)
        : g_strdup (self->dpi_path);
    GST_OBJECT_UNLOCK (self);
    gst_gpu_packet_proc_set_file (self, path,
        [select] (const std::string & p, std::string * error) {
          return gpp::load_dpi_patterns (p, error, select);
        }, "DPI patterns", &self->dpi_path, &self->dpi_error, self->dpi);
    g_free (path);
    return;
  }
  if (prop_id == PROP_MODE) {
    GST_OBJECT_LOCK (self);
    const auto mode = (GstGpuPacketProcMode) g_value_get_enum (value);
    const gboolean changed = mode != self->mode;
    self->mode = mode;
    GST_OBJECT_UNLOCK (self);
    /* Each mode has its own processing latency. */
    if (changed)
      gst_element_post_message (GST_ELEMENT (self), gst_message_new_latency (GST_OBJECT (self)));
    return;
  }
  if (prop_id == PROP_DEVICE_IDS) {
    /* "all" asks CUDA for its devices (its first call can take long): not
     * under the object lock, which the streaming thread takes per batch. */
    const gchar *text = g_value_get_string (value);
    std::vector<int> ids;
    gchar *error = device_ids_from_text (text, &ids);
    GST_OBJECT_LOCK (self);
    *self->device_ids = std::move (ids);
    g_free (self->device_ids_error);
    self->device_ids_error = error;
    g_free (self->device_ids_text);
    self->device_ids_text = g_strdup (text);
    GST_OBJECT_UNLOCK (self);
    return;
  }
  GST_OBJECT_LOCK (self);
  switch (prop_id) {
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
    case PROP_DEVICE_ID:
      self->device_id = g_value_get_int (value);
      break;
    case PROP_NUM_STREAMS:
      self->num_streams = g_value_get_uint (value);
      break;
    case PROP_POOL_SIZE:
      self->pool_size_mib = g_value_get_uint (value);
      break;
    case PROP_POOL_MEMORY:
      self->pool_memory = (GstGpuPacketProcMemory) g_value_get_enum (value);
      break;
    case PROP_PERSISTENT_BLOCKS:
      self->persistent_blocks = g_value_get_uint (value);
      break;
    case PROP_WAIT_STRATEGY:
      self->wait_strategy = (GstGpuPacketProcWait) g_value_get_enum (value);
      break;
    case PROP_LOW_LATENCY:
      self->low_latency = g_value_get_boolean (value);
      break;
    case PROP_PACKET_RECORDS:
      self->packet_records = g_value_get_boolean (value);
      break;
    case PROP_FLOWS:
      self->flows = g_value_get_boolean (value);
      break;
    case PROP_FLOW_IDLE_TIMEOUT:
      self->flow_idle_timeout = g_value_get_uint (value);
      break;
    case PROP_FLOW_ACTIVE_TIMEOUT:
      self->flow_active_timeout = g_value_get_uint (value);
      break;
    case PROP_FLOW_MAX:
      self->flow_max = g_value_get_uint (value);
      break;
    case PROP_COMMUNITY_ID_SEED:
      self->community_id_seed = g_value_get_uint (value);
      break;
    case PROP_DEFAULT_ACTION:
      self->default_action = (GstGpuPacketProcAction) g_value_get_enum (value);
      break;
    default:
      G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
      break;
  }
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_packet_proc_get_property_body (GObject * object, guint prop_id, GValue * value,
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
    case PROP_DEVICE_ID:
      g_value_set_int (value, self->device_id);
      break;
    case PROP_DEVICE_IDS:
      g_value_set_string (value, self->device_ids_text);
      break;
    case PROP_NUM_STREAMS:
      g_value_set_uint (value, self->num_streams);
      break;
    case PROP_POOL_SIZE:
      g_value_set_uint (value, self->pool_size_mib);
      break;
    case PROP_POOL_MEMORY:
      g_value_set_enum (value, self->pool_memory);
      break;
    case PROP_PERSISTENT_BLOCKS:
      g_value_set_uint (value, self->persistent_blocks);
      break;
    case PROP_WAIT_STRATEGY:
      g_value_set_enum (value, self->wait_strategy);
      break;
    case PROP_LOW_LATENCY:
      g_value_set_boolean (value, self->low_latency);
      break;
    case PROP_PACKET_RECORDS:
      g_value_set_boolean (value, self->packet_records);
      break;
    case PROP_FLOWS:
      g_value_set_boolean (value, self->flows);
      break;
    case PROP_FLOW_IDLE_TIMEOUT:
      g_value_set_uint (value, self->flow_idle_timeout);
      break;
    case PROP_FLOW_ACTIVE_TIMEOUT:
      g_value_set_uint (value, self->flow_active_timeout);
      break;
    case PROP_FLOW_MAX:
      g_value_set_uint (value, self->flow_max);
      break;
    case PROP_COMMUNITY_ID_SEED:
      g_value_set_uint (value, self->community_id_seed);
      break;
    case PROP_ACL_RULES:
      g_value_set_string (value, self->acl_path);
      break;
    case PROP_DEFAULT_ACTION:
      g_value_set_enum (value, self->default_action);
      break;
    case PROP_DPI_SELECT:
      g_value_set_enum (value, self->dpi_select);
      break;
    case PROP_DPI_PATTERNS:
      g_value_set_string (value, self->dpi_path);
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
  g_free (self->device_ids_text);
  g_free (self->device_ids_error);
  delete self->device_ids;
  g_free (self->acl_path);
  g_free (self->acl_error);
  delete self->acl;
  g_free (self->dpi_path);
  g_free (self->dpi_error);
  delete self->dpi;
  G_OBJECT_CLASS (parent_class)->finalize (object);
}

/* The vfuncs themselves: their bodies above, run so that no exception
 * leaves them (noexcept.h): every one that reaches code which can throw
 * (allocation, rule loading, engine creation, batch building). */
static GstFlowReturn
gst_gpu_packet_proc_chain (GstPad * pad, GstObject * parent, GstBuffer * batch)
{
  return gpp_no_throw (GST_ELEMENT (parent), "gpupacketproc's chain", GST_FLOW_ERROR,
      [&] { return gst_gpu_packet_proc_chain_body (pad, parent, batch); });
}

static gboolean
gst_gpu_packet_proc_sink_event (GstPad * pad, GstObject * parent, GstEvent * event)
{
  return gpp_no_throw (GST_ELEMENT (parent), "gpupacketproc's event handler", FALSE,
      [&] { return gst_gpu_packet_proc_sink_event_body (pad, parent, event); });
}

static GstStateChangeReturn
gst_gpu_packet_proc_change_state (GstElement * element, GstStateChange transition)
{
  return gpp_no_throw (element, "a gpupacketproc state change", GST_STATE_CHANGE_FAILURE,
      [&] { return gst_gpu_packet_proc_change_state_body (element, transition); });
}

static gboolean
gst_gpu_packet_proc_sink_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  return gpp_no_throw (GST_ELEMENT (parent), "gpupacketproc's sink query", FALSE,
      [&] { return gst_gpu_packet_proc_sink_query_body (pad, parent, query); });
}

static gboolean
gst_gpu_packet_proc_src_query (GstPad * pad, GstObject * parent, GstQuery * query)
{
  return gpp_no_throw (GST_ELEMENT (parent), "gpupacketproc's src query", FALSE,
      [&] { return gst_gpu_packet_proc_src_query_body (pad, parent, query); });
}

static gboolean
gst_gpu_packet_proc_src_activate_mode (GstPad * pad, GstObject * parent, GstPadMode mode,
    gboolean active)
{
  return gpp_no_throw (GST_ELEMENT (parent), "gpupacketproc's pad activation", FALSE,
      [&] { return gst_gpu_packet_proc_src_activate_mode_body (pad, parent, mode, active); });
}

static void
gst_gpu_packet_proc_set_property (GObject * object, guint prop_id, const GValue * value,
    GParamSpec * pspec)
{
  gpp_no_throw (GST_ELEMENT (object), "setting a gpupacketproc property", false, [&] {
        gst_gpu_packet_proc_set_property_body (object, prop_id, value, pspec);
        return true;
      });
}

static void
gst_gpu_packet_proc_get_property (GObject * object, guint prop_id, GValue * value,
    GParamSpec * pspec)
{
  gpp_no_throw (GST_ELEMENT (object), "reading a gpupacketproc property", false, [&] {
        gst_gpu_packet_proc_get_property_body (object, prop_id, value, pspec);
        return true;
      });
}

static void
gst_gpu_packet_proc_loop (GstGpuPacketProc * self)
{
  /* A failure stops the task: nothing more leaves after it. */
  if (!gpp_no_throw (GST_ELEMENT (self), "gpupacketproc's push task", false, [&] {
            self->state->loop_once ();
            return true;
          }))
    gst_pad_pause_task (self->srcpad);
}

/* A property blurb that states a constant, printed from it (interned, so it
 * lives as long as the class, as G_PARAM_STATIC_BLURB needs). */
static const gchar *
blurb_printf (const gchar * format, ...) G_GNUC_PRINTF (1, 2);
static const gchar *
blurb_printf (const gchar * format, ...)
{
  va_list args;
  va_start (args, format);
  gchar *text = g_strdup_vprintf (format, args);
  va_end (args);
  const gchar *interned = g_intern_string (text);
  g_free (text);
  return interned;
}

static void
gst_gpu_packet_proc_class_init (GstGpuPacketProcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);
  const auto rw_playing = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_PLAYING);
  const auto rw_ready = (GParamFlags) (G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
      GST_PARAM_MUTABLE_READY);

  gobject_class->set_property = gst_gpu_packet_proc_set_property;
  gobject_class->get_property = gst_gpu_packet_proc_get_property;
  gobject_class->finalize = gst_gpu_packet_proc_finalize;

  gchar *default_key = rss_key_to_text (gpp::kDefaultRssKey);
  g_object_class_install_property (gobject_class, PROP_MODE,
      g_param_spec_enum ("mode", "Mode",
          "Where the packet core runs. Changing it while playing lets the batches "
          "in flight finish first and posts a LATENCY message (each mode reports "
          "its own measured p99 latency); GPU modes need a CUDA GPU (an error says "
          "why when there is none)", GST_TYPE_GPU_PACKET_PROC_MODE, DEFAULT_MODE, rw_playing));
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
          blurb_printf ("Host threads for mode=cpu (its packet core, and its flow table, "
              "which takes the value the element starts with), 0 = one per core; batches "
              "under %u packets per thread use fewer threads, since handing them out costs "
              "more. Raise it when batches of %u packets or more come faster than one core "
              "parses them", gpp::CpuEngine::kMinPacketsPerThread,
              2 * gpp::CpuEngine::kMinPacketsPerThread),
          0, MAX_CPU_THREADS, DEFAULT_CPU_THREADS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_DEVICE_ID,
      g_param_spec_int ("device-id", "Device ID", "CUDA device for the GPU modes",
          0, G_MAXINT, DEFAULT_DEVICE_ID, rw_ready));
  g_object_class_install_property (gobject_class, PROP_DEVICE_IDS,
      g_param_spec_string ("device-ids", "Device IDs",
          "Several CUDA devices for the GPU modes, e.g. \"0,1\" or \"all\" (empty: "
          "device-id alone): each batch's packets are sharded by flow (their symmetric RSS "
          "hash, computed on the host) over the devices, each share runs in the mode on its "
          "device, and the records come back merged in input order; flows=true then keeps "
          "its table in host memory. A device may repeat (\"0,0\": two shards on one GPU)",
          DEFAULT_DEVICE_IDS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_NUM_STREAMS,
      g_param_spec_uint ("num-streams", "Streams",
          "GPU batches in flight at once (CUDA streams for streams/zerocopy/graph, "
          "queue slots for persistent): more overlap copies and kernels of "
          "neighbouring batches, each adds a batch of latency under load",
          1, MAX_NUM_STREAMS, DEFAULT_NUM_STREAMS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_POOL_SIZE,
      g_param_spec_uint ("pool-size", "Pinned pool size",
          blurb_printf ("MiB of pinned (page-locked) host memory for batches, and %zu "
              "times as much for results, allocated on READY→PAUSED when a GPU is usable; "
              "0 = none (mode=cpu only). Limits the largest batch. Refused (an error) when "
              "the pools of every gpupacketproc of the process would pin more than %.0f%% "
              "of physical memory", GppPinnedPools::kResultsPoolFactor,
              100 * GppPinnedPools::kMaxPinnedShare),
          0, MAX_POOL_SIZE, DEFAULT_POOL_SIZE, rw_ready));
  g_object_class_install_property (gobject_class, PROP_POOL_MEMORY,
      g_param_spec_enum ("pool-memory", "Pinned pool memory kind",
          "Kind of pinned memory for batches (results are always cached memory)",
          GST_TYPE_GPU_PACKET_PROC_MEMORY, DEFAULT_POOL_MEMORY, rw_ready));
  g_object_class_install_property (gobject_class, PROP_PERSISTENT_BLOCKS,
      g_param_spec_uint ("persistent-blocks", "Persistent blocks",
          "Resident 256-thread blocks of mode=persistent, 0 = one per SM. Without "
          "acl-rules, batches of up to 256 packets run on one block whatever this is "
          "and larger ones are shared out 256 packets per block; with acl-rules the "
          "shares hold about one ACL probe per thread (at least 16 packets)",
          0, 65535, DEFAULT_PERSISTENT_BLOCKS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_WAIT_STRATEGY,
      g_param_spec_enum ("wait-strategy", "Wait strategy",
          "How the host waits for GPU batches to finish",
          GST_TYPE_GPU_PACKET_PROC_WAIT, DEFAULT_WAIT, rw_playing));
  g_object_class_install_property (gobject_class, PROP_LOW_LATENCY,
      g_param_spec_boolean ("low-latency", "Low latency",
          "The streaming thread waits for each batch (mode=cpu: runs it) and pushes its "
          "results itself, with no hand-off to the src pad's task: lower and steadier "
          "latency for one batch at a time, but the next batch no longer arrives while "
          "this one runs (leave off for throughput)", DEFAULT_LOW_LATENCY, rw_playing));
  g_object_class_install_property (gobject_class, PROP_PACKET_RECORDS,
      g_param_spec_boolean ("packet-records", "Packet records",
          "Push each batch's packet records on the src pad. FALSE: a gap event takes each "
          "batch's place there, and streams, zerocopy and graph on one device leave the "
          "records on the GPU (no copy back; zerocopy writes none), for flows=true alone at "
          "the highest rate; malformed in stats is then not counted in those modes",
          DEFAULT_PACKET_RECORDS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_FLOWS,
      g_param_spec_boolean ("flows", "Flows",
          "Meter flows: every packet with an IP header is counted into its bidirectional "
          "flow, and the records of flows that end leave by the flows pad "
          "(application/x-flow-records, gpupacket/flow-record.h). The table is in GPU memory "
          "in the GPU modes (each batch's kernel counts its packets there), in host memory in "
          "cpu", DEFAULT_FLOWS, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FLOW_IDLE_TIMEOUT,
      g_param_spec_uint ("flow-idle-timeout", "Flow idle timeout",
          "Seconds of packet time without a packet after which a flow ends",
          1, G_MAXUINT, DEFAULT_FLOW_IDLE_TIMEOUT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FLOW_ACTIVE_TIMEOUT,
      g_param_spec_uint ("flow-active-timeout", "Flow active timeout",
          "Seconds of packet time after which a flow still going is written out and "
          "counted afresh", 1, G_MAXUINT, DEFAULT_FLOW_ACTIVE_TIMEOUT, rw_ready));
  g_object_class_install_property (gobject_class, PROP_FLOW_MAX,
      g_param_spec_uint ("flow-max", "Flow table size",
          "Flows tracked at once (the table takes 256 bytes a flow); when more are open, "
          "those idle longest are evicted (end reason: lack of resources)",
          64, 1u << 30, DEFAULT_FLOW_MAX, rw_ready));
  g_object_class_install_property (gobject_class, PROP_COMMUNITY_ID_SEED,
      g_param_spec_uint ("community-id-seed", "Community ID seed",
          "Seed of the flow records' Community ID (v1)", 0, G_MAXUINT16,
          DEFAULT_COMMUNITY_ID_SEED, rw_ready));
  g_object_class_install_property (gobject_class, PROP_ACL_RULES,
      g_param_spec_string ("acl-rules", "ACL rules",
          "ClassBench / DPDK test-acl rule file (README: ACL rules); each packet gets "
          "the 0-based index of the first matching rule and its action. Set while "
          "playing, the new file is loaded off the streaming path and applies from "
          "the next batch; a bad file keeps the old rules (warning)", DEFAULT_ACL_RULES,
          rw_playing));
  g_object_class_install_property (gobject_class, PROP_DEFAULT_ACTION,
      g_param_spec_enum ("default-action", "Default action",
          "ACL action of packets no rule matches (non-IP packets included)",
          GST_TYPE_GPU_PACKET_PROC_ACTION, DEFAULT_DEFAULT_ACTION, rw_playing));
  g_object_class_install_property (gobject_class, PROP_DPI_PATTERNS,
      g_param_spec_string ("dpi-patterns", "DPI patterns",
          "Pattern file (one literal per line, |41 42| hex escapes) or Snort/Suricata "
          "rule file (its content strings); each packet gets the smallest id of a "
          "pattern in its TCP/UDP payload and the number of occurrences. Swapped like "
          "acl-rules while playing. A directory loads its *.rules files in name "
          "order (an IDS rule folder)", DEFAULT_DPI_PATTERNS, rw_playing));
  g_object_class_install_property (gobject_class, PROP_DPI_SELECT,
      g_param_spec_enum ("dpi-select", "DPI pattern selection",
          "Which contents of the rules in dpi-patterns are matched (pattern lines "
          "are always patterns); set while playing, the file is reloaded with it",
          GST_TYPE_GPU_PACKET_PROC_DPI_SELECT, DEFAULT_DPI_SELECT, rw_playing));
  g_object_class_install_property (gobject_class, PROP_STATS,
      g_param_spec_boxed ("stats", "Statistics",
          blurb_printf ("Since the last READY→PAUSED: active-mode; batches, packets, bytes "
          "(captured), malformed (packets with any status flag); "
          "latency-p50/p99/p999/max-ns (chain entry to result push, last %zu "
          "batches) overall and as MODE-latency-p50/p99/p999-ns with MODE-batches "
          "for each mode used; capture-latency-p50/p99/p999/max-ns (capture "
          "timestamp of each batch's first packet to its result push, wall clock, "
          "last %zu batches; recorded only when upstream answers the LATENCY query as live, 0 otherwise); "
          "batches-in-flight, max-batches-in-flight; time-pool-wait-ns, time-slot-wait-ns, "
          "time-queued-ns, time-engine-ns, time-push-ns (where the batches' time went, summed: "
          "waiting for pinned pool room, waiting for an engine slot, queued for the push task, "
          "in the engine, pushing downstream); "
          "bytes-to-device, bytes-from-device; copied-batches, copied-bytes "
          "(batches from outside the pinned pool); pool-fallbacks (upstream "
          "allocations the full pool could not serve); pool-bytes-in-use; "
          "pool-bytes-pinned (both pools); acl-rule-count, acl-bytes, dpi-pattern-count, "
          "dpi-bytes (the sets in use; their bytes are what a GPU mode holds in device "
          "memory for them); with device-ids, for each shard N: shard-N-device-id, "
          "shard-N-packets, shard-N-bytes-to-device, shard-N-bytes-from-device (engines "
          "replaced or stopped since the start still count)", LatencyWindow::kCapacity, LatencyWindow::kCapacity),
          GST_TYPE_STRUCTURE, (GParamFlags) (G_PARAM_READABLE | G_PARAM_STATIC_STRINGS)));

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_add_static_pad_template (element_class, &flows_template);
  gst_element_class_set_static_metadata (element_class,
      "GPU packet processor", "Filter/Network",
      "Parses, validates and RSS-hashes batches of packets into per-packet result "
      "records, on host threads or a CUDA GPU", "gpupacket developers");
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_gpu_packet_proc_change_state);

  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_MODE, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_WAIT, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_MEMORY, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_ACTION, (GstPluginAPIFlags) 0);
  gst_type_mark_as_plugin_api (GST_TYPE_GPU_PACKET_PROC_DPI_SELECT, (GstPluginAPIFlags) 0);
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
  gst_pad_set_query_function (self->sinkpad,
      GST_DEBUG_FUNCPTR (gst_gpu_packet_proc_sink_query));
  /* ACCEPT_CAPS by the template (any link type), CAPS queries by what the
   * core parses: see gst_gpu_packet_proc_sink_query. */
  GST_PAD_SET_ACCEPT_TEMPLATE (self->sinkpad);
  gst_element_add_pad (GST_ELEMENT (self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template (&src_template, "src");
  gst_pad_use_fixed_caps (self->srcpad);
  gst_pad_set_activatemode_function (self->srcpad,
      GST_DEBUG_FUNCPTR (gst_gpu_packet_proc_src_activate_mode));
  gst_pad_set_query_function (self->srcpad, GST_DEBUG_FUNCPTR (gst_gpu_packet_proc_src_query));
  gst_element_add_pad (GST_ELEMENT (self), self->srcpad);

  self->flowpad = gst_pad_new_from_static_template (&flows_template, "flows");
  gst_pad_use_fixed_caps (self->flowpad);
  gst_element_add_pad (GST_ELEMENT (self), self->flowpad);

  self->mode = DEFAULT_MODE;
  memset (&self->config, 0, sizeof self->config);
  memcpy (self->config.rss_key, gpp::kDefaultRssKey, sizeof self->config.rss_key);
  self->config.symmetric_rss = DEFAULT_SYMMETRIC_RSS;
  self->config.verify_l4_checksum = DEFAULT_VERIFY_L4_CHECKSUM;
  self->rss_key_text = rss_key_to_text (gpp::kDefaultRssKey);
  self->rss_key_error = NULL;
  self->cpu_threads = DEFAULT_CPU_THREADS;
  self->device_id = DEFAULT_DEVICE_ID;
  self->device_ids_text = NULL;
  self->device_ids_error = NULL;
  self->device_ids = new std::vector<int> ();
  self->num_streams = DEFAULT_NUM_STREAMS;
  self->pool_size_mib = DEFAULT_POOL_SIZE;
  self->pool_memory = DEFAULT_POOL_MEMORY;
  self->persistent_blocks = DEFAULT_PERSISTENT_BLOCKS;
  self->wait_strategy = DEFAULT_WAIT;
  self->low_latency = DEFAULT_LOW_LATENCY;
  self->packet_records = DEFAULT_PACKET_RECORDS;
  self->flows = DEFAULT_FLOWS;
  self->flow_idle_timeout = DEFAULT_FLOW_IDLE_TIMEOUT;
  self->flow_active_timeout = DEFAULT_FLOW_ACTIVE_TIMEOUT;
  self->flow_max = DEFAULT_FLOW_MAX;
  self->community_id_seed = DEFAULT_COMMUNITY_ID_SEED;
  self->acl_path = g_strdup (DEFAULT_ACL_RULES);
  self->acl_error = NULL;
  self->acl = new std::shared_ptr<const gpp::AclRuleSet> ();
  self->default_action = DEFAULT_DEFAULT_ACTION;
  self->dpi_path = g_strdup (DEFAULT_DPI_PATTERNS);
  self->dpi_error = NULL;
  self->dpi = new std::shared_ptr<const gpp::DpiPatternSet> ();
  self->dpi_select = DEFAULT_DPI_SELECT;
  self->linktype = -1;
  self->state = nullptr;
  self->stats = new GppProcStats ();
}
