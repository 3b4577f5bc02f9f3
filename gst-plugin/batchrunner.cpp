#include "batchrunner.h"

#include <cstring>
#include <exception>
#include <new>
#include <utility>

#include "batch_builder.h"
#include "batchbuffer.h"
#include "gpupacket/gstpacketbatchmeta.h"
#include "gpupacket/packet-batch.h"
#include "gstpinnedallocator.h"

GST_DEBUG_CATEGORY_EXTERN (gst_gpu_packet_proc_debug);
#define GST_CAT_DEFAULT gst_gpu_packet_proc_debug

namespace {

guint64
elapsed_ns (std::chrono::steady_clock::time_point since)
{
  return std::chrono::duration_cast<std::chrono::nanoseconds> (
      std::chrono::steady_clock::now () - since).count ();
}

/* The ns since `mark`, which moves to now: a batch's times one step after
 * the other. */
guint64
lap_ns (std::chrono::steady_clock::time_point & mark)
{
  const auto now = std::chrono::steady_clock::now ();
  const guint64 ns = std::chrono::duration_cast<std::chrono::nanoseconds> (now - mark).count ();
  mark = now;
  return ns;
}

/* Captured packet bytes of a batch (what the stats count as bytes). */
guint64
captured_bytes (const uint8_t * batch)
{
  const auto *header = reinterpret_cast<const GppBatchHeader *> (batch);
  const GppPacketDesc *descs = gpp_batch_descs (batch);
  guint64 bytes = 0;
  for (uint32_t i = 0; i < header->packet_count; i++)
    bytes += descs[i].caplen;
  return bytes;
}

/* The latest packet time in a validated batch. */
uint64_t
latest_packet_ns (const guint8 * batch)
{
  const auto *header = reinterpret_cast<const GppBatchHeader *> (batch);
  const GppPacketDesc *desc = gpp_batch_descs (batch);
  uint64_t latest = 0;
  for (uint32_t i = 0; i < header->packet_count; ++i)
    latest = MAX (latest, desc[i].timestamp_ns);
  return latest;
}

} // namespace

/* Capture time of a batch's first packet where upstream is live, else 0 (a
 * file's timestamps are old; an empty batch has none). */
guint64
GppBatchRunner::live_capture_ns (const uint8_t * batch) const
{
  const auto *header = reinterpret_cast<const GppBatchHeader *> (batch);
  return upstream_live_ > 0 && header->packet_count ? gpp_batch_descs (batch)[0].timestamp_ns : 0;
}

/* Counts a finished batch into the stats, just before its results are
 * pushed.  Once a mode has run enough batches to be measured, the pipeline
 * is asked to query the latency again (it got the default so far). */
void
GppBatchRunner::account (gpp::Mode mode, const GppResult * records, uint32_t count,
    guint64 bytes, std::chrono::steady_clock::time_point entry, guint64 capture_ns)
{
  const guint64 wall = capture_ns ? gpp_capture_clock_ns () : 0;
  const bool measured = stats_.account (mode, records, count, bytes, elapsed_ns (entry),
      capture_ns != 0, wall > capture_ns ? wall - capture_ns : 0);
  if (measured)
    gst_element_post_message (element_, gst_message_new_latency (GST_OBJECT (element_)));
}

/* Before the chain posts an error: waits until the batches in flight have
 * been pushed (or a flush ended the wait).  FALSE when one of them failed
 * and its error is posted already. */
bool
GppBatchRunner::settle_before_error ()
{
  drain ();
  return results_.last_flow () != GST_FLOW_ERROR;
}

bool
GppBatchRunner::start (const GppStartSettings & settings)
{
  if (settings.flows)
    flows_.start (settings.flow, settings.record_size == GPP_RESULTS_RECORD_SIZE_TUNNELS);
  return open_pools (settings.mode, settings.pool_device, settings.pool_size_mib,
      settings.pool_kind, settings.record_size) && switch_engine (settings.mode, settings.engine);
}

void
GppBatchRunner::learn_liveness (GstPad * sinkpad)
{
  if (upstream_live_ >= 0)
    return;
  GstQuery *query = gst_query_new_latency ();
  gboolean live = FALSE;
  if (gst_pad_peer_query (sinkpad, query))
    gst_query_parse_latency (query, &live, NULL, NULL);
  gst_query_unref (query);
  upstream_live_ = live;
}

