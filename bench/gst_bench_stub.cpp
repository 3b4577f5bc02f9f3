// Built when gstreamer-check-1.0 (GstHarness) is missing: --gst says so.
#include "gst_bench.h"

namespace gppbench {

bool gst_bench_available() { return false; }

bool run_gst_latency(const GstBenchConfig &, const std::vector<std::vector<uint8_t>> &,
                     const std::vector<std::vector<GppResult>> &, const std::vector<std::string> &,
                     const std::function<void(const std::string &)> &,
                     std::vector<GstModeResult> *, std::string *error) {
  *error = "this gpupacket-bench was built without gstreamer-check-1.0 (GstHarness); "
           "install it and reconfigure for --gst";
  return false;
}

bool run_gst_pipeline(const GstPipelineConfig &, GstPipelineResult *result) {
  result->error = "built without gstreamer-check-1.0";
  return false;
}

} // namespace gppbench
