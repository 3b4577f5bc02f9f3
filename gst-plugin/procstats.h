/* gpupacketproc's statistics: the counters and latency windows behind its
 * `stats` property, and the processing latency it answers LATENCY queries
 * with.  Thread-safe: the streaming threads count, any thread reads. */
#pragma once

#include <gst/gst.h>

#include <mutex>
#include <vector>

#include <gpupacket/packet-result.h>

#include "engine.h"
#include "latencywindow.h"
#include "sharded_engine.h"

/* Where a batch's time went between the chain's entry and the end of its
 * push, ns (the stats sum them over batches). */
struct GppBatchTimes
{
  guint64 pool_wait = 0;        /* the chain waiting for pinned pool room (a copy, results) */
  guint64 slot_wait = 0;        /* the chain waiting for an engine slot (all were in flight) */
  guint64 queued = 0;           /* started, queued behind earlier batches for the push task */
  guint64 engine = 0;           /* in the engine: its submit, and the wait for the batch */
  guint64 push = 0;             /* host flow metering and the push downstream */
};

/* What only the element knows when the stats are read: its engine, pools
 * and rule sets at that moment. */
struct GppLiveFigures
{
  const char *active_mode = "none";
  guint in_flight = 0;
  guint64 engine_h2d = 0, engine_d2h = 0;  /* of the engine in use */
  guint64 pool_fallbacks = 0, pool_in_use = 0, pool_pinned = 0;
  guint acl_rules = 0;
  guint64 acl_bytes = 0;
  guint dpi_patterns = 0;
  guint64 dpi_bytes = 0;
  std::vector<gpp::ShardFigures> shards;  /* device-ids: each device's share */
};

class GppProcStats
{
public:
  /* Processing latency reported for a mode before it has run this many
   * batches (enough that its p99 is not just the slowest warm-up batch);
   * from then on its measured p99 (chain entry to result push),
   * re-announced when it drifts by more than a quarter (checked every
   * kLatencyRecheckBatches batches). */
  static constexpr GstClockTime kDefaultProcessingLatency = 2 * GST_MSECOND;
  static constexpr guint64 kLatencyMeasuredBatches = 128;
  static constexpr guint64 kLatencyRecheckBatches = 1024;

  /* Counts a finished batch: `latency_ns` from chain entry to push,
   * `capture_latency_ns` from its first packet's capture (live sources
   * only, else `has_capture_latency` is false).  `records` NULL: the engine
   * left them on the GPU (packet-records=false), nothing malformed is
   * counted.  TRUE when the mode's
   * latency was just measured or moved: the element then posts a LATENCY
   * message. */
  bool account (gpp::Mode mode, const GppResult * records, uint32_t count, guint64 bytes,
      guint64 latency_ns, bool has_capture_latency, guint64 capture_latency_ns);
  void add_copied (guint64 bytes);
  /* Bytes an engine counted as sent to the device that it did not read (a
   * batch of frames in place: its span, less what its packets hold). */
  void add_span_unread (guint64 bytes);
  /* A pushed batch's times (account () came before its push). */
  void add_times (const GppBatchTimes & times);
  /* Copy traffic of an engine about to be destroyed, and with device-ids
   * each of its shards' figures (kept, and added to a later engine's with
   * the same device at the same place). */
  void add_engine_traffic (guint64 h2d, guint64 d2h,
      const std::vector<gpp::ShardFigures> & shards);
  void note_in_flight (guint in_flight);
  GstClockTime processing_latency (gpp::Mode mode);
  GstStructure *to_structure (const GppLiveFigures & live);
  void reset ();

private:
  std::mutex lock_;
  guint64 batches_ = 0;
  guint64 packets_ = 0;
  guint64 bytes_ = 0;           /* captured packet bytes processed */
  guint64 malformed_ = 0;       /* packets with any status flag */
  guint64 copied_batches_ = 0;  /* batches copied into the pinned pool */
  guint64 copied_bytes_ = 0;
  guint64 bytes_h2d_ = 0, bytes_d2h_ = 0;  /* of engines already destroyed */
  guint64 span_unread_ = 0;     /* counted in bytes_h2d by engines, not read */
  std::vector<gpp::ShardFigures> shards_;   /* likewise, per shard */
  guint max_in_flight_ = 0;
  GppBatchTimes times_;         /* summed over batches */
  LatencyWindow latency_;       /* chain entry to result push, ns, all modes */
  LatencyWindow mode_latency_[gpp::kModeCount];
  guint64 mode_batches_[gpp::kModeCount] = {};
  guint64 announced_latency_[gpp::kModeCount] = {}; /* p99 last posted in a LATENCY message */
  LatencyWindow capture_latency_; /* first packet's capture to result push, wall clock */
};
