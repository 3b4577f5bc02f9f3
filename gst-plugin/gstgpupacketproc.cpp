/**
 * SECTION:element-gpupacketproc
 * @title: gpupacketproc
 *
 * Runs the gpupacket per-packet core over each `application/x-packet-batch`
 * buffer and pushes one `application/x-packet-results` buffer per batch: an
 * array of 128-byte GppResult records (gpupacket/packet-result.h), one per
 * packet, in batch order (caps record-size=128).  With decap=inner each
 * record describes the innermost packet of the tunnels it is carried in, and
 * the records are followed by as many 48-byte GppTunnelInfo, the tunnels
 * walked (caps record-size=176).  Each results buffer keeps the batch's
 * timestamps and offsets and carries a GstPacketBatchMeta that refers to the
 * batch.
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
 * gst-launch-1.0 pcapsrc location=vxlan.pcap ! gpupacketproc decap=inner vxlan-ports=4789,8472 ! \
 *     packetresultenc ! filesink location=inner.csv
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

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "acl_rules.h"
#include "batchrunner.h"
#include "dpi_patterns.h"
#include "engine.h"
#include "gpupacket/packet-batch.h"
#include "gpupacket/packet-result.h"
#include "procsettings.h"
#include "procstats.h"

GST_DEBUG_CATEGORY (gst_gpu_packet_proc_debug); /* batchrunner.cpp logs to it too */
#define GST_CAT_DEFAULT gst_gpu_packet_proc_debug

/* What the streaming threads own between READY→PAUSED and PAUSED→READY. */
struct _GstGpuPacketProc
{
  GstElement parent;

  GstPad *sinkpad;
  GstPad *srcpad;
  GstPad *flowpad;

  GppProcSettings *settings;    /* under the object lock */

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
    GST_STATIC_CAPS (GPP_RESULTS_CAPS_NAME ", record-size = (int) { "
        G_STRINGIFY (GPP_RESULTS_RECORD_SIZE) ", " G_STRINGIFY (GPP_RESULTS_RECORD_SIZE_TUNNELS)
        " }"));

/* Flow records (flows=true); unlinked, they are dropped. */
static GstStaticPadTemplate flows_template = GST_STATIC_PAD_TEMPLATE ("flows",
    GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS (GPP_FLOW_CAPS_NAME ", record-size = (int) 144"));

#define gst_gpu_packet_proc_parent_class parent_class
G_DEFINE_TYPE (GstGpuPacketProc, gst_gpu_packet_proc, GST_TYPE_ELEMENT);
GST_ELEMENT_REGISTER_DEFINE (gpupacketproc, "gpupacketproc", GST_RANK_NONE,
    GST_TYPE_GPU_PACKET_PROC);

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

/* The results caps of the records decap gives (it does not change after
 * READY). */
