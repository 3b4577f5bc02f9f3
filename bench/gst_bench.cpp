#include "gst_bench.h"

#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace gppbench {

namespace {

constexpr const char *kBatchCaps = "application/x-packet-batch, linktype=(int)1";

// The first error message on the element's bus, or "" if none.
std::string bus_error(GstBus *bus) {
  std::string text;
  while (GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    if (text.empty()) {
      GError *err = nullptr;
      gchar *debug = nullptr;
      gst_message_parse_error(msg, &err, &debug);
      text = err ? err->message : "unknown error";
      if (debug) text += std::string(" (") + debug + ")";
      if (err) g_error_free(err);
      g_free(debug);
    }
    gst_message_unref(msg);
  }
  return text;
}

// Counts the buffers the element pushes (a probe on its src pad), so the
// measuring thread can spin on a counter instead of polling the harness's
// queue, whose lock the element's push needs as well.
GstPadProbeReturn count_pushed(GstPad *, GstPadProbeInfo *, gpointer data) {
  static_cast<std::atomic<uint64_t> *>(data)->fetch_add(1, std::memory_order_release);
  return GST_PAD_PROBE_OK;
}

uint64_t stats_u64(const GstStructure *s, const std::string &field) {
  guint64 v = 0;
  if (s && gst_structure_get_uint64(s, field.c_str(), &v)) return v;
  return 0;
}

void run_mode(const GstBenchConfig &config, const std::vector<std::vector<uint8_t>> &batches,
              const std::vector<std::vector<GppResult>> &references, GstModeResult &r) {
  GstElement *element = gst_element_factory_make("gpupacketproc", nullptr);
  if (!element) {
    r.error = "element gpupacketproc not found";
    return;
  }
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(element, bus);
  g_object_set(element, "device-id", config.device_id, nullptr);
  for (const auto &prop : config.properties)
    gst_util_set_object_arg(G_OBJECT(element), prop.first.c_str(), prop.second.c_str());
  // The harness starts the element playing in the default mode (cpu, which
  // always starts); switching to a GPU mode then happens on the first batch,
  // where a failure is a flow error with a bus message, not an abort.
  GstHarness *h = gst_harness_new_with_element(element, "sink", "src");
  gst_object_unref(element);
  gst_util_set_object_arg(G_OBJECT(h->element), "mode", r.mode.c_str());
  gst_harness_set_src_caps_str(h, kBatchCaps);

  // Ask the element for its pinned allocator, as pcapsrc does.
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  gst_allocation_params_init(&params);
  {
    GstCaps *caps = gst_caps_from_string(kBatchCaps);
    GstQuery *query = gst_query_new_allocation(caps, TRUE);
    if (gst_pad_peer_query(h->srcpad, query) && gst_query_get_n_allocation_params(query) > 0)
      gst_query_parse_nth_allocation_param(query, 0, &allocator, &params);
    gst_query_unref(query);
    gst_caps_unref(caps);
  }
  r.had_allocator = allocator != nullptr;
  std::atomic<uint64_t> pushed{0};
  {
    GstPad *src = gst_element_get_static_pad(h->element, "src");
    gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, count_pushed, &pushed, nullptr);
    gst_object_unref(src);
  }