bool
GppBatchRunner::open_pools (gpp::Mode mode, int device, guint pool_size_mib,
    gpp::HostMemoryKind kind, guint record_size)
{
  std::string why;
  switch (dispatch_.pools.open (device, (size_t) pool_size_mib << 20, kind, record_size, &why)) {
    case GppPinnedPools::Open::Refused:
      GST_ELEMENT_ERROR (element_, RESOURCE, NO_SPACE_LEFT, ("Pinned memory refused: %s.",
              why.c_str ()), ("lower pool-size; at most %.0f%% of physical memory may be pinned",
              100 * GppPinnedPools::kMaxPinnedShare));
      return false;
    case GppPinnedPools::Open::Ok:
      GST_INFO_OBJECT (element_, "pinned pools: %zu bytes on device %d",
          dispatch_.pools.pinned_bytes (), device);
      return true;
    case GppPinnedPools::Open::NoPool:
      break;
  }
  if (mode != gpp::Mode::Cpu) {
    GST_ELEMENT_ERROR (element_, RESOURCE, SETTINGS, ("mode=%s needs a CUDA GPU and its pinned "
            "memory pool, which are not available: %s", gpp::mode_name (mode),
            dispatch_.pools.no_pool_reason ().c_str ()), (NULL));
    return false;
  }
  GST_INFO_OBJECT (element_, "no pinned pool (%s): mode=cpu only",
      dispatch_.pools.no_pool_reason ().c_str ());
  return true;
}

bool
GppBatchRunner::switch_engine (gpp::Mode mode, const gpp::EngineSettings & settings)
{
  std::string error;
  drop_spare_results ();        /* mode=cpu has no use for it */
  if (!dispatch_.switch_to (mode, settings, stats_, &error)) {
    GST_ELEMENT_ERROR (element_, RESOURCE, SETTINGS, ("%s", error.c_str ()), (NULL));
    return false;
  }
  /* The cpu engine's batches take far longer than a wake-up: the task sleeps. */
  results_.set_spin (gpp::is_gpu_mode (mode) && settings.wait == gpp::WaitStrategy::Spin);
  /* The flow table goes where this engine runs (and posts why if it cannot). */
  if (!flows_.place (dispatch_.engine ()))
    return false;
  GST_INFO_OBJECT (element_, "mode %s, %u slots", gpp::mode_name (mode),
      dispatch_.engine ()->slots ());
  return true;
}

GstFlowReturn
GppBatchRunner::prepare (gpp::Mode mode, const gpp::EngineSettings & settings, bool low_latency)
{
  const bool engine_changed = dispatch_.needs_switch (mode, settings);
  const bool inline_behind_queue = !engine_changed &&
      (dispatch_.engine ()->completes_inline () || low_latency) && results_.outstanding () > 0;
  if (!engine_changed && !inline_behind_queue)
    return GST_FLOW_OK;
  if (!drain ())
    return GST_FLOW_FLUSHING;
  if (engine_changed && !switch_engine (mode, settings))
    return GST_FLOW_ERROR;
  return GST_FLOW_OK;
}

void
GppBatchRunner::idle_engine ()
{
  std::string error;
  if (!dispatch_.idle (stats_, &error))
    GST_ELEMENT_ERROR (element_, RESOURCE, FAILED, ("Could not idle the GPU engine."),
        ("%s", error.c_str ()));
}

GstFlowReturn
GppBatchRunner::process (PendingItem item, GppBatchSettings batch,
    std::chrono::steady_clock::time_point entry)
{
  const GstFlowReturn ready = prepare (batch.mode, batch.engine, batch.low_latency);
  if (ready != GST_FLOW_OK)
    return ready;
  /* The item holds the rule and pattern sets the batch's config points
   * into until it is done. */
  item.acl = std::move (batch.acl);
  item.dpi = std::move (batch.dpi);
  item.push_records = batch.push_records;
  item.decap = batch.config.decap != 0;
  if (dispatch_.engine ()->completes_inline ())
    return run_inline (item, batch.config, entry);
  return submit (std::move (item), batch, entry);
}

