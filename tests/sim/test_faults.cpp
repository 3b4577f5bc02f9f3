// Faults injected through the simulated GPU (GPP_SIM_FAULT, see
// gpu/gpu_simulated.cpp), in each GPU mode:
//
//   arena      pinned allocation fails      -> an error from gpupacketproc, no results
//   engine     engine creation fails        -> an error from gpupacketproc, no results
//   throw      engine creation throws       -> the same: no exception leaves a vfunc
//   submit:3   the third batch cannot start -> results of batches 1-2, then the error
//   submit-throw:3  the third batch's submit throws -> the same, and nothing
//              waits for that batch afterwards (stopping the pipeline ends)
//   wait:3     the third batch fails        -> results of batches 1-2, then the error
//   idle:1     the engine cannot idle at EOS (a persistent kernel that does
//              not stop)            -> every result, then the error
//   lost:3     the device is lost at batch 3, with batches 4.. in flight or after
//                                            -> results of batches 1-2, then the error
//   engine, mid-stream: mode=cpu for batches 1-2, then the switch to the GPU
//              mode (set from the second results buffer's handoff) cannot
//              create its engine        -> results of batches 1-2, then the error
//
// Then through GstHarness, in each GPU mode, for engine creation that fails
// and that throws:
//   mid-stream: two batches in mode=cpu, then the mode set to the GPU mode;
//              the third batch returns GST_FLOW_ERROR and the element posts
//              one "Could not start mode=..." error naming the fault (not an
//              "Internal failure": the dispatcher turns the exception into
//              that error), and the harness's teardown frees everything.
//   at start:  READY->PAUSED fails with the fault, and succeeds once the
//              fault is gone (a failed start leaves no state behind: the
//              sanitizer build finds any it leaked).
//
// "Results of batches 1-2" means packets 1..16 exactly, in order (batch-size
// 8): nothing before the fault is lost, nothing after it slips out past the
// error.  Each run ends at the error message, which must name the simulated
// fault, and the pipeline then goes to NULL; the sanitizer build checks that
// nothing leaks.
//
//   test-faults CAPTURE
#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include <gpupacket/packet-batch.h>
#include <gpupacket/packet-result.h>

#include "batch_builder.h"
#include "engine.h"

namespace {

struct Run {
  std::mutex lock;
  std::vector<uint64_t> packets;
  std::string error, error_source;
  bool eos = false;
  GstElement *proc = nullptr;
  const char *switch_to = nullptr; // mid-stream: the mode set once 16 results are out
};

void on_handoff(GstElement *, GstBuffer *buf, GstPad *, gpointer data) {
  auto *run = static_cast<Run *>(data);
  GstMapInfo map;
  if (!gst_buffer_map(buf, &map, GST_MAP_READ)) return;
  std::lock_guard<std::mutex> guard(run->lock);
  for (size_t off = 0; off + sizeof(GppResult) <= map.size; off += sizeof(GppResult))
    run->packets.push_back(reinterpret_cast<const GppResult *>(map.data + off)->packet_number);
  gst_buffer_unmap(buf, &map);
  // mode=cpu with low-latency pushes from its chain, so batch 3 sees the
  // new mode.
  if (run->switch_to && run->packets.size() == 16)
    gst_util_set_object_arg(G_OBJECT(run->proc), "mode", run->switch_to);
}

void run_pipeline(const std::string &capture, const char *mode, Run &run) {
  gchar *desc = g_strdup_printf("pcapsrc location=\"%s\" batch-size=8 ! gpupacketproc "
                                "name=proc mode=%s num-streams=4 ! fakesink name=sink "
                                "signal-handoffs=true",
                                capture.c_str(), mode);
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(desc, &error);
  g_free(desc);
  if (!pipeline || error) {
    std::printf("FAIL: gst_parse_launch: %s\n", error ? error->message : "?");
    std::exit(1);
  }
  GstElement *sink = gst_bin_get_by_name(GST_BIN(pipeline), "sink");
  g_signal_connect(sink, "handoff", G_CALLBACK(on_handoff), &run);
  gst_object_unref(sink);
  run.proc = gst_bin_get_by_name(GST_BIN(pipeline), "proc");
  GstBus *bus = gst_element_get_bus(pipeline);
  gst_element_set_state(pipeline, GST_STATE_PLAYING);
  GstMessage *msg = gst_bus_timed_pop_filtered(
      bus, 30 * GST_SECOND, static_cast<GstMessageType>(GST_MESSAGE_EOS | GST_MESSAGE_ERROR));
  if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *err = nullptr;
    gchar *debug = nullptr;
    gst_message_parse_error(msg, &err, &debug);
    run.error = std::string(err->message) + " | " + (debug ? debug : "");
    run.error_source = GST_OBJECT_NAME(GST_MESSAGE_SRC(msg));
    g_clear_error(&err);
    g_free(debug);
  } else if (msg) {
    run.eos = true;
  }
  if (msg) gst_message_unref(msg);
  // Anything the element still pushes while it is being stopped counts too.
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(run.proc);
  gst_object_unref(bus);
  gst_object_unref(pipeline);
}

