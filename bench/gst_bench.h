// Section C of gpupacket-bench: batches through the gpupacketproc element in
// a GstHarness, one at a time, in pinned memory from the element's own
// allocator; the element's `stats` latencies read afterwards.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <gpupacket/packet-result.h>

#include "bench_common.h"

namespace gppbench {

struct GstBenchConfig {
  int device_id = 0;
  unsigned warmup = 500;       // batches before the measured ones
  unsigned measured = 4096;    // the element's latency window holds the last 4096 batches
  double batch_timeout_s = 5;  // longest wait for one result buffer
};

struct GstModeResult {
  std::string mode;
  std::string error;       // empty when the mode ran
  // From the element's `stats` (chain entry to result push), nanoseconds.
  uint64_t stats_batches = 0, stats_p50 = 0, stats_p99 = 0, stats_p999 = 0;
  uint64_t copied_batches = 0, pool_fallbacks = 0;
  bool had_allocator = false;  // the ALLOCATION query offered the pinned pool
  bool parity_ok = true;       // every result buffer equals the CPU reference
  LatencyStats external;       // gst_harness_push() to the result pulled, nanoseconds
};

// Whether this build has the GStreamer part (gstreamer-check-1.0 was found).
bool gst_bench_available();

// Runs each mode in `modes` (element mode names).  `batches` are finished
// batches of link type Ethernet, `references[i]` the CPU results of
// batches[i].  `phase` is called before each mode (for the watchdog).
// Returns false when GStreamer or the element cannot be used at all.
bool run_gst_latency(const GstBenchConfig &config, const std::vector<std::vector<uint8_t>> &batches,
                     const std::vector<std::vector<GppResult>> &references,
                     const std::vector<std::string> &modes,
                     const std::function<void(const std::string &mode)> &phase,
                     std::vector<GstModeResult> *results, std::string *error);

} // namespace gppbench