GstFlowReturn
GppBatchRunner::run_inline (PendingItem & item, const gpp::CoreConfig & config,
    std::chrono::steady_clock::time_point entry)
{
  const guint8 *batch = item.batch_map.data;
  const uint32_t count = reinterpret_cast<const GppBatchHeader *> (batch)->packet_count;
  map_heap_results (item, gpp::results_bytes (count, config));
  auto *records = reinterpret_cast<GppResult *> (item.results_map.data);
  std::string error;
  gpp::Engine *engine = dispatch_.engine ();
  auto mark = std::chrono::steady_clock::now ();
  if (!engine->submit (batch, item.batch_map.size, count, config, records, &error) ||
      !engine->wait_oldest (&error)) {
    GST_ELEMENT_ERROR (element_, STREAM, FAILED, ("Processing failed in mode %s.",
            gpp::mode_name (engine->mode ())), ("%s", error.c_str ()));
    return GST_FLOW_ERROR;
  }
  item.times.engine = lap_ns (mark);
  account (engine->mode (), records, count, captured_bytes (batch), entry,
      live_capture_ns (batch));
  return flow_and_push (item, records, count, mark);
}

/* Results in ordinary memory, mapped: mode=cpu reads and writes any. */
void
GppBatchRunner::map_heap_results (PendingItem & item, gsize results_size)
{
  item.results = heap_results_.acquire (results_size);
  if (!item.results)
    throw std::bad_alloc ();    /* posted as an element error (noexcept.h) */
  gst_buffer_map (item.results, &item.results_map, GST_MAP_WRITE);
}

/* Meters `records` on the host (flows=true without a GPU table), then pushes
 * the batch's results; counts the batch's times, this step's from `mark`. */
GstFlowReturn
GppBatchRunner::flow_and_push (PendingItem & item, const GppResult * records, uint32_t count,
    std::chrono::steady_clock::time_point mark)
{
  /* With decap the flows are keyed by the tunnel id too. */
  const GppTunnelInfo *tunnels = records && item.decap ? gpp::tunnel_plane (records, count) : nullptr;
  GstFlowReturn flow = flows_.add (records, count, tunnels);
  if (flow == GST_FLOW_OK)
    flow = push_results (item);
  item.times.push = lap_ns (mark);
  stats_.add_times (item.times);
  return flow;
}

/* The batch's records on the src pad, or with packet-records=false a gap
 * in their place: time still advances downstream, and a sink there
 * prerolls. */
GstFlowReturn
GppBatchRunner::push_results (PendingItem & item)
{
  if (item.push_records) {
    const GstFlowReturn flow = gst_pad_push (srcpad_, item.take_results ());
    if (flow == GST_FLOW_NOT_NEGOTIATED)
      post_refused_caps ();
    return flow;
  }
  GstClockTime pts = GST_BUFFER_PTS (item.batch);
  const GstClockTime duration = GST_BUFFER_DURATION (item.batch);
  item.release ();
  if (!GST_CLOCK_TIME_IS_VALID (pts)) {
    if (gap_sent_)
      return GST_FLOW_OK;       /* one untimed gap is enough to preroll */
    pts = 0;
  }
  gap_sent_ = true;
  /* Its result is not the stream's: with packet-records=false the src pad
   * may well be unlinked (flows alone), and the batches must go on. */
  gst_pad_push_event (srcpad_, gst_event_new_gap (pts, duration));
  return GST_FLOW_OK;
}

/* Downstream refused the results caps (a sticky CAPS event it refuses
 * fails the first buffer after it, not the event): says which caps, what
 * downstream takes, and what decap has to do with it, once a run. */
void
GppBatchRunner::post_refused_caps ()
{
  if (refused_caps_posted_)
    return;
  refused_caps_posted_ = true;
  GstCaps *caps = gst_pad_get_current_caps (srcpad_);
  GstCaps *peer = gst_pad_peer_query_caps (srcpad_, NULL);
  gchar *ours = caps ? gst_caps_to_string (caps) : g_strdup ("none");
  gchar *theirs = peer ? gst_caps_to_string (peer) : g_strdup ("nothing");
  GST_ELEMENT_ERROR (element_, CORE, NEGOTIATION, ("The element after gpupacketproc does not "
          "accept its results, %s (not-negotiated). decap=none writes record-size=%d, "
          "decap=inner record-size=%d (each record's tunnels in a plane after the records), "
          "which a reader of %d-byte records refuses: set decap=none, or link an element "
          "that reads them (packetresultenc, pcapsink).", ours, GPP_RESULTS_RECORD_SIZE,
          GPP_RESULTS_RECORD_SIZE_TUNNELS, GPP_RESULTS_RECORD_SIZE),
      ("downstream accepts %s", theirs));
  g_free (ours);
  g_free (theirs);
  if (peer)
    gst_caps_unref (peer);
  if (caps)
    gst_caps_unref (caps);
}

