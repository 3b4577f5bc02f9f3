/* gpupacketproc's ordered hand-off from the chain (which submits batches
 * and queues serialized events) to the src pad task (which waits for each
 * batch and pushes its results, in order): the queue, its lock and
 * condition variables, the engine slots in use, the flushing flag and the
 * first failed flow.  Model: gst-plugins-rs `utils/livesync`'s item queue.
 * Every wait here also ends when flushing starts.
 *
 * Lock discipline (measured: it sets the element's p99): critical sections
 * hold only counters and the deque, never a GStreamer or CUDA call, and
 * waiters are notified after the lock is released where the waiter would
 * otherwise wake into a held lock; the lock is taken spinning first
 * (gpp::spin_lock), as the chain and the task meet on it every batch.  Each
 * side sleeps on a condition variable of its own and is woken only by what
 * it waits for: with low-latency the chain retires every batch itself while
 * the task sleeps, and a shared one woke the task twice a batch for nothing
 * (a futex wake, and the task taking the lock back, in the chain's time). */
#pragma once

#include <gst/gst.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include "acl_rules.h"
#include "dpi_patterns.h"
#include "engine.h"
#include "procstats.h"
#include "spin_lock.h"
#include "gpupacket/gstpacketbatchmeta.h"

/* What a PendingItem holds, as one value: the item moves it whole, so a
 * field added here moves with the rest. */
struct PendingItemFields
{
  GstEvent *event = nullptr;    /* set for events */
  GstBuffer *batch = nullptr;   /* the batch as received (goes into the meta) */
  GstBuffer *staging = nullptr; /* pinned copy of a batch from foreign memory */
  gsize span_unread = 0;        /* frames in place: bytes of the batch's span that are no packet */
  GstMapInfo batch_map {};      /* of staging, or of batch when it is pinned */
  GstBuffer *results = nullptr;
  GstMapInfo results_map {};
  uint32_t count = 0;
  guint64 bytes = 0;
  guint64 first_capture_ns = 0; /* capture time of the batch's first packet */
  std::chrono::steady_clock::time_point entry;
  std::chrono::steady_clock::time_point enqueued;  /* for the push task; unset: finished in the chain */
  GppBatchTimes times;
  gpp::Mode mode = gpp::Mode::Cpu;
  bool push_records = true;     /* packet-records: false pushes a gap instead */
  bool records_written = true;  /* false: the engine left them on the GPU */
  bool decap = false;           /* the results have the tunnel plane (decap=inner) */
  std::shared_ptr<const gpp::AclRuleSet> acl;  /* the sets the batch runs with */
  std::shared_ptr<const gpp::DpiPatternSet> dpi;
};

/* A batch on the GPU, or a serialized event waiting behind batches.  Owns
 * its event, buffers and maps: moved along the queue (the source left
 * empty), and whatever it still holds is released when it is destroyed (a
 * flush, shutdown or failed start drops an item just so). */
struct PendingItem : PendingItemFields
{
  PendingItem () = default;
  explicit PendingItem (GstEvent * e) { event = e; }
  PendingItem (PendingItem && other) noexcept
      : PendingItemFields (std::exchange<PendingItemFields> (other, {})) {}
  PendingItem & operator= (PendingItem && other) noexcept
  {
    if (this != &other) {
      release ();
      PendingItemFields::operator= (std::exchange<PendingItemFields> (other, {}));
    }
    return *this;
  }
  PendingItem (const PendingItem &) = delete;
  PendingItem & operator= (const PendingItem &) = delete;
  ~PendingItem () { release (); }

  GstEvent *take_event () { return std::exchange (event, nullptr); }

  /* The results buffer to push, with the batch's timestamps and meta; the
   * item holds nothing after. */
  GstBuffer *take_results ()
  {
    gst_buffer_unmap (results, &results_map);
    gst_buffer_unmap (staging ? staging : batch, &batch_map);
    batch_map = {};
    gst_clear_buffer (&staging);
    gst_buffer_copy_into (results, batch, GST_BUFFER_COPY_TIMESTAMPS, 0, -1);
    gst_buffer_add_packet_batch_meta (results, batch);
    gst_clear_buffer (&batch);
    return std::exchange (results, nullptr);
  }

  /* Drops whatever part of the item was set up. */
  void release ()
  {
    if (event)
      gst_event_unref (std::exchange (event, nullptr));
    if (results) {
      gst_buffer_unmap (results, &results_map);
      gst_clear_buffer (&results);
    }
    GstBuffer *mapped = staging ? staging : batch;
    if (mapped && batch_map.data)
      gst_buffer_unmap (mapped, &batch_map);
    batch_map = {};
    gst_clear_buffer (&staging);
    gst_clear_buffer (&batch);
  }
};

