// Flush stress on the simulated GPU: one thread pushes batches while another
// sends FLUSH_START / FLUSH_STOP pairs at random moments.  Every cycle must
// complete (an earlier element could lose track of a batch submitted while a
// flush started and wait for it forever in FLUSH_STOP).
//
//   test-flush-stress MODE CYCLES     (MODE may carry more properties:
//                                      "persistent low-latency=true")
#include <gst/check/gstharness.h>
#include <gst/gst.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <thread>

#include <gpupacket/packet-batch.h>

#include "batch_builder.h"

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s MODE CYCLES\n", argv[0]);
    return 2;
  }
  const long cycles = std::atol(argv[2]);
  gchar *desc = g_strdup_printf("gpupacketproc mode=%s num-streams=2", argv[1]);
  GstHarness *h = gst_harness_new_parse(desc);
  g_free(desc);
  gst_harness_set_src_caps_str(h, GPP_BATCH_CAPS_NAME ", linktype=(int)1");
  gst_harness_play(h);

  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_ETHERNET);
  uint8_t frame[60] = {};
  frame[12] = 0x08; // IPv4 ethertype, the rest zero: a malformed but harmless packet
  for (int i = 0; i < 8; ++i) builder.add(frame, sizeof frame, sizeof frame, 0, i + 1);
  const std::vector<uint8_t> batch = builder.finish();

  std::atomic<bool> stop{false};
  std::atomic<long> done{0};
  std::thread pusher([&] {
    while (!stop) {
      gst_harness_push(h, gst_buffer_new_memdup(batch.data(), batch.size()));
      while (GstBuffer *out = gst_harness_try_pull(h)) gst_buffer_unref(out);
    }
  });
  std::thread flusher([&] {
    std::mt19937 rng(1);
    for (long i = 0; i < cycles; ++i) {
      gst_harness_push_event(h, gst_event_new_flush_start());
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      gst_harness_push_event(h, gst_event_new_flush_stop(FALSE));
      std::this_thread::sleep_for(std::chrono::microseconds(rng() % 300));
      ++done;
    }
    stop = true;
  });
  // A watchdog: no completed cycle for 20 s is a hang.
  long last = -1;
  for (int still = 0; !stop; std::this_thread::sleep_for(std::chrono::seconds(1))) {
    const long now = done;
    still = now == last ? still + 1 : 0;
    last = now;
    if (still >= 20) {
      std::printf("FAIL: mode=%s: no flush cycle completed for 20 s after %ld cycles\n", argv[1],
                  now);
      std::fflush(stdout);
      std::_Exit(1);
    }
  }
  flusher.join();
  pusher.join();
  gst_harness_teardown(h);
  std::printf("mode=%s: %ld flush cycles while pushing: PASS\n", argv[1], done.load());
  return 0;
}