/* The GPU engines read whole 16-byte words of pinned memory: a batch from
 * our pool is used where it lies, and so is one in memory the GPU reads at
 * its host address (afxdpsrc's frames in place) by the modes that read
 * batches through the mapping; anything else is copied into the pool, its
 * packets packed when they lie apart. */
GstFlowReturn
GppBatchRunner::stage_in_pool (PendingItem & item, guint pool_size_mib)
{
  const guint8 *data = item.batch_map.data;
  gsize size = item.batch_map.size;
  GstMemory *mem = gst_buffer_n_memory (item.batch) == 1 ?
      gst_buffer_peek_memory (item.batch, 0) : NULL;
  const gpp::Mode mode = item.mode;
  const bool reads_mapped = mode == gpp::Mode::ZeroCopy || mode == gpp::Mode::Persistent;
  const bool aligned = mem && reinterpret_cast<uintptr_t> (data) % 16 == 0;
  if (aligned && gpp_pinned_allocator_owns (dispatch_.pools.input (), mem))
    return GST_FLOW_OK;
  const uint32_t count = reinterpret_cast<const GppBatchHeader *> (data)->packet_count;
  const gsize packed_size = gpp::BatchBuilder::subset_size (data, nullptr, count);
  if (aligned && reads_mapped && gpp_memory_is_device_mapped (mem)) {
    item.span_unread = size > packed_size ? size - packed_size : 0;
    return GST_FLOW_OK;
  }
  const bool pack = packed_size < size;
  if (pack)
    size = packed_size;
  if (size > gpp_pinned_allocator_capacity (dispatch_.pools.input ())) {
    if (settle_before_error ())
      GST_ELEMENT_ERROR (element_, RESOURCE, NO_SPACE_LEFT, ("A %" G_GSIZE_FORMAT "-byte "
              "batch does not fit the %u MiB pinned pool; raise pool-size or lower "
              "batch-size.", size, pool_size_mib), (NULL));
    return GST_FLOW_ERROR;
  }
  auto mark = std::chrono::steady_clock::now ();
  GstMemory *pinned = gpp_pinned_allocator_alloc_wait (dispatch_.pools.input (), size,
      results_.flushing_flag ());
  item.times.pool_wait += lap_ns (mark);
  if (!pinned)
    return GST_FLOW_FLUSHING;
  GstBuffer *staging = gst_buffer_new ();
  gst_buffer_append_memory (staging, pinned);
  GstMapInfo staged;
  gst_buffer_map (staging, &staged, GST_MAP_WRITE);
  if (pack)
    gpp::BatchBuilder::write_subset (data, nullptr, count, staged.data);
  else
    memcpy (staged.data, data, size);
  gst_buffer_unmap (item.batch, &item.batch_map);
  item.staging = staging;       /* the item now holds the pinned copy's map */
  item.batch_map = staged;
  stats_.add_copied (size);
  return GST_FLOW_OK;
}

/* The batch's results buffer (its records, and with decap their tunnel
 * plane), mapped: from the pinned results pool for the GPU engines (which
 * write it), in ordinary memory for mode=cpu. */
