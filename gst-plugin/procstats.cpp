#include "procstats.h"

bool
GppProcStats::account (gpp::Mode mode, const GppResult * records, uint32_t count,
    guint64 bytes, guint64 latency_ns, bool has_capture_latency, guint64 capture_latency_ns)
{
  guint64 malformed = 0;
  for (uint32_t i = 0; records && i < count; i++)
    malformed += records[i].status != 0;
  std::lock_guard<std::mutex> guard (lock_);
  batches_++;
  packets_ += count;
  bytes_ += bytes;
  malformed_ += malformed;
  const int m = static_cast<int> (mode);
  latency_.add (latency_ns);
  mode_latency_[m].add (latency_ns);
  if (has_capture_latency)
    capture_latency_.add (capture_latency_ns);
  const guint64 n = ++mode_batches_[m];
  if (n != kLatencyMeasuredBatches &&
      (n < kLatencyMeasuredBatches || n % kLatencyRecheckBatches != 0))
    return false;
  const guint64 p99 = mode_latency_[m].percentile (99);
  const guint64 was = announced_latency_[m];
  const bool measured =
      n == kLatencyMeasuredBatches || p99 > was + was / 4 || p99 < was - was / 4;
  if (measured)
    announced_latency_[m] = p99;
  return measured;
}

void
GppProcStats::add_copied (guint64 bytes)
{
  std::lock_guard<std::mutex> guard (lock_);
  copied_batches_++;
  copied_bytes_ += bytes;
}

void
GppProcStats::add_span_unread (guint64 bytes)
{
  std::lock_guard<std::mutex> guard (lock_);
  span_unread_ += bytes;
}

void
GppProcStats::add_times (const GppBatchTimes & t)
{
  std::lock_guard<std::mutex> guard (lock_);
  times_.pool_wait += t.pool_wait;
  times_.slot_wait += t.slot_wait;
  times_.queued += t.queued;
  times_.engine += t.engine;
  times_.push += t.push;
}

/* Adds `from` to `into` shard by shard; a place that held another device
 * (device-ids changed) starts again from `from`'s figures. */
static void
add_shards (std::vector<gpp::ShardFigures> & into, const std::vector<gpp::ShardFigures> & from)
{
  if (into.size () < from.size ())
    into.resize (from.size (), gpp::ShardFigures { -1, 0, {} });
  for (size_t k = 0; k < from.size (); k++) {
    gpp::ShardFigures & f = into[k];
    if (f.device_id != from[k].device_id) {
      f = from[k];
      continue;
    }
    f.packets += from[k].packets;
    f.traffic.bytes_h2d += from[k].traffic.bytes_h2d;
    f.traffic.bytes_d2h += from[k].traffic.bytes_d2h;
  }
}

void
GppProcStats::add_engine_traffic (guint64 h2d, guint64 d2h,
    const std::vector<gpp::ShardFigures> & shards)
{
  std::lock_guard<std::mutex> guard (lock_);
  bytes_h2d_ += h2d;
  bytes_d2h_ += d2h;
  add_shards (shards_, shards);
}

void
GppProcStats::note_in_flight (guint in_flight)
{
  std::lock_guard<std::mutex> guard (lock_);
  max_in_flight_ = MAX (max_in_flight_, in_flight);
}

GstClockTime
GppProcStats::processing_latency (gpp::Mode mode)
{
  const int m = static_cast<int> (mode);
  std::lock_guard<std::mutex> guard (lock_);
  if (mode_batches_[m] < kLatencyMeasuredBatches)
    return kDefaultProcessingLatency;
  return mode_latency_[m].percentile (99);
}

void
GppProcStats::reset ()
{
  std::lock_guard<std::mutex> guard (lock_);
  batches_ = packets_ = bytes_ = malformed_ = copied_batches_ = copied_bytes_ = 0;
  bytes_h2d_ = bytes_d2h_ = span_unread_ = 0;
  shards_.clear ();
  max_in_flight_ = 0;
  times_ = {};
  latency_.clear ();
  capture_latency_.clear ();
  for (int m = 0; m < gpp::kModeCount; m++) {
    mode_latency_[m].clear ();
    mode_batches_[m] = 0;
    announced_latency_[m] = 0;
  }
}