static GstCaps *
gst_gpu_packet_proc_results_caps (GstGpuPacketProc * self)
{
  GST_OBJECT_LOCK (self);
  const guint record_size = self->settings->record_size ();
  GST_OBJECT_UNLOCK (self);
  return gst_caps_new_simple (GPP_RESULTS_CAPS_NAME, "record-size", G_TYPE_INT,
      (gint) record_size, NULL);
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
      /* Caps downstream refuses fail the first results pushed, which
       * names them (GppBatchRunner::push_results). */
      GstCaps *results_caps = gst_gpu_packet_proc_results_caps (self);
      GstEvent *caps_event = gst_event_new_caps (results_caps);  /* takes its own ref */
      gst_caps_unref (results_caps);
      return gst_gpu_packet_proc_forward_serialized (self, caps_event);
    }
    case GST_EVENT_FLUSH_START:
      if (st)
        st->set_flushing ();
      gst_pad_push_event (self->flowpad, gst_event_ref (event));
      return gst_pad_push_event (self->srcpad, event);
    case GST_EVENT_FLUSH_STOP:
      if (st) {
        st->stop_flushing ();   /* nothing in flight: the task is paused */
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
      if (st)
        st->end_stream ();
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
    if (st && st->input_pool ()) {
      GstAllocationParams params;
      gst_allocation_params_init (&params);
      params.align = gpp::HostArena::kAlign - 1;
      gst_query_add_allocation_param (query, st->input_pool (), &params);
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
  const auto mode = static_cast<gpp::Mode> (self->settings->mode);
  GST_OBJECT_UNLOCK (self);
  return self->stats->processing_latency (mode);
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
    st->task_starting ();
    return gst_pad_start_task (pad, (GstTaskFunction) gst_gpu_packet_proc_loop, self, NULL);
  }
  st->set_flushing ();
  return gst_pad_stop_task (pad);
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

  st->learn_liveness (self->sinkpad);
  const GstFlowReturn failed = st->last_flow ();
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
  GppBatchSettings settings = self->settings->batch ();
  GST_OBJECT_UNLOCK (self);
  return st->process (std::move (item), std::move (settings), entry);
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

template <typename Set>
static void gst_gpu_packet_proc_warn_if_empty (GstGpuPacketProc * self,
    GppLoadedFile<Set> & file);

static GstStateChangeReturn
gst_gpu_packet_proc_change_state_body (GstElement * element, GstStateChange transition)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (element);

  if (transition == GST_STATE_CHANGE_READY_TO_PAUSED) {
    GST_OBJECT_LOCK (self);
    gchar *invalid = self->settings->start_error ();
    const GppStartSettings start = self->settings->start ();
    GST_OBJECT_UNLOCK (self);
    if (invalid) {
      GST_ELEMENT_ERROR (self, RESOURCE, SETTINGS, ("%s", invalid), (NULL));
      g_free (invalid);
      return GST_STATE_CHANGE_FAILURE;
    }
    gst_gpu_packet_proc_warn_if_empty (self, self->settings->acl);
    gst_gpu_packet_proc_warn_if_empty (self, self->settings->dpi);
    self->stats->reset ();
    auto *state = new GppBatchRunner (GST_ELEMENT (self), self->srcpad, self->flowpad,
        *self->stats);
    GST_OBJECT_LOCK (self);
    self->state = state;
    GST_OBJECT_UNLOCK (self);
    /* Pinned memory and the engine are set up here, not in the streaming
     * path.  A failure, an exception's too, leaves no state behind. */
    bool started = false;
    try {
      started = state->start (start);
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
  const auto & acl = self->settings->acl.set;
  const auto & dpi = self->settings->dpi.set;
  live.acl_bytes = acl ? acl->blob.size () : 0;
  live.acl_rules = acl ? (guint) acl->rules.size () : 0;
  live.dpi_bytes = dpi ? dpi->blob.size () : 0;
  live.dpi_patterns = dpi ? (guint) dpi->patterns.size () : 0;
  /* Under the object lock: the state (and its flow meter) stays meanwhile. */
  GstStructure *stats = self->state ? self->state->make_stats (live)
      : self->stats->to_structure (live);
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

static void
gst_gpu_packet_proc_warn_empty (GstGpuPacketProc * self, const char *what, const char *path)
{
  GST_ELEMENT_WARNING (self, RESOURCE, READ, ("%s from \"%s\": the file holds none; "
          "no packet will match.", what, path), (NULL));
}

/* The warning about an empty rule or pattern file set before start. */
template <typename Set>
static void
gst_gpu_packet_proc_warn_if_empty (GstGpuPacketProc * self, GppLoadedFile<Set> & file)
{
  GST_OBJECT_LOCK (self);
  const bool warn = file.warn_empty_at_start;
  file.warn_empty_at_start = false;
  const char *named = file.path.get ();
  const std::string path = warn && named ? named : "";
  GST_OBJECT_UNLOCK (self);
  if (warn)
    gst_gpu_packet_proc_warn_empty (self, file.what, path.c_str ());
}

/* Loads a rule or pattern file in the caller's thread, never the streaming
 * one, and swaps it in: each batch runs wholly with the old or wholly with
 * the new set.  A bad file while playing keeps the old set (warning); before
 * start it makes READY→PAUSED fail (error). */
template <typename Set, typename Load>
static void
gst_gpu_packet_proc_set_file (GstGpuPacketProc * self, const gchar * path, Load load,
    GppLoadedFile<Set> *file)
{
  const char *what = file->what;
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

  GST_OBJECT_LOCK (self);
  /* Started: past READY or on the way (READY→PAUSED reads the files). */
  const bool started = GST_STATE (self) > GST_STATE_READY ||
      GST_STATE_PENDING (self) > GST_STATE_READY;
  if (!error.empty () && started) {
    GST_OBJECT_UNLOCK (self);
    GST_ELEMENT_WARNING (self, RESOURCE, READ, ("Ignoring %s from \"%s\"; keeping the "
            "current ones.", what, path), ("%s", error.c_str ()));
    return;
  }
  /* An empty set is valid (it clears the stage's matches) but is rarely
   * meant: a file emptied or cut short by a writer.  Said once: now when
   * started, else at start, where a bus hears it (gst-launch-1.0 sets
   * properties before the element is in a pipeline). */
  const bool empty = set && set_is_empty (*set);
  file->warn_empty_at_start = empty && !started;
  file->path.set (path);
  file->error.set (error.empty () ? NULL : error.c_str ());
  file->set = std::move (set);
  GST_OBJECT_UNLOCK (self);
  if (empty && started)
    gst_gpu_packet_proc_warn_empty (self, what, path);
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
        &self->settings->acl);
    return;
  }
  if (prop_id == PROP_DPI_PATTERNS || prop_id == PROP_DPI_SELECT) {
    /* A new selection reloads the current file with it. */
    GST_OBJECT_LOCK (self);
    if (prop_id == PROP_DPI_SELECT)
      self->settings->dpi_select = (GstGpuPacketProcDpiSelect) g_value_get_enum (value);
    const auto select = (gpp::DpiSelect) self->settings->dpi_select;
    gchar *path = prop_id == PROP_DPI_PATTERNS ? g_value_dup_string (value)
        : g_strdup (self->settings->dpi.path.get ());
    GST_OBJECT_UNLOCK (self);
    gst_gpu_packet_proc_set_file (self, path,
        [select] (const std::string & p, std::string * error) {
          return gpp::load_dpi_patterns (p, error, select);
        }, &self->settings->dpi);
    g_free (path);
    return;
  }
  if (prop_id == PROP_MODE) {
    GST_OBJECT_LOCK (self);
    const auto mode = (GstGpuPacketProcMode) g_value_get_enum (value);
    const gboolean changed = mode != self->settings->mode;
    self->settings->mode = mode;
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
    self->settings->set_device_ids (text, std::move (ids), error);
    GST_OBJECT_UNLOCK (self);
    return;
  }
  if (prop_id == PROP_RSS_KEY || prop_id == PROP_VXLAN_PORTS) {
    /* While playing an invalid value is refused: hashing and the tunnel
     * walk go on with the key and ports in use. */
    GST_OBJECT_LOCK (self);
    const bool keep_current = GST_STATE (self) > GST_STATE_READY;
    const gchar *text = g_value_get_string (value);
    gchar *refused = prop_id == PROP_RSS_KEY ? self->settings->set_rss_key (text, keep_current)
        : self->settings->set_vxlan_ports (text, keep_current);
    GST_OBJECT_UNLOCK (self);
    if (refused)
      GST_ELEMENT_WARNING (self, RESOURCE, SETTINGS,
          ("Ignoring invalid %s; keeping the current value.", refused), (NULL));
    g_free (refused);
    return;
  }
  GST_OBJECT_LOCK (self);
  if (!self->settings->set_value (prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
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
  if (!self->settings->get_value (prop_id, value))
    G_OBJECT_WARN_INVALID_PROPERTY_ID (object, prop_id, pspec);
  GST_OBJECT_UNLOCK (self);
}

static void
gst_gpu_packet_proc_finalize (GObject * object)
{
  GstGpuPacketProc *self = GST_GPU_PACKET_PROC (object);

  delete self->state;
  delete self->stats;
  delete self->settings;
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

static void
gst_gpu_packet_proc_class_init (GstGpuPacketProcClass * klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS (klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS (klass);

  gobject_class->set_property = gst_gpu_packet_proc_set_property;
  gobject_class->get_property = gst_gpu_packet_proc_get_property;
  gobject_class->finalize = gst_gpu_packet_proc_finalize;

  gst_gpu_packet_proc_install_properties (gobject_class);

  gst_element_class_add_static_pad_template (element_class, &sink_template);
  gst_element_class_add_static_pad_template (element_class, &src_template);
  gst_element_class_add_static_pad_template (element_class, &flows_template);
  gst_element_class_set_static_metadata (element_class,
      "GPU packet processor", "Filter/Network",
      "Parses, validates and RSS-hashes batches of packets into per-packet result "
      "records, on host threads or a CUDA GPU", "gpupacket developers");
  element_class->change_state = GST_DEBUG_FUNCPTR (gst_gpu_packet_proc_change_state);
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

  self->settings = new GppProcSettings ();
  self->linktype = -1;
  self->state = nullptr;
  self->stats = new GppProcStats ();
}
