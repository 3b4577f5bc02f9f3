// What the live captures (pcap_live, pcap_fanout, xdp_capture) share below
// their batches: the two clocks they read, and the eventfd that wakes a
// capture thread.  No GStreamer.
#pragma once

#include <time.h>
#include <unistd.h>

#include <cstdint>

namespace gpp::capture {

inline uint64_t clock_ns(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return uint64_t(ts.tv_sec) * 1000000000u + uint64_t(ts.tv_nsec);
}
// The clock of capture timestamps (libpcap's live ones, afxdpsrc's).
inline uint64_t wall_clock_ns() { return clock_ns(CLOCK_REALTIME); }
// The clock of deadlines.
inline uint64_t monotonic_clock_ns() { return clock_ns(CLOCK_MONOTONIC); }

// Wakes the thread polling eventfd `fd`.
inline void signal_eventfd(int fd) {
  const uint64_t one = 1;
  if (write(fd, &one, sizeof one) < 0) {
  } // an eventfd write fails only on overflow: it is awake then
}
// Takes the wake-up, so the next poll waits again.
inline void drain_eventfd(int fd) {
  uint64_t count;
  if (read(fd, &count, sizeof count) < 0) {
  } // EAGAIN: another wake-up took it
}

} // namespace gpp::capture