  std::vector<uint64_t> samples;
  samples.reserve(config.measured);
  const unsigned total = config.warmup + config.measured;
  uint64_t stop_at = 0;
  for (unsigned i = 0; i < total && r.error.empty(); ++i) {
    if (i == config.warmup) stop_at = now_ns() + static_cast<uint64_t>(config.max_seconds * 1e9);
    if (i > config.warmup + 20 && now_ns() > stop_at) break;
    const size_t which = i % batches.size();
    const std::vector<uint8_t> &batch = batches[which];
    GstMemory *mem = gst_allocator_alloc(allocator, batch.size(), allocator ? &params : nullptr);
    if (!mem) {
      r.error = "could not allocate a " + std::to_string(batch.size()) + "-byte batch";
      break;
    }
    GstBuffer *buf = gst_buffer_new();
    gst_buffer_append_memory(buf, mem);
    gst_buffer_fill(buf, 0, batch.data(), batch.size());
    GST_BUFFER_OFFSET(buf) = i;

    const uint64_t t0 = now_ns();
    const GstFlowReturn flow = gst_harness_push(h, buf);
    if (flow != GST_FLOW_OK) {
      const std::string why = bus_error(bus);
      r.error = std::string("push returned ") + gst_flow_get_name(flow) +
                (why.empty() ? "" : ": " + why);
      break;
    }
    const uint64_t deadline = t0 + static_cast<uint64_t>(config.batch_timeout_s * 1e9);
    GstBuffer *out = nullptr;
    for (unsigned spins = 0;; ++spins) {
      if (pushed.load(std::memory_order_acquire) > i && (out = gst_harness_try_pull(h))) break;
      cpu_relax();
      if ((spins & 255) == 255 && now_ns() > deadline) break;
    }
    const uint64_t t1 = now_ns();
    if (!out) {
      const std::string why = bus_error(bus);
      r.error = "no result within " + fmt(config.batch_timeout_s, 0) + " s of batch " +
                std::to_string(i) + (why.empty() ? "" : ": " + why);
      break;
    }
    if (i >= config.warmup) samples.push_back(t1 - t0);
    const std::vector<GppResult> &ref = references[which];
    GstMapInfo map;
    if (gst_buffer_map(out, &map, GST_MAP_READ)) {
      if (map.size != ref.size() * sizeof(GppResult) ||
          std::memcmp(map.data, ref.data(), map.size) != 0)
        r.parity_ok = false;
      gst_buffer_unmap(out, &map);
    } else {
      r.parity_ok = false;
    }
    gst_buffer_unref(out);
  }
  r.external = summarize(samples);

  GstStructure *stats = nullptr;
  g_object_get(h->element, "stats", &stats, nullptr);
  if (stats) {
    const std::string m = r.mode;
    r.stats_batches = stats_u64(stats, m + "-batches");
    r.stats_p50 = stats_u64(stats, m + "-latency-p50-ns");
    r.stats_p99 = stats_u64(stats, m + "-latency-p99-ns");
    r.stats_p999 = stats_u64(stats, m + "-latency-p999-ns");
    r.copied_batches = stats_u64(stats, "copied-batches");
    r.pool_fallbacks = stats_u64(stats, "pool-fallbacks");
    gst_structure_free(stats);
  }
  if (allocator) gst_object_unref(allocator);
  gst_harness_teardown(h);
  if (r.error.empty()) {
    const std::string why = bus_error(bus);
    if (!why.empty()) r.error = "element error: " + why;
  }
  gst_object_unref(bus);
}

// gst_init and the plugin path, once.
bool init_gstreamer(std::string *error) {
#ifdef GPP_BENCH_PLUGIN_DIR
  // Convenience: without a plugin path, use this build's plugin.
  if (!std::getenv("GST_PLUGIN_PATH_1_0") && !std::getenv("GST_PLUGIN_PATH")) {
    setenv("GST_PLUGIN_PATH_1_0", GPP_BENCH_PLUGIN_DIR, 1);
    std::printf("(GST_PLUGIN_PATH_1_0 was not set: using %s)\n", GPP_BENCH_PLUGIN_DIR);
  }
#endif
  GError *err = nullptr;
  if (!gst_init_check(nullptr, nullptr, &err)) {
    *error = std::string("GStreamer could not initialise: ") + (err ? err->message : "?");
    if (err) g_error_free(err);
    return false;
  }
  for (const char *name : {"gpupacketproc", "packettestsrc"}) {
    GstElementFactory *factory = gst_element_factory_find(name);
    if (!factory) {
      const char *path = std::getenv("GST_PLUGIN_PATH_1_0");
      *error = std::string("element ") + name + " not found (GST_PLUGIN_PATH_1_0=" +
               (path ? path : "unset") +
               "); point GST_PLUGIN_PATH_1_0 at the build's gst-plugin directory";
      return false;
    }
    gst_object_unref(factory);
  }
  return true;
}

GstStructure *element_stats(GstElement *proc) {
  GstStructure *stats = nullptr;
  g_object_get(proc, "stats", &stats, nullptr);
  return stats;
}

} // namespace

bool gst_bench_available() { return true; }