GstStructure *
GppProcStats::to_structure (const GppLiveFigures & live)
{
  std::lock_guard<std::mutex> guard (lock_);
  /* Added after the engine counted the batch: never more than it counted. */
  const guint64 counted_h2d = bytes_h2d_ + live.engine_h2d;
  const guint64 bytes_to_device = counted_h2d - MIN (span_unread_, counted_h2d);
  GstStructure *stats = gst_structure_new ("application/x-gpupacketproc-stats",
      "active-mode", G_TYPE_STRING, live.active_mode,
      "batches", G_TYPE_UINT64, batches_,
      "packets", G_TYPE_UINT64, packets_,
      "bytes", G_TYPE_UINT64, bytes_,
      "malformed", G_TYPE_UINT64, malformed_,
      "latency-p50-ns", G_TYPE_UINT64, latency_.percentile (50),
      "latency-p99-ns", G_TYPE_UINT64, latency_.percentile (99),
      "latency-p999-ns", G_TYPE_UINT64, latency_.percentile (99.9),
      "latency-max-ns", G_TYPE_UINT64, latency_.percentile (100),
      "capture-latency-p50-ns", G_TYPE_UINT64, capture_latency_.percentile (50),
      "capture-latency-p99-ns", G_TYPE_UINT64, capture_latency_.percentile (99),
      "capture-latency-p999-ns", G_TYPE_UINT64, capture_latency_.percentile (99.9),
      "capture-latency-max-ns", G_TYPE_UINT64, capture_latency_.percentile (100),
      "batches-in-flight", G_TYPE_UINT, live.in_flight,
      "max-batches-in-flight", G_TYPE_UINT, max_in_flight_,
      "time-pool-wait-ns", G_TYPE_UINT64, times_.pool_wait,
      "time-slot-wait-ns", G_TYPE_UINT64, times_.slot_wait,
      "time-queued-ns", G_TYPE_UINT64, times_.queued,
      "time-engine-ns", G_TYPE_UINT64, times_.engine,
      "time-push-ns", G_TYPE_UINT64, times_.push,
      "bytes-to-device", G_TYPE_UINT64, bytes_to_device,
      "bytes-from-device", G_TYPE_UINT64, bytes_d2h_ + live.engine_d2h,
      "copied-batches", G_TYPE_UINT64, copied_batches_,
      "copied-bytes", G_TYPE_UINT64, copied_bytes_,
      "pool-fallbacks", G_TYPE_UINT64, live.pool_fallbacks,
      "pool-bytes-in-use", G_TYPE_UINT64, live.pool_in_use,
      "pool-bytes-pinned", G_TYPE_UINT64, live.pool_pinned,
      "acl-rule-count", G_TYPE_UINT, live.acl_rules,
      "acl-bytes", G_TYPE_UINT64, live.acl_bytes,
      "dpi-pattern-count", G_TYPE_UINT, live.dpi_patterns,
      "dpi-bytes", G_TYPE_UINT64, live.dpi_bytes, NULL);
  /* device-ids: each shard's device and what it carried, the engines
   * already destroyed included. */
  std::vector<gpp::ShardFigures> shards = shards_;
  add_shards (shards, live.shards);
  for (size_t k = 0; k < shards.size (); k++) {
    const gpp::ShardFigures & f = shards[k];
    gchar *prefix = g_strdup_printf ("shard-%zu", k);
    gchar *device = g_strconcat (prefix, "-device-id", NULL);
    gchar *packets = g_strconcat (prefix, "-packets", NULL);
    gchar *h2d = g_strconcat (prefix, "-bytes-to-device", NULL);
    gchar *d2h = g_strconcat (prefix, "-bytes-from-device", NULL);
    gst_structure_set (stats, device, G_TYPE_INT, f.device_id, packets, G_TYPE_UINT64,
        f.packets, h2d, G_TYPE_UINT64, f.traffic.bytes_h2d, d2h, G_TYPE_UINT64,
        f.traffic.bytes_d2h, NULL);
    g_free (prefix);
    g_free (device);
    g_free (packets);
    g_free (h2d);
    g_free (d2h);
  }
  for (int m = 0; m < gpp::kModeCount; m++) {
    if (!mode_batches_[m])
      continue;
    const char *name = gpp::mode_name (static_cast<gpp::Mode> (m));
    gchar *key = g_strdup_printf ("%s-batches", name);
    gst_structure_set (stats, key, G_TYPE_UINT64, mode_batches_[m], NULL);
    g_free (key);
    const struct { const char *suffix; double p; } pcts[] = {
      {"p50", 50}, {"p99", 99}, {"p999", 99.9}};
    for (const auto & pct : pcts) {
      key = g_strdup_printf ("%s-latency-%s-ns", name, pct.suffix);
      gst_structure_set (stats, key, G_TYPE_UINT64, mode_latency_[m].percentile (pct.p), NULL);
      g_free (key);
    }
  }
  return stats;
}
