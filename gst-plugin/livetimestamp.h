/* A live source's batch PTS: the running time at which a packet was
 * captured, its capture time (wall clock) plus what the pipeline clock's
 * running time is ahead of the wall clock.  That difference is read from
 * the clock (its time, the element's base time) at most once every
 * kReadEveryNs of wall time, not for every batch: reading it took 0.4-0.6 µs
 * of each batch's way from the capture to gpupacketproc (a live pipeline,
 * 20,000 frames/s).  Between reads the wall clock may slew against the
 * pipeline clock by at most NTP's 500 ppm, 0.5 µs; a step of the wall
 * clock (back, or more than kReadEveryNs on) is read at the next batch.
 * restart() when the base time or the clock may have changed
 * (PAUSED→PLAYING).  running_time() on the streaming thread, restart() from
 * any thread. */
#pragma once

#include <gst/gst.h>

#include <atomic>
#include <cstdint>

class GppLiveTimestamp
{
public:
  static constexpr guint64 kReadEveryNs = 1000000;

  /* The running time of `capture_ns` (wall clock, ns since the epoch) on
   * `element`'s clock, `wall_now_ns` being the wall clock now;
   * GST_CLOCK_TIME_NONE while the element has no clock. */
  GstClockTime running_time (GstElement * element, guint64 capture_ns, guint64 wall_now_ns)
  {
    guint64 read_after = read_after_ns_.load ();
    /* Due, or the wall clock went back since the last read. */
    if (wall_now_ns >= read_after || wall_now_ns + kReadEveryNs < read_after) {
      GstClock *clock = gst_element_get_clock (element);
      if (!clock)
        return GST_CLOCK_TIME_NONE;
      const GstClockTime base_time = gst_element_get_base_time (element);
      const GstClockTime now = gst_clock_get_time (clock);
      gst_object_unref (clock);
      const GstClockTime running = now > base_time ? now - base_time : 0;
      running_less_wall_ns_ = (gint64) running - (gint64) wall_now_ns;
      /* A restart() meanwhile leaves 0 there: the next batch reads again. */
      read_after_ns_.compare_exchange_strong (read_after, wall_now_ns + kReadEveryNs);
    }
    const gint64 pts = (gint64) capture_ns + running_less_wall_ns_;
    return pts > 0 ? (GstClockTime) pts : 0;
  }

  /* The next running_time() reads the clock again. */
  void restart () { read_after_ns_.store (0); }

private:
  std::atomic<guint64> read_after_ns_ {0};      /* wall clock; 0: read at the next batch */
  gint64 running_less_wall_ns_ = 0;
};
