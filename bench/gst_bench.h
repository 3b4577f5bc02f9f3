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

// Element properties, set with gst_util_set_object_arg (name, value as text).
using PropertyList = std::vector<std::pair<std::string, std::string>>;

struct GstBenchConfig {
  int device_id = 0;
  unsigned warmup = 500;       // batches before the measured ones
  unsigned measured = 4096;    // the element's latency window holds the last 4096 batches
  double max_seconds = 1e9;    // stop measuring after this long (at least 20 batches)
  double batch_timeout_s = 5;  // longest wait for one result buffer
  PropertyList properties;     // gpupacketproc properties besides mode and device-id
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

// packettestsrc ! gpupacketproc ! fakesink, free-running.
struct GstPipelineConfig {
  int device_id = 0;
  std::string mode;
  PropertyList source, proc;     // packettestsrc / gpupacketproc properties
  double warmup_s = 0.05, measure_s = 0.2;
  double start_timeout_s = 20;   // until the first batches are out (ring generation, engine start)
};

struct GstPipelineResult {
  std::string error;
  double seconds = 0;
  uint64_t batches = 0, packets = 0, bytes = 0; // element stats over the measured interval
  uint64_t stats_p50 = 0, stats_p99 = 0, stats_p999 = 0; // ns, last 4096 batches, under load
  double mpps() const { return seconds > 0 ? packets / seconds / 1e6 : 0; }
};

// Runs one pipeline; false with result->error set when it could not run.
bool run_gst_pipeline(const GstPipelineConfig &config, GstPipelineResult *result);

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