bool run_gst_latency(const GstBenchConfig &config, const std::vector<std::vector<uint8_t>> &batches,
                     const std::vector<std::vector<GppResult>> &references,
                     const std::vector<std::string> &modes,
                     const std::function<void(const std::string &)> &phase,
                     std::vector<GstModeResult> *results, std::string *error) {
  if (batches.empty() || references.size() != batches.size()) {
    *error = "no batches to push";
    return false;
  }
  if (!init_gstreamer(error)) return false;
  for (const std::string &mode : modes) {
    phase(mode);
    GstModeResult r;
    r.mode = mode;
    run_mode(config, batches, references, r);
    results->push_back(r);
  }
  return true;
}

bool run_gst_pipeline(const GstPipelineConfig &config, GstPipelineResult *result) {
  if (!init_gstreamer(&result->error)) return false;
  GstElement *pipeline = gst_pipeline_new(nullptr);
  GstElement *src = gst_element_factory_make("packettestsrc", nullptr);
  GstElement *proc = gst_element_factory_make("gpupacketproc", nullptr);
  GstElement *sink = gst_element_factory_make("fakesink", nullptr);
  if (!pipeline || !src || !proc || !sink) {
    result->error = "could not make the pipeline's elements";
    for (GstElement *e : {pipeline, src, proc, sink})
      if (e) gst_object_unref(e);
    return false;
  }
  g_object_set(sink, "sync", FALSE, "async", FALSE, nullptr);
  g_object_set(proc, "device-id", config.device_id, nullptr);
  gst_util_set_object_arg(G_OBJECT(proc), "mode", config.mode.c_str());
  for (const auto &prop : config.source)
    gst_util_set_object_arg(G_OBJECT(src), prop.first.c_str(), prop.second.c_str());
  for (const auto &prop : config.proc)
    gst_util_set_object_arg(G_OBJECT(proc), prop.first.c_str(), prop.second.c_str());
  gst_bin_add_many(GST_BIN(pipeline), src, proc, sink, nullptr);
  GstBus *bus = gst_element_get_bus(pipeline);
  auto sample = [&](uint64_t *batches, uint64_t *packets, uint64_t *bytes) {
    GstStructure *st = element_stats(proc);
    *batches = stats_u64(st, "batches");
    *packets = stats_u64(st, "packets");
    *bytes = stats_u64(st, "bytes");
    if (st) gst_structure_free(st);
  };
  auto sleep_s = [](double s) { g_usleep(static_cast<gulong>(s * 1e6)); };
  if (!gst_element_link_many(src, proc, sink, nullptr)) {
    result->error = "could not link packettestsrc ! gpupacketproc ! fakesink";
  } else if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    result->error = "the pipeline did not start: " + bus_error(bus);
  } else {
    uint64_t b0 = 0, p0 = 0, y0 = 0, b1 = 0, p1 = 0, y1 = 0;
    const uint64_t deadline = now_ns() + static_cast<uint64_t>(config.start_timeout_s * 1e9);
    while (result->error.empty() && b0 == 0) {
      sleep_s(0.002);
      sample(&b0, &p0, &y0);
      const std::string why = bus_error(bus);
      if (!why.empty()) result->error = why;
      else if (b0 == 0 && now_ns() > deadline)
        result->error = "no batch through the element within " + fmt(config.start_timeout_s, 0) + " s";
    }
    if (result->error.empty()) {
      sleep_s(config.warmup_s);
      sample(&b0, &p0, &y0);
      const uint64_t t0 = now_ns();
      sleep_s(config.measure_s);
      sample(&b1, &p1, &y1);
      result->seconds = (now_ns() - t0) / 1e9;
      result->batches = b1 - b0;
      result->packets = p1 - p0;
      result->bytes = y1 - y0;
      GstStructure *st = element_stats(proc);
      const std::string m = config.mode;
      result->stats_p50 = stats_u64(st, m + "-latency-p50-ns");
      result->stats_p99 = stats_u64(st, m + "-latency-p99-ns");
      result->stats_p999 = stats_u64(st, m + "-latency-p999-ns");
      if (st) gst_structure_free(st);
      const std::string why = bus_error(bus);
      if (!why.empty()) result->error = why;
    }
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
  return result->error.empty();
}

} // namespace gppbench