GstFlowReturn
GppBatchRunner::map_results (PendingItem & item, const GppBatchSettings & batch)
{
  const gsize results_size = gpp::results_bytes (item.count, batch.config);
  if (!gpp::is_gpu_mode (dispatch_.engine ()->mode ())) {
    map_heap_results (item, results_size);
    return GST_FLOW_OK;
  }
  if (results_size > gpp_pinned_allocator_capacity (dispatch_.pools.results ())) {
    if (settle_before_error ())
      GST_ELEMENT_ERROR (element_, RESOURCE, NO_SPACE_LEFT, ("The results of a %u-packet "
              "batch (%" G_GSIZE_FORMAT " bytes) do not fit the %zu MiB results pool; raise "
              "pool-size or lower batch-size.", item.count, results_size,
              dispatch_.pools.results_bytes () >> 20), (NULL));
    return GST_FLOW_ERROR;
  }
  auto mark = std::chrono::steady_clock::now ();
  GstMemory *results_mem = take_spare_results (results_size);
  if (!results_mem)
    results_mem = gpp_pinned_allocator_alloc_wait (dispatch_.pools.results (), results_size,
        results_.flushing_flag ());
  item.times.pool_wait += lap_ns (mark);
  if (!results_mem)
    return GST_FLOW_FLUSHING;
  item.results = gst_buffer_new ();
  gst_buffer_append_memory (item.results, results_mem);
  gst_buffer_map (item.results, &item.results_map, GST_MAP_WRITE);
  return GST_FLOW_OK;
}

GstMemory *
GppBatchRunner::take_spare_results (gsize size)
{
  GstMemory *spare = std::exchange (spare_results_, nullptr);
  if (spare && spare->maxsize >= size) {
    gst_memory_resize (spare, 0, size);
    return spare;
  }
  if (spare)
    gst_memory_unref (spare);
  return nullptr;
}

void
GppBatchRunner::keep_spare_results (gsize size)
{
  if (spare_results_ || !dispatch_.pools.results ())
    return;
  try {
    spare_results_ = gpp_pinned_allocator_try_alloc (dispatch_.pools.results (), size);
  } catch (const std::bad_alloc &) {
    /* Only a head start for the next batch, which then allocates. */
  }
}

void
GppBatchRunner::drop_spare_results ()
{
  if (spare_results_)
    gst_memory_unref (std::exchange (spare_results_, nullptr));
}

GstFlowReturn
GppBatchRunner::submit (PendingItem item, const GppBatchSettings & batch,
    std::chrono::steady_clock::time_point entry)
{
  const guint8 *data = item.batch_map.data;
  const gpp::Mode mode = batch.mode;
  item.mode = mode;
  item.entry = entry;
  item.count = reinterpret_cast<const GppBatchHeader *> (data)->packet_count;
  item.bytes = captured_bytes (data);
  item.first_capture_ns = live_capture_ns (data);

  gpp::Engine *engine = dispatch_.engine ();
  GstFlowReturn ready = gpp::is_gpu_mode (engine->mode ()) ?
      stage_in_pool (item, batch.pool_size_mib) : GST_FLOW_OK;
  if (ready == GST_FLOW_OK)
    ready = map_results (item, batch);
  if (ready != GST_FLOW_OK)
    return ready;

  auto mark = std::chrono::steady_clock::now ();
  if (!results_.reserve (engine->slots ()))
    return GST_FLOW_FLUSHING;
  item.times.slot_wait = lap_ns (mark);
  std::string error;
  bool started;
  /* A throw (an allocation deep in the engine) is a batch that could not
   * start like any other: the reservation must not outlive it (a drain or
   * FLUSH_STOP would wait for it for ever), and the batches before it still
   * leave first. */
  try {
    started = engine->submit (item.batch_map.data, item.batch_map.size, item.count,
        batch.config, reinterpret_cast<GppResult *> (item.results_map.data), &error);
  } catch (const std::exception & e) {
    started = false;
    error = e.what ();
  } catch (...) {
    started = false;
    error = "an unknown exception";
  }
  item.times.engine = lap_ns (mark);
  if (!started) {
    item.release ();
    results_.cancel_reservation ();
    /* The batches before this one are pushed before the error is posted: an
     * application stops the pipeline when it hears of it.  A failure the
     * task has already posted (the same device loss) is not posted twice. */
    if (settle_before_error ())
      GST_ELEMENT_ERROR (element_, STREAM, FAILED, ("Could not start a batch in mode=%s.",
              gpp::mode_name (mode)), ("%s", error.c_str ()));
    return GST_FLOW_ERROR;
  }
  item.records_written = engine->writes_records ();
  /* An engine counts a batch's size as bytes to the device; a batch of
   * frames in place is read packet by packet, not as its span (to the end of
   * the capture's mapping).  Shards count the packed shares they copy. */
  if (item.span_unread && gpp::shard_figures (*engine).empty ())
    stats_.add_span_unread (item.span_unread);
  /* A table on the GPU: the batch counts itself there; flows that ended
   * before it go out now (a due sweep waits for this batch's update). */
  const bool count_flows = flows_.on_device ();
  const uint32_t packets = item.count;
  const uint64_t latest_ns = count_flows ? latest_packet_ns (item.batch_map.data) : 0;
  GstFlowReturn flow;
  if (batch.low_latency) {
    /* low-latency: nothing else is in flight (the chain drained the queue),
     * so this thread finishes the batch itself, in order, with no hop. */
    stats_.note_in_flight (1);
    try {
      flow = finish (item);
    } catch (...) {
      results_.done (GST_FLOW_ERROR);
      throw;
    }
    results_.done (flow);
  } else {
    guint in_flight;
    item.enqueued = mark;
    flow = results_.enqueue (std::move (item), &in_flight);
    stats_.note_in_flight (in_flight);
  }
  if (count_flows && flow == GST_FLOW_OK)
    flow = flows_.added (packets, latest_ns);
  /* While the GPU works (or, with low-latency, before the next batch
   * comes): the next batch's results memory, as large as this one's. */
  if (flow == GST_FLOW_OK && gpp::is_gpu_mode (mode))
    keep_spare_results (gpp::results_bytes (packets, batch.config));
  return flow;
}

