/* gpupacketproc's flow output: with flows=true, the flow meter
 * (gpu/flow_meter.h) and the "flows" source pad its records leave by
 * (application/x-flow-records, one GppFlowRecord each).  The table lives
 * where the engine in use says (place(), Engine::flow_device()): in host
 * memory for cpu, fed each finished batch's records (add()); in the GPU's
 * memory for the GPU modes, where each batch counts itself and the chain
 * reports it (added()) once it is submitted.  One streaming thread at a
 * time adds (a mode switch drains first); the stats are read from any
 * thread.  Failures (a GPU
 * table's CUDA error) are posted as element errors here. */
#pragma once

#include <gst/gst.h>

#include <memory>
#include <mutex>
#include <vector>

#include <gpupacket/flow-record.h>

#include "engine.h"
#include "flow_meter.h"

#define GPP_FLOW_CAPS_NAME "application/x-flow-records"

class GppFlowOutput
{
public:
  explicit GppFlowOutput (GstPad * pad) : pad_ (pad) {}

  /* READY→PAUSED with flows=true: a fresh table, made where the first
   * engine runs (place()).  `decap`: the element's decap=inner, which the
   * caps say (decap=inner: records keyed by the tunnel id too). */
  void start (const gpp::FlowSettings & settings, bool decap);
  /* PAUSED→READY: the table goes, open flows with it. */
  void stop ();
  bool enabled () const { return enabled_; }
  /* Puts the table where `engine` runs (moving open flows there) and
   * attaches it to the engine if it meters on its device.  FALSE, with the
   * error posted, if the table could not be made or moved. */
  bool place (gpp::Engine * engine);
  /* Whether batches count themselves (a table in the GPU's memory). */
  bool on_device () const { return meter_ && meter_->store ().device () >= 0; }

  /* Counts a finished batch into a host table (a no-op when the table is
   * on the device: the batch counted itself); pushes the records of flows
   * that ended.  The pad's flow (NOT_LINKED is fine: an unlinked flows pad
   * just drops its records).  `tunnels`: the batch's tunnel plane with
   * decap=inner, else nullptr. */
  GstFlowReturn add (const GppResult * records, uint32_t count, const GppTunnelInfo * tunnels);
  /* A submitted batch of `count` packets counts itself into the device
   * table, `latest_ns` its latest packet time; sweeps when one is due. */
  GstFlowReturn added (uint32_t count, uint64_t latest_ns);
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
  GstFlowReturn sweep ();
  void publish_counters ();
  void post_error (const char *what, const std::string & error);

  GstPad *pad_;
  bool enabled_ = false;
  gpp::FlowSettings settings_;
  bool decap_ = false;
  std::unique_ptr<gpp::FlowMeter> meter_;
  bool segment_sent_ = false;
  guint64 dropped_ = 0;         /* open flows a flush dropped */
  std::vector<GppFlowRecord> ended_;

  std::mutex stats_lock_;       /* what the stats read */
  gpp::FlowCounters published_;
  guint64 published_dropped_ = 0;
  guint64 table_bytes_ = 0;
  bool published_enabled_ = false;
  bool published_on_device_ = false;
};
