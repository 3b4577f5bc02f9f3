// A live source's batch PTS (gst-plugin/livetimestamp.h) on a GstTestClock:
// the running time of the capture; the clock read once a millisecond of
// wall time, not for every batch (so a clock jump shows only at the next
// read); restart() reads it at the next batch (a new base time), as does a
// step of the wall clock back or more than a millisecond on; no clock: no
// timestamp; a capture before the running time began: 0.
#include <gst/check/gsttestclock.h>
#include <gst/gst.h>

#include <cstdio>

#include "livetimestamp.h"

namespace {

int failures = 0;

void check_time(GstClockTime got, GstClockTime want, const char *what) {
  const bool ok = got == want;
  std::printf("%s %s", ok ? "ok  " : "FAIL", what);
  if (!ok)
    std::printf(": %" GST_TIME_FORMAT ", want %" GST_TIME_FORMAT, GST_TIME_ARGS(got),
                GST_TIME_ARGS(want));
  std::printf("\n");
  failures += !ok;
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  GstElement *element = gst_bin_new("source");
  GppLiveTimestamp stamp;
  const guint64 wall = 1700000000ull * GST_SECOND; // the wall clock "now" of the first batch
  const guint64 ms = GppLiveTimestamp::kReadEveryNs;

  check_time(stamp.running_time(element, wall, wall), GST_CLOCK_TIME_NONE, "no clock: no timestamp");

  GstClock *clock = gst_test_clock_new_with_start_time(10 * GST_SECOND);
  gst_element_set_clock(element, clock);
  gst_element_set_base_time(element, 4 * GST_SECOND);
  check_time(stamp.running_time(element, wall - 3000, wall), 6 * GST_SECOND - 3000,
             "a packet captured 3 us ago: 3 us before the running time now");

  gst_test_clock_advance_time(GST_TEST_CLOCK(clock), GST_SECOND);
  check_time(stamp.running_time(element, wall + ms / 2 - 10, wall + ms / 2),
             6 * GST_SECOND + ms / 2 - 10, "within a millisecond the clock is not read again");
  check_time(stamp.running_time(element, wall + ms - 10, wall + ms), 7 * GST_SECOND - 10,
             "a millisecond on, it is (the clock moved a second)");

  gst_element_set_base_time(element, 9 * GST_SECOND);
  check_time(stamp.running_time(element, wall + ms + 20, wall + ms + 30),
             7 * GST_SECOND + 20, "a new base time unseen until the next read");
  stamp.restart();
  check_time(stamp.running_time(element, wall + ms + 30, wall + ms + 40), 2 * GST_SECOND - 10,
             "restart(): the next batch reads the new base time");
  check_time(stamp.running_time(element, wall - 3 * GST_SECOND, wall + ms + 50), 0,
             "captured before the running time began: 0");

  // The wall clock stepped back 2 s (the pipeline clock went on 100 us): read again at once.
  gst_test_clock_advance_time(GST_TEST_CLOCK(clock), 100 * GST_USECOND);
  const guint64 stepped = wall + ms + 50 - 2 * GST_SECOND;
  check_time(stamp.running_time(element, stepped - 10, stepped),
             2 * GST_SECOND + 100 * GST_USECOND - 10, "a step back of the wall clock: read again");
  // ... and forward 5 s (before the millisecond is up).
  gst_test_clock_advance_time(GST_TEST_CLOCK(clock), 100 * GST_USECOND);
  const guint64 ahead = stepped + 5 * GST_SECOND;
  check_time(stamp.running_time(element, ahead - 10, ahead), 2 * GST_SECOND + 200 * GST_USECOND - 10,
             "a step on of the wall clock: read again");

  gst_element_set_clock(element, nullptr);
  gst_object_unref(clock);
  gst_object_unref(element);
  std::printf("%d failed\n", failures);
  return failures ? 1 : 0;
}