class GppResultQueue
{
public:
  /* ---- the chain's side ---- */

  /* Waits for one of `slots` engine slots and reserves it and the batch's
   * place in the order, so a flush that starts meanwhile waits for the batch
   * to reach the queue.  FALSE when flushing. */
  bool reserve (unsigned slots);
  /* A reserved batch that could not start. */
  void cancel_reservation ();
  /* Queues a started batch; returns the first failed flow (or OK) and the
   * slots in use. */
  GstFlowReturn enqueue (PendingItem && item, guint * in_flight);
  /* Queues a serialized event behind what is outstanding; FALSE (the
   * caller sends it now) when nothing is. */
  bool enqueue_event_if_busy (GstEvent * event);
  /* Waits until every queued item is out; FALSE when a flush interrupts. */
  bool drain ();
  GstFlowReturn last_flow () { return read (last_flow_); }
  unsigned outstanding () { return read (outstanding_); }
  unsigned in_flight () { return read (in_flight_); }
  bool flushing () const { return flushing_.load (); }
  /* Where the pinned pools wait for room: they stop waiting when it is set. */
  const std::atomic<bool> & flushing_flag () const { return flushing_; }

  /* ---- the task's side ---- */

  /* wait-strategy=spin: the task polls for a while before it sleeps. */
  void set_spin (bool spin) { spin_for_work_ = spin; }
  /* The next item, in order.  When flushing leaves nothing outstanding,
   * calls `pause` (which pauses the task) under the queue's lock, so a
   * FLUSH_STOP, which takes the lock to end the flush, cannot restart the
   * task before it has paused, and returns FALSE. */
  template <typename Pause> bool pop (PendingItem & item, Pause && pause)
  {
    spin_for_work ();
    auto lock = gpp::spin_lock (lock_);
    /* A flush pauses the task only once nothing is outstanding: a batch the
     * chain has reserved a place for is still on its way to the queue. */
    work_.wait (lock, [&] {
          return !queue_.empty () || flush_waits_for_none_locked ();});
    if (queue_.empty ()) {
      pause ();
      return false;
    }
    move_front_locked (item);
    return true;
  }
  /* A batch's slot is free again; TRUE when an earlier batch failed. */
  bool retire_slot ();
  /* An item is out (pushed, dropped or failed with `flow`). */
  void done (GstFlowReturn flow);

  /* ---- flushing and shutdown ---- */

  void start_flushing ();
  /* FLUSH_STOP: waits until the task has retired everything, then flows
   * again. */
  void stop_flushing ();
  /* The pad task starts: flows again. */
  void reset ();
  /* Shutdown, task stopped: the next item left, if any. */
  bool take_front (PendingItem & item);

private:
  void spin_for_work ();
  /* With lock_ held, after outstanding_ fell: whether a flush waits for
   * nothing to be outstanding (the task then pauses). */
  bool flush_waits_for_none_locked () const { return flushing_.load () && outstanding_ == 0; }
  /* An item is out (or never came): the chain may wait for room or a drain;
   * the task only when a flush waits for the last one.  Lock released. */
  void notify_item_out (bool flush_waits)
  {
    room_.notify_all ();
    if (flush_waits)
      work_.notify_all ();
  }
  /* The oldest item into `item`; call with lock_ held and the queue not empty. */
  void move_front_locked (PendingItem & item)
  {
    item = std::move (queue_.front ());
    queue_.pop_front ();
    queued_--;
  }
  template <typename T> T read (const T & field)
  {
    auto lock = gpp::spin_lock (lock_);
    return field;
  }

  std::mutex lock_;
  std::condition_variable work_;  /* the task's: an item queued, or a flush with nothing outstanding */
  std::condition_variable room_;  /* the chain's: a slot retired, an item out, a flush */
  std::deque<PendingItem> queue_;
  std::atomic<unsigned> queued_ {0};  /* queue_.size (), readable without the lock */
  std::atomic<bool> spin_for_work_ {false};
  unsigned outstanding_ = 0;    /* queued items + the one being pushed */
  unsigned in_flight_ = 0;      /* engine slots: submitted, not yet waited for */
  std::atomic<bool> flushing_ {false};
  GstFlowReturn last_flow_ = GST_FLOW_OK;
};
