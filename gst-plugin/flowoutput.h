/* gpupacketproc's flow output: with flows=true, the flow meter
 * (gpu/flow_meter.h) that every finished batch's records feed, and the
 * "flows" source pad its records leave by (application/x-flow-records, one
 * GppFlowRecord each).  One streaming thread at a time adds (the chain in
 * mode=cpu or with low-latency, else the push task; a mode switch drains
 * first); the stats are read from any thread. */
#pragma once

#include <gst/gst.h>

#include <memory>
#include <mutex>
#include <vector>

#include <gpupacket/flow-record.h>

#include "flow_meter.h"

#define GPP_FLOW_CAPS_NAME "application/x-flow-records"

class GppFlowOutput
{
public:
  explicit GppFlowOutput (GstPad * pad) : pad_ (pad) {}

  /* READY→PAUSED with flows=true: a fresh table. */
  void start (const gpp::FlowSettings & settings);
  /* PAUSED→READY: the table goes, open flows with it. */
  void stop ();
  bool enabled () const { return meter_ != nullptr; }

  /* Counts a finished batch; pushes the records of flows that ended.  The
   * pad's flow (NOT_LINKED is fine: an unlinked flows pad just drops its
   * records). */
  GstFlowReturn add (const GppResult * records, uint32_t count);
  /* EOS: every open flow ends (forced) and goes out, then EOS follows on
   * the pad (the caller sends it). */
  GstFlowReturn finish ();
  /* FLUSH_STOP: open flows are dropped (counted in flows-dropped), the pad
   * starts a new segment. */
  void flushed ();

  /* The flow fields of gpupacketproc's stats. */
  void add_stats (GstStructure * stats);

private:
  /* stream-start, caps, a TIME segment and a gap, once per stream. */
  void start_stream ();
  GstFlowReturn push (std::vector<GppFlowRecord> & records);
  void publish_counters ();

  GstPad *pad_;
  std::unique_ptr<gpp::FlowMeter> meter_;
  bool segment_sent_ = false;
  guint64 dropped_ = 0;         /* open flows a flush dropped */
  std::vector<GppFlowRecord> ended_;

  std::mutex stats_lock_;       /* what the stats read */
  gpp::FlowCounters published_;
  guint64 published_dropped_ = 0;
  guint64 table_bytes_ = 0;
  bool published_enabled_ = false;
};
