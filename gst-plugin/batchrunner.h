/* gpupacketproc's streaming side, from READY→PAUSED to PAUSED→READY: a
 * validated batch from the chain to its results on the src pad.  It owns
 * the flow output, the mode dispatcher (engine and pinned pools) and the
 * ordered result queue, and does what happens to a batch: staging it into
 * the pinned pool, submitting it, finishing it (on the src pad task, or on
 * the chain's thread for engines that complete inline and with
 * low-latency), counting it into the stats and pushing its results.  The
 * element shell (gstgpupacketproc.cpp) keeps the GObject, the properties,
 * the pads, the state changes and a chain that validates a batch and
 * snapshots the settings it runs with (GppBatchSettings), and reaches the
 * streaming side only through the methods here.  Errors are posted on
 * `element`. */
#pragma once

#include <gst/gst.h>

#include <chrono>
#include <string>

#include "engine.h"
#include "flowoutput.h"
#include "modedispatch.h"
#include "procsettings.h"
#include "procstats.h"
#include "resultqueue.h"
#include "resultspool.h"

class GppBatchRunner
{
public:
  GppBatchRunner (GstElement * element, GstPad * srcpad, GstPad * flows_pad,
      GppProcStats & stats)
      : flows_ (flows_pad), element_ (element), srcpad_ (srcpad), stats_ (stats) {}
  ~GppBatchRunner () { drop_spare_results (); }

  /* ---- set-up (READY→PAUSED) ---- */

  /* Starts the flow meter (flows=true), allocates the pinned pools where a
   * GPU is usable and builds the first engine.  FALSE, with the error
   * posted, when the element cannot start so; a throw leaves as a throw. */
  bool start (const GppStartSettings & settings);

  /* ---- batches (the chain) ---- */

  /* Asks upstream once per stream, through `sinkpad`, whether it is live:
   * capture-to-result latency means something only then (a file's
   * timestamps are old). */
  void learn_liveness (GstPad * sinkpad);
  /* The first failed flow of a batch in flight, or OK. */
  GstFlowReturn last_flow () { return results_.last_flow (); }
  /* Runs `item`'s validated batch with `batch`: makes the engine in use the
   * one it needs (see prepare), then runs it inline or submits it (see
   * run_inline and submit).  Whatever `item` holds goes with it. */
  GstFlowReturn process (PendingItem item, GppBatchSettings batch,
      std::chrono::steady_clock::time_point entry);
  /* Waits until every queued item is out; FALSE when a flush interrupts. */
  bool drain () { return results_.drain (); }
  /* The pinned pool offered upstream in the ALLOCATION query, or NULL. */
  GstAllocator *input_pool () { return dispatch_.pools.input (); }

  /* ---- the src pad task, events, flushing ---- */

  /* The src pad task starts: results flow again. */
  void task_starting () { results_.reset (); }
  /* One turn of the src pad task: pushes the next queued result or event
   * in order (pauses the task when stopping). */
  void loop_once ();
  /* Queues a serialized event behind the batches in flight, or sends it now. */
  bool forward_serialized (GstEvent * event);
  /* Starts flushing: wakes every wait that flushing ends (batch slots, the
   * task, and a chain waiting for pinned pool room), at once. */
  void set_flushing ()
  {
    results_.start_flushing ();
    dispatch_.pools.wake ();
  }
  /* FLUSH_STOP: waits until the task has retired what the GPU still held
   * (discarding it) and idles the engine; then open flows are dropped, and
   * with packet-records=false the next batch sends an untimed gap again (a
   * flushing seek makes the sinks preroll again).  The task is paused; the
   * caller starts it again. */
  void stop_flushing ();
  /* EOS, every batch drained: the resident kernel, if any, stops (the next
   * batch starts it again), and every open flow ends with the stream, its
   * records pushed before the EOS. */
  void end_stream ()
  {
    idle_engine ();
    flows_.finish ();
  }
  /* Pads inactive, task stopped: retires what the GPU still holds and
   * releases the engine. */
  void retire_all ();

