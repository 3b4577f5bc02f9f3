// gpupacketproc's ordered hand-off (gst-plugin/resultqueue.h) on its own,
// with threads standing in for the chain and the src pad task: items leave
// in order; reserve() waits for a free slot and gives up on a flush; a flush
// pauses the task only once nothing is outstanding, and pauses it under the
// queue's lock, so stop_flushing() cannot slip in between; stop_flushing()
// waits for the outstanding items; the first failed flow is kept.
#include <gst/gst.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "resultqueue.h"

namespace {

int failures = 0;

void check(bool ok, const char *what) {
  std::printf("%s %s\n", ok ? "ok  " : "FAIL", what);
  failures += !ok;
}

// An item the task can tell apart: a custom event numbered n.
PendingItem numbered(int n) {
  return PendingItem(gst_event_new_custom(
      GST_EVENT_CUSTOM_DOWNSTREAM, gst_structure_new("n", "n", G_TYPE_INT, n, NULL)));
}
int number_of(const PendingItem &item) {
  int n = -1;
  gst_structure_get_int(gst_event_get_structure(item.event), "n", &n);
  return n;
}

void sleep_ms(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  auto no_pause = [] {};

  { // Order, slots and bookkeeping.
    GppResultQueue q;
    GstEvent *idle_event = gst_event_new_eos();
    const bool queued_idle = q.enqueue_event_if_busy(idle_event);
    if (!queued_idle) gst_event_unref(idle_event); // the caller sends it on
    check(!queued_idle, "an event goes straight out when nothing is outstanding");
    guint in_flight = 0;
    for (int n = 0; n < 3; ++n) {
      check(q.reserve(3), "reserve a free slot");
      q.enqueue(numbered(n), &in_flight);
    }
    check(in_flight == 3 && q.outstanding() == 3, "three batches in flight and outstanding");
    GstEvent *eos = gst_event_new_eos();
    check(q.enqueue_event_if_busy(eos), "an event queues behind outstanding batches");
    std::atomic<bool> reserved{false};
    std::thread chain([&] { reserved = q.reserve(3); });
    sleep_ms(50);
    check(!reserved, "reserve waits while every slot is taken");
    bool order = true;
    for (int n = 0; n < 3; ++n) {
      PendingItem item;
      order = order && q.pop(item, no_pause) && number_of(item) == n;
      q.retire_slot();
      q.done(n == 1 ? GST_FLOW_NOT_LINKED : GST_FLOW_OK);
    }
    chain.join();
    check(order, "items leave in the order they were queued");
    check(reserved, "a retired slot lets the waiting reserve through");
    PendingItem event;
    check(q.pop(event, no_pause) && event.event == eos, "the event leaves after the batches");
    q.done(GST_FLOW_ERROR);
    check(q.last_flow() == GST_FLOW_NOT_LINKED, "the first failed flow is kept");
    q.cancel_reservation();
    check(q.outstanding() == 0 && q.in_flight() == 0, "nothing outstanding at the end");
  }

  { // A flush with a batch still on its way to the queue.
    GppResultQueue q;
    check(q.reserve(1), "reserve");
    q.start_flushing();
    std::atomic<int> pauses{0};
    std::atomic<int> popped{-2};
    std::thread task([&] {
      PendingItem item;
      popped = q.pop(item, [&] { ++pauses; }) ? number_of(item) : -1;
    });
    sleep_ms(50);
    check(popped == -2 && pauses == 0, "flushing, the task waits for the reserved batch");
    guint in_flight;
    q.enqueue(numbered(7), &in_flight);
    task.join();
    check(popped == 7, "the reserved batch still reaches the task");
    std::atomic<bool> stopped{false};
    std::thread flush_stop([&] {
      q.stop_flushing();
      stopped = true;
    });
    sleep_ms(50);
    check(!stopped, "stop_flushing waits for the outstanding batch");
    q.retire_slot();
    q.done(GST_FLOW_FLUSHING);
    flush_stop.join();
    check(stopped && !q.flushing() && q.last_flow() == GST_FLOW_OK,
          "then the flush ends and the flow is clean again");

    q.start_flushing();
    PendingItem none;
    check(!q.pop(none, [&] { ++pauses; }) && pauses == 1,
          "flushing with nothing outstanding: the task pauses");
    check(!q.reserve(1), "reserve gives up while flushing");
  }

  { // The pause happens under the queue's lock: a stop_flushing started
    // meanwhile finishes only after it (else it could restart a task that
    // is about to pause, leaving queued items behind a paused task).
    GppResultQueue q;
    q.start_flushing();
    std::atomic<bool> in_pause{false}, stop_done{false}, stop_before_pause_ended{false};
    std::thread flush_stop;
    PendingItem item;
    q.pop(item, [&] {
      in_pause = true;
      flush_stop = std::thread([&] {
        q.stop_flushing();
        stop_done = true;
      });
      sleep_ms(50);
      stop_before_pause_ended = stop_done.load();
    });
    flush_stop.join();
    check(in_pause && !stop_before_pause_ended && stop_done,
          "stop_flushing waits for the task's pause to finish");
  }

  std::printf(failures ? "%d FAILED\n" : "PASS\n", failures);
  return failures ? 1 : 0;
}