/* Waits for the oldest batch on the engine (`item`), retires its slot and
 * pushes its results: from the src pad task, or from the chain with
 * low-latency.  The caller then reports the flow to the queue (done()). */
GstFlowReturn
GppBatchRunner::finish (PendingItem & item)
{
  auto mark = std::chrono::steady_clock::now ();
  if (item.enqueued != std::chrono::steady_clock::time_point ())
    item.times.queued = std::chrono::duration_cast<std::chrono::nanoseconds> (
        mark - item.enqueued).count ();
  std::string error;
  /* Also when flushing: the GPU owns the memory until the batch is done. */
  const bool ok = dispatch_.engine ()->wait_oldest (&error);
  item.times.engine += lap_ns (mark);
  const bool failed_before = results_.retire_slot ();
  if (!ok || failed_before) {
    /* After a failed batch the stream has a hole: the batches behind it
     * are retired, not pushed, and only the first failure is posted. */
    if (!failed_before)
      GST_ELEMENT_ERROR (element_, STREAM, FAILED, ("GPU processing failed in mode %s.",
              gpp::mode_name (item.mode)), ("%s", error.c_str ()));
    item.release ();
    return GST_FLOW_ERROR;
  }
  const auto *records = item.records_written ?
      reinterpret_cast<const GppResult *> (item.results_map.data) : nullptr;
  account (item.mode, records, item.count, item.bytes, item.entry, item.first_capture_ns);
  if (results_.flushing ()) {
    item.release ();
    return GST_FLOW_OK;         /* the flush, not this batch, ends the stream */
  }
  return flow_and_push (item, records, item.count, mark);
}

void
GppBatchRunner::loop_once ()
{
  PendingItem item;
  if (!results_.pop (item, [this] { gst_pad_pause_task (srcpad_); }))
    return;

  GstFlowReturn flow = GST_FLOW_OK;
  if (item.event) {
    GstEvent *event = item.take_event ();
    if (results_.flushing ())
      gst_event_unref (event);
    else
      gst_pad_push_event (srcpad_, event);
  } else {
    flow = finish (item);
  }
  results_.done (flow);
}

bool
GppBatchRunner::forward_serialized (GstEvent * event)
{
  if (results_.enqueue_event_if_busy (event))
    return true;
  return gst_pad_push_event (srcpad_, event);
}

void
GppBatchRunner::stop_flushing ()
{
  results_.stop_flushing ();
  idle_engine ();
  flows_.flushed ();
  gap_sent_ = false;
}

GstStructure *
GppBatchRunner::make_stats (GppLiveFigures & live)
{
  live.in_flight = results_.in_flight ();
  GstStructure *stats = dispatch_.make_stats (live, stats_);
  flows_.add_stats (stats);
  return stats;
}

void
GppBatchRunner::retire_all ()
{
  for (PendingItem item; results_.take_front (item); item.release ()) {
    if (!item.event) {
      std::string ignored;
      dispatch_.engine ()->wait_oldest (&ignored);
    }
  }
  drop_spare_results ();
  dispatch_.release (stats_);
}