  /* The stats with this run's live figures (in flight, the engine's share,
   * the flow meter's), from any thread while the runner exists. */
  GstStructure *make_stats (GppLiveFigures & live);

private:
  /* flows=true: the flow meter and the flows pad.  Before the engine: an
   * engine may hold its table, so the engine goes first. */
  GppFlowOutput flows_;
  /* The engine, its settings and the pinned pools. */
  GppModeDispatch dispatch_;
  /* The ordered hand-off of results to the src pad task. */
  GppResultQueue results_;

  GstElement *element_;
  GstPad *srcpad_;
  GppProcStats & stats_;

  /* Whether upstream is live (asked once, streaming thread); -1: not asked. */
  int upstream_live_ = -1;
  bool gap_sent_ = false;       /* packet-records=false: a gap went out since the last flush */
  bool refused_caps_posted_ = false;
  GppResultsPool heap_results_; /* mode=cpu's results */
  /* Pinned results memory taken after a batch for the next one (GPU
   * modes): the pool's allocator is then off the next batch's way. */
  GstMemory *spare_results_ = nullptr;

  /* Allocates the pinned pools where a GPU is usable, the results pool for
   * results of `record_size` bytes a packet; without one, mode=cpu still
   * works and GPU modes explain why they cannot start.  FALSE, with the
   * error posted, when `mode` cannot run. */
  bool open_pools (gpp::Mode mode, int device, guint pool_size_mib, gpp::HostMemoryKind kind,
      guint record_size);
  /* Builds the engine of `mode` the settings ask for (after the old one
   * drained) and places the flow table where it runs; FALSE, posted. */
  bool switch_engine (gpp::Mode mode, const gpp::EngineSettings & settings);
  /* Idles the engine once nothing is in flight (EOS, flush): a persistent
   * kernel would otherwise keep a GPU and a host core polling.  Its
   * allocations stay: the next batch only relaunches it. */
  void idle_engine ();
  /* Makes the engine in use the one a batch in `mode` with `settings`
   * needs.  Everything in flight leaves first (nothing lost or reordered)
   * when the engine changes, and when this batch will finish on the
   * calling thread (an inline engine, low-latency) behind queued ones.
   * FLUSHING when a flush ends that wait; ERROR, posted, when no engine. */
  GstFlowReturn prepare (gpp::Mode mode, const gpp::EngineSettings & settings, bool low_latency);
  /* Runs `item`'s batch on an engine that completes inline and pushes its
   * results from this thread.  Whatever `item` holds goes with it. */
  GstFlowReturn run_inline (PendingItem & item, const gpp::CoreConfig & config,
      std::chrono::steady_clock::time_point entry);
  /* Hands `item`'s batch to the GPU engine and queues it for the task, or,
   * with low-latency (nothing in flight), finishes it on this thread. */
  GstFlowReturn submit (PendingItem item, const GppBatchSettings & batch,
      std::chrono::steady_clock::time_point entry);
  GstFlowReturn stage_in_pool (PendingItem & item, guint pool_size_mib);
  GstFlowReturn map_results (PendingItem & item, const GppBatchSettings & batch);
  /* The spare results memory resized to `size` bytes, or NULL when there
   * is none that large (one too small goes back to the pool). */
  GstMemory *take_spare_results (gsize size);
  /* A spare of `size` bytes for the next batch, if the pool has room now. */
  void keep_spare_results (gsize size);
  void drop_spare_results ();
  void map_heap_results (PendingItem & item, gsize results_size);
  GstFlowReturn finish (PendingItem & item);
  GstFlowReturn flow_and_push (PendingItem & item, const GppResult * records, uint32_t count,
      std::chrono::steady_clock::time_point mark);
  GstFlowReturn push_results (PendingItem & item);
  void post_refused_caps ();
  bool settle_before_error ();
  void account (gpp::Mode mode, const GppResult * records, uint32_t count, guint64 bytes,
      std::chrono::steady_clock::time_point entry, guint64 capture_ns);
  guint64 live_capture_ns (const uint8_t * batch) const;
};
