/* A live source whose capture runs on threads of its own (capture/:
 * afxdpsrc's XdpCapture, pcapsrc's PcapFanout, both a BatchHandoff): its
 * state changes alone start and pause the capture (what arrives while
 * PAUSED is dropped); the streaming thread waits for PLAYING, has the batch
 * limits follow the properties, and waits for the next closed batch.  (The
 * batches closed on the first PLAYING before the streaming thread has asked
 * downstream for an allocator are in memory of the source's own, which
 * gpupacketproc copies into its pinned pool.) */
#pragma once

#include <gst/base/gstbasesrc.h>

#include "batchbuffer.h"

/* The batching and stats properties of pcapsrc (files and live) and
 * afxdpsrc, which make one batch format on the same terms. */
#define GPP_SRC_DEFAULT_BATCH_SIZE 256
#define GPP_SRC_MAX_BATCH_SIZE (1u << 20)
#define GPP_SRC_DEFAULT_BATCH_TIMEOUT 1000      /* µs */
#define GPP_SRC_MAX_BATCH_TIMEOUT 10000000      /* µs */
#define GPP_SRC_DEFAULT_STATS_INTERVAL 1000     /* ms */

/* Longest wait for a batch before create () looks at its state again. */
#define GPP_LIVE_TAKE_WAIT_NS (100 * GST_MSECOND)

/* The next batch of `capture` into `batch` (GST_FLOW_OK), or why there is
 * none: FLUSHING (unlock, or PAUSED→READY), ERROR (a thread failed; the
 * element error, "`what` on "`device`" failed", is posted).  `Element` has
 * batch_size, batch_timeout_us and device under its object lock;
 * `post_stats` posts its stats message when due. */
template <class Element, class Capture, class Batch>
static GstFlowReturn
gpp_live_capture_take (Element * self, Capture & capture, Batch * batch, const char *what,
    void (*post_stats) (Element *))
{
  GstBaseSrc *base = GST_BASE_SRC (self);
  using Take = typename Capture::Take;
  for (;;) {
    if (!base->live_running) {
      /* PAUSED: the threads drop what arrives until PLAYING. */
      const GstFlowReturn playing = gst_base_src_wait_playing (base);
      if (playing != GST_FLOW_OK)
        return playing;
    }
    GST_OBJECT_LOCK (self);
    const guint batch_size = self->batch_size;
    const guint64 timeout_ns = (guint64) self->batch_timeout_us * 1000;
    GST_OBJECT_UNLOCK (self);
    capture.set_batch_limits (batch_size, timeout_ns);
    post_stats (self);
    switch (capture.take (batch, GPP_LIVE_TAKE_WAIT_NS)) {
      case Take::Timeout:
        continue;
      case Take::Interrupted:
        return GST_FLOW_FLUSHING;
      case Take::Failed:
        GST_ELEMENT_ERROR (self, RESOURCE, READ, ("%s on \"%s\" failed: %s.", what,
                self->device, capture.error ().c_str ()), (NULL));
        return GST_FLOW_ERROR;
      case Take::Batch:
        return GST_FLOW_OK;
    }
  }
}

/* A taken batch's buffer `buf`: its packet numbers as offsets and its
 * capture times (gpp_src_timestamp_live, by the source's `timestamp`). */
template <class Batch>
static void
gpp_live_capture_stamp (GstElement * self, GppLiveTimestamp & timestamp, GstBuffer * buf,
    const Batch & batch)
{
  GST_BUFFER_OFFSET (buf) = batch.first_number - 1;
  GST_BUFFER_OFFSET_END (buf) = batch.first_number - 1 + batch.packets;
  gpp_src_timestamp_live (self, timestamp, buf, batch.first_capture_ns, batch.last_capture_ns);
}

/* PAUSED→PLAYING: the threads deliver from the state change on (the
 * streaming thread may still be pushing a batch from before the pause; what
 * arrives meanwhile is delivered, not discarded).  Call before the parent
 * class's change_state, so that what create () takes once it sees PLAYING
 * is from after the change (and gpp_live_capture_pause after it, should it
 * fail). */
template <class Capture>
static void
gpp_live_capture_play (Capture & capture)
{
  if (!capture.running ())
    capture.start ();
}

/* Whether `transition`, which the parent class's change_state answered with
 * `ret`, leaves the capture paused: PLAYING→PAUSED, or a PAUSED→PLAYING that
 * failed after gpp_live_capture_play. */
static inline bool
gpp_live_capture_pauses_after (GstStateChange transition, GstStateChangeReturn ret)
{
  return transition == GST_STATE_CHANGE_PLAYING_TO_PAUSED ||
      (transition == GST_STATE_CHANGE_PAUSED_TO_PLAYING && ret == GST_STATE_CHANGE_FAILURE);
}

/* PLAYING→PAUSED: the threads stop delivering at once (what they hold and
 * what arrives until PLAYING is discarded), and create () is woken to wait
 * for PLAYING.  Call after the parent class's change_state. */
template <class Capture>
static void
gpp_live_capture_pause (Capture & capture)
{
  capture.pause ();
  capture.poke ();
}
