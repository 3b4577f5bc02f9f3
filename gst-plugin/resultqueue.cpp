#include "resultqueue.h"

bool
GppResultQueue::reserve (unsigned slots)
{
  auto lock = gpp::spin_lock (lock_);
  room_.wait (lock, [&] { return in_flight_ < slots || flushing_.load (); });
  if (flushing_.load ())
    return false;
  in_flight_++;
  outstanding_++;
  return true;
}

void
GppResultQueue::cancel_reservation ()
{
  bool flush_waits;
  {
    auto lock = gpp::spin_lock (lock_);
    in_flight_--;
    outstanding_--;
    flush_waits = flush_waits_for_none_locked ();
  }
  notify_item_out (flush_waits);
}

GstFlowReturn
GppResultQueue::enqueue (PendingItem && item, guint * in_flight)
{
  GstFlowReturn flow;
  {
    auto lock = gpp::spin_lock (lock_);
    queue_.push_back (std::move (item));
    *in_flight = in_flight_;
    flow = last_flow_;
    /* Last, and the notification outside the lock: the task spins on
     * `queued_` and then takes the lock, and a contended lock puts a thread
     * to sleep (microseconds to wake it, on every batch). */
    queued_++;
  }
  work_.notify_all ();
  return flow;
}

bool
GppResultQueue::enqueue_event_if_busy (GstEvent * event)
{
  auto lock = gpp::spin_lock (lock_);
  if (outstanding_ == 0)
    return false;
  queue_.emplace_back (event);
  queued_++;
  outstanding_++;
  work_.notify_all ();
  return true;
}

bool
GppResultQueue::drain ()
{
  auto lock = gpp::spin_lock (lock_);
  room_.wait (lock, [&] { return outstanding_ == 0 || flushing_.load (); });
  return outstanding_ == 0;
}

void
GppResultQueue::spin_for_work ()
{
  if (!spin_for_work_)
    return;
  /* Waking a sleeping thread costs tens of microseconds, more than a GPU
   * batch takes: with wait-strategy=spin the task polls for a while first. */
  const auto until = std::chrono::steady_clock::now () + std::chrono::milliseconds (2);
  while (queued_.load (std::memory_order_acquire) == 0 && !flushing_.load () &&
      std::chrono::steady_clock::now () < until) {
  }
}

bool
GppResultQueue::retire_slot ()
{
  bool failed_before;
  {
    auto lock = gpp::spin_lock (lock_);
    in_flight_--;
    failed_before = last_flow_ == GST_FLOW_ERROR;
  }
  room_.notify_all ();          /* the chain's wait for a slot; the task waits for no slot */
  return failed_before;
}

void
GppResultQueue::done (GstFlowReturn flow)
{
  bool flush_waits;
  {
    auto lock = gpp::spin_lock (lock_);
    outstanding_--;
    if (flow != GST_FLOW_OK && last_flow_ == GST_FLOW_OK)
      last_flow_ = flow;
    flush_waits = flush_waits_for_none_locked ();
  }
  notify_item_out (flush_waits);   /* outside the lock, as in enqueue */
}

void
GppResultQueue::start_flushing ()
{
  /* Under the lock, or a waiter that just checked could sleep through it. */
  auto lock = gpp::spin_lock (lock_);
  flushing_ = true;
  work_.notify_all ();
  room_.notify_all ();
}

void
GppResultQueue::stop_flushing ()
{
  auto lock = gpp::spin_lock (lock_);
  room_.wait (lock, [&] { return outstanding_ == 0; });
  flushing_ = false;
  last_flow_ = GST_FLOW_OK;
}

void
GppResultQueue::reset ()
{
  auto lock = gpp::spin_lock (lock_);
  flushing_ = false;
  last_flow_ = GST_FLOW_OK;
}

bool
GppResultQueue::take_front (PendingItem & item)
{
  auto lock = gpp::spin_lock (lock_);
  if (queue_.empty ())
    return false;
  move_front_locked (item);
  return true;
}