// The element's first error message on `bus`, or "" if none.
std::string pop_error(GstBus *bus) {
  std::string text;
  while (GstMessage *msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
    if (text.empty()) {
      GError *err = nullptr;
      gst_message_parse_error(msg, &err, nullptr);
      text = err->message;
      g_clear_error(&err);
    }
    gst_message_unref(msg);
  }
  return text;
}

// Problems with the harness cases for `mode` and `fault` ("engine", "throw").
std::vector<std::string> harness_cases(const char *mode, const char *fault) {
  std::vector<std::string> problems;
  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_ETHERNET);
  uint8_t frame[60] = {};
  frame[12] = 0x08;
  for (int i = 0; i < 8; ++i) builder.add(frame, sizeof frame, sizeof frame, 0, i + 1);
  const std::vector<uint8_t> batch = builder.finish();
  const std::string expected = std::string("Could not start mode=") + mode;
  {
    g_unsetenv("GPP_SIM_FAULT");
    GstHarness *h = gst_harness_new("gpupacketproc");
    gst_util_set_object_arg(G_OBJECT(h->element), "mode", "cpu");
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(h->element, bus);
    gst_harness_set_src_caps_str(h, GPP_BATCH_CAPS_NAME ", linktype=(int)1");
    gst_harness_play(h);
    for (int b = 0; b < 2; ++b) {
      if (gst_harness_push(h, gst_buffer_new_memdup(batch.data(), batch.size())) != GST_FLOW_OK)
        problems.push_back("mid-stream: a mode=cpu batch failed");
      while (GstBuffer *out = gst_harness_try_pull(h)) gst_buffer_unref(out);
    }
    g_setenv("GPP_SIM_FAULT", fault, TRUE);
    gst_util_set_object_arg(G_OBJECT(h->element), "mode", mode);
    const GstFlowReturn ret = gst_harness_push(h, gst_buffer_new_memdup(batch.data(), batch.size()));
    if (ret != GST_FLOW_ERROR)
      problems.push_back(std::string("mid-stream: the batch after the switch returned ") +
                         gst_flow_get_name(ret));
    const std::string error = pop_error(bus);
    if (error.rfind(expected, 0) != 0 || error.find("simulated fault") == std::string::npos)
      problems.push_back("mid-stream: error \"" + error + "\", want \"" + expected +
                         " ...: simulated fault ...\"");
    // Messages on the bus hold the element, the element its bus: cut that.
    gst_element_set_bus(h->element, nullptr);
    gst_bus_set_flushing(bus, TRUE);
    gst_harness_teardown(h);
    gst_object_unref(bus);
  }
  {
    GstElement *element = gst_element_factory_make("gpupacketproc", nullptr);
    GstBus *bus = gst_bus_new();
    gst_element_set_bus(element, bus);
    gst_util_set_object_arg(G_OBJECT(element), "mode", mode);
    g_setenv("GPP_SIM_FAULT", fault, TRUE);
    if (gst_element_set_state(element, GST_STATE_PAUSED) != GST_STATE_CHANGE_FAILURE)
      problems.push_back("at start: READY->PAUSED did not fail");
    const std::string error = pop_error(bus);
    if (error.rfind(expected, 0) != 0)
      problems.push_back("at start: error \"" + error + "\", want \"" + expected + " ...\"");
    g_unsetenv("GPP_SIM_FAULT");
    if (gst_element_set_state(element, GST_STATE_PAUSED) == GST_STATE_CHANGE_FAILURE)
      problems.push_back("at start: READY->PAUSED failed again without the fault: " +
                         pop_error(bus));
    gst_element_set_state(element, GST_STATE_NULL);
    gst_element_set_bus(element, nullptr);
    gst_bus_set_flushing(bus, TRUE);
    gst_object_unref(bus);
    gst_object_unref(element);
  }
  return problems;
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  // Line by line: a sanitizer's leak report ends the process without
  // flushing stdout, and the lines before it say which case ran last.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CAPTURE\n", argv[0]);
    return 2;
  }
  struct Case {
    const char *fault;
    size_t packets;   // results expected: packets 1..N (kAll: the whole capture)
    bool mid_stream;  // start in mode=cpu, switch after 16 results
  };
  // The whole capture's packet count, from a run without faults.
  Run ref;
  run_pipeline(argv[1], "cpu", ref);
  if (!ref.eos || ref.packets.empty()) {
    std::printf("FAIL: the reference run (mode=cpu, no fault) did not reach EOS: %s\n",
                ref.error.c_str());
    return 1;
  }
  const size_t kAll = ref.packets.size();
  const Case cases[] = {{"arena", 0, false},    {"engine", 0, false}, {"throw", 0, false},
                        {"submit:3", 16, false}, {"submit-throw:3", 16, false},
                        {"wait:3", 16, false},   {"lost:3", 16, false},
                        {"idle:1", kAll, false}, {"engine", 16, true},
                        {"throw", 16, true}};
  int failures = 0;
  for (const gpp::ModeInfo &info : gpp::kModes) {
    if (!gpp::is_gpu_mode(info.mode)) continue;
    const char *mode = info.name;
    for (const Case &c : cases) {
      g_setenv("GPP_SIM_FAULT", c.fault, TRUE);
      Run run;
      if (c.mid_stream) run.switch_to = mode;
      run_pipeline(argv[1], c.mid_stream ? "cpu low-latency=true" : mode, run);
      std::vector<std::string> problems;
      if (run.error.empty())
        problems.push_back(run.eos ? "EOS instead of an error" : "no error within 30 s");
      else if (run.error.find("simulated fault") == std::string::npos)
        problems.push_back("error without the fault's reason: " + run.error);
      else if (run.error_source != "proc")
        problems.push_back("error from " + run.error_source + ", not gpupacketproc");
      std::vector<uint64_t> want;
      for (uint64_t n = 1; n <= c.packets; ++n) want.push_back(n);
      if (run.packets != want) {
        std::string got;
        for (size_t i = 0; i < run.packets.size() && i < 40; ++i)
          got += (i ? "," : "") + std::to_string(run.packets[i]);
        problems.push_back("results for packets [" + got + "] (" +
                           std::to_string(run.packets.size()) + "), want 1.." +
                           std::to_string(c.packets));
      }
      const char *when = c.mid_stream ? " (cpu, then switched)" : "";
      for (const std::string &p : problems)
        std::printf("FAIL mode=%s fault=%s%s: %s\n", mode, c.fault, when, p.c_str());
      if (problems.empty())
        std::printf("ok   mode=%s fault=%s%s: %zu results, then: %s\n", mode, c.fault, when,
                    run.packets.size(), run.error.substr(0, run.error.find(" | ")).c_str());
      failures += !problems.empty();
    }
  }
  for (const gpp::ModeInfo &info : gpp::kModes) {
    if (!gpp::is_gpu_mode(info.mode)) continue;
    for (const char *fault : {"engine", "throw"}) {
      const std::vector<std::string> problems = harness_cases(info.name, fault);
      for (const std::string &p : problems)
        std::printf("FAIL harness mode=%s fault=%s: %s\n", info.name, fault, p.c_str());
      if (problems.empty())
        std::printf("ok   harness mode=%s fault=%s: mid-stream and at start\n", info.name, fault);
      failures += !problems.empty();
    }
  }
  g_unsetenv("GPP_SIM_FAULT");
  std::printf(failures ? "%d FAILED\n" : "PASS\n", failures);
  return failures ? 1 : 0;
}
