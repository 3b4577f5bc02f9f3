// gpupacketproc's threading and pool contracts, through GstHarness on the
// simulated GPU:
//
//   thread     any mode with low-latency=true pushes each results buffer
//              from the thread that pushed the batch (no hop); without it
//              every mode, cpu too, pushes from the element's task.
//   flush      a chain waiting for room in the pinned results pool (a
//              downstream that holds every results buffer) returns
//              GST_FLOW_FLUSHING as soon as FLUSH_START arrives (the pool
//              wakes its waiters through a condition variable).  Bound:
//              100 ms each of five times: a wake takes 0.1-5 ms here, and the
//              bound leaves room for a loaded machine, so this catches a
//              waiter left asleep or a slow poll, not a 10 ms one.
//   keep       EOS and FLUSH idle the engine (a persistent kernel stops)
//              and keep it: one engine made for a stream with a flush and an
//              EOS in it, idled at each, destroyed once at PAUSED->READY
//              (GPP_SIM_LOG, gpu/gpu_simulated.cpp).
//   shards     with device-ids=0,1 (two simulated devices), stats keeps
//              each shard's figures after its engine is gone: over a mode
//              switch and after PAUSED->READY, shard-N-packets add up to
//              every packet pushed, with shard-N-device-id N.
//   records    packet-records=false in mode=streams (the simulated engine,
//              like the real one, then leaves the records "on the device"
//              and poisons the results buffer): no results buffer, one
//              untimed gap, every packet counted and none read as malformed
//              (a poisoned record would be).
//   in-place   a batch whose packets lie apart (as afxdpsrc frames-in-place
//              makes them), its memory marked GPP_DEVICE_MAPPED_QDATA:
//              zerocopy and persistent read it where it lies (copied-batches
//              0); streams and graph, and zerocopy when the memory is not
//              marked, copy it packed (copied-bytes = the packed batch's
//              size, not the span's); every mode's records equal cpu's.
//   cycles     100 PLAYING <-> NULL cycles in mode=cpu, a few batches and EOS
//              each, every result out each time (the GPU modes' cycles are
//              test-gpu-modes' leaks section); the sanitizer build checks
//              that nothing leaks.
//
//   test-element-contracts
#include <gst/check/gstharness.h>
#include <glib/gstdio.h>
#include <gst/gst.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <gpupacket/gstpacketbatchmeta.h>
#include <gpupacket/packet-batch.h>
#include <gpupacket/packet-result.h>

#include "batch_builder.h"

namespace {

int g_failures = 0;

void fail(const std::string &what) {
  std::printf("FAIL %s\n", what.c_str());
  ++g_failures;
}

std::vector<uint8_t> make_batch(uint32_t packets, uint64_t first_number) {
  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_ETHERNET);
  uint8_t frame[60] = {};
  frame[12] = 0x08; // IPv4 ethertype, the rest zero: a malformed but harmless packet
  for (uint32_t i = 0; i < packets; ++i)
    builder.add(frame, sizeof frame, sizeof frame, 0, first_number + i);
  return builder.finish();
}

// A harness around gpupacketproc with `properties` ("name=value ..."), set
// in the description: some take effect only before the element starts.
GstHarness *start(const char *properties) {
  gchar *desc = g_strdup_printf("gpupacketproc num-streams=2 %s", properties);
  GstHarness *h = gst_harness_new_parse(desc);
  g_free(desc);
  gst_harness_set_src_caps_str(h, GPP_BATCH_CAPS_NAME ", linktype=(int)1");
  gst_harness_play(h);
  return h;
}

struct ThreadSeen {
  std::atomic<GThread *> pusher{nullptr};
};

GstPadProbeReturn note_thread(GstPad *, GstPadProbeInfo *, gpointer data) {
  static_cast<ThreadSeen *>(data)->pusher = g_thread_self();
  return GST_PAD_PROBE_OK;
}

// Whether results left from the thread that pushed the batch, for `props`.
void check_thread(const char *props, bool same_thread_expected) {
  GstHarness *h = start(props);
  ThreadSeen seen;
  GstElement *proc = gst_harness_find_element(h, "gpupacketproc");
  GstPad *src = gst_element_get_static_pad(proc, "src");
  gst_pad_add_probe(src, GST_PAD_PROBE_TYPE_BUFFER, note_thread, &seen, nullptr);
  gst_object_unref(src);
  gst_object_unref(proc);
  const std::vector<uint8_t> batch = make_batch(8, 1);
  bool all_same = true, none_same = true;
  for (int i = 0; i < 5; ++i) {
    seen.pusher = nullptr;
    if (gst_harness_push(h, gst_buffer_new_memdup(batch.data(), batch.size())) != GST_FLOW_OK) {
      fail(std::string(props) + ": a batch failed");
      break;
    }
    GstBuffer *out = gst_harness_pull(h); // waits for the task's push
    if (!out) {
      fail(std::string(props) + ": no results buffer");
      break;
    }
    gst_buffer_unref(out);
    const bool same = seen.pusher.load() == g_thread_self();
    all_same = all_same && same;
    none_same = none_same && !same;
  }
  // Every results buffer from the pushing thread, or every one from another.
  const bool ok = same_thread_expected ? all_same : none_same;
  std::printf("%s %s: results pushed from %s\n", ok ? "ok  " : "FAIL", props,
              all_same ? "the pushing thread" : none_same ? "another thread" : "both");
  if (!ok) ++g_failures;
  gst_harness_teardown(h);
}

// A chain blocked on the results pool returns FLUSHING soon after FLUSH_START.
void check_flush_wakes_pool_waiter() {
  // 7000 records of 128 bytes (896 KB) a batch: the 4 MiB results pool of
  // pool-size=1 holds four, and the harness keeps every results buffer.
  const std::vector<uint8_t> batch = make_batch(7000, 1);
  for (int round = 0; round < 5; ++round) {
    GstHarness *h = start("mode=streams pool-size=1");
    std::atomic<int> returned{0};
    std::atomic<GstFlowReturn> last{GST_FLOW_OK};
    std::atomic<int64_t> returned_at_us{0};
    std::thread pusher([&] {
      for (int i = 0; i < 10; ++i) {
        const GstFlowReturn r =
            gst_harness_push(h, gst_buffer_new_memdup(batch.data(), batch.size()));
        last = r;
        ++returned;
        if (r != GST_FLOW_OK) break;
      }
      returned_at_us = g_get_monotonic_time();
    });
    // Wait until the pushes stop returning: the chain waits for pool room.
    // A second without one (a push under a sanitizer on a loaded machine can
    // take a few hundred ms without waiting for room).
    int before = -1;
    for (int still = 0; still < 10; std::this_thread::sleep_for(std::chrono::milliseconds(100))) {
      const int now = returned;
      still = now == before ? still + 1 : 0;
      before = now;
    }
    if (returned >= 10) {
      fail("flush: the pool never filled (every push returned)");
      pusher.join();
      gst_harness_teardown(h);
      return;
    }
    const int64_t flushed_at_us = g_get_monotonic_time();
    gst_harness_push_event(h, gst_event_new_flush_start());
    pusher.join();
    const double waited_ms = (returned_at_us - flushed_at_us) / 1000.0;
    const bool ok = last == GST_FLOW_FLUSHING && waited_ms < 100;
    std::printf("%s flush %d: the waiting chain returned %s %.2f ms after FLUSH_START "
                "(%d pushes returned before)\n",
                ok ? "ok  " : "FAIL", round, gst_flow_get_name(last), waited_ms, before);
    if (!ok) ++g_failures;
    gst_harness_push_event(h, gst_event_new_flush_stop(TRUE));
    gst_harness_teardown(h);
  }
}

// The engine's life over a stream with a flush and an EOS in it.
void check_engine_kept(const char *mode) {
  gchar *log = g_build_filename(g_get_tmp_dir(), "gpp-sim-log-XXXXXX", nullptr);
  const int fd = g_mkstemp(log);
  if (fd >= 0) close(fd);
  g_setenv("GPP_SIM_LOG", log, TRUE);
  {
    gchar *props = g_strdup_printf("mode=%s", mode);
    GstHarness *h = start(props);
    g_free(props);
    const std::vector<uint8_t> batch = make_batch(8, 1);
    auto push_some = [&] {
      for (int i = 0; i < 3; ++i)
        gst_harness_push(h, gst_buffer_new_memdup(batch.data(), batch.size()));
    };
    push_some();
    gst_harness_push_event(h, gst_event_new_flush_start());
    gst_harness_push_event(h, gst_event_new_flush_stop(TRUE));
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    gst_harness_push_event(h, gst_event_new_segment(&segment));
    push_some();
    gst_harness_push_event(h, gst_event_new_eos());
    gst_harness_teardown(h); // PAUSED -> READY -> NULL
  }
  g_unsetenv("GPP_SIM_LOG");
  gchar *text = nullptr;
  g_file_get_contents(log, &text, nullptr, nullptr);
  g_unlink(log);
  g_free(log);
  const std::string lines = text ? text : "";
  g_free(text);
  auto count = [&](const std::string &what) {
    size_t n = 0;
    for (size_t at = lines.find(what); at != std::string::npos; at = lines.find(what, at + 1)) ++n;
    return n;
  };
  const std::string suffix = std::string(" ") + mode + "\n";
  const size_t made = count("made" + suffix), idled = count("idle" + suffix),
               destroyed = count("destroyed" + suffix);
  const bool ok = made == 1 && idled >= 2 && destroyed == 1;
  std::printf("%s keep mode=%s: engine made %zu, idled %zu, destroyed %zu times over a stream "
              "with a flush and an EOS (want 1, 2 or more, 1)\n",
              ok ? "ok  " : "FAIL", mode, made, idled, destroyed);
  if (!ok) ++g_failures;
}

// Batches of packets of many flows (IPv4 UDP, one source port each), so
// both shards get some.
std::vector<uint8_t> make_flow_batch(uint32_t packets, uint64_t first_number) {
  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_ETHERNET);
  for (uint32_t i = 0; i < packets; ++i) {
    uint8_t frame[60] = {};
    frame[12] = 0x08;                                  // IPv4
    uint8_t *ip = frame + 14;
    ip[0] = 0x45;                                      // version 4, 20-byte header
    ip[3] = 46;                                        // total length: 60 - 14
    ip[8] = 64;                                        // TTL
    ip[9] = 17;                                        // UDP
    ip[12] = 10, ip[15] = 1;                           // 10.0.0.1
    ip[16] = 10, ip[19] = 2;                           // 10.0.0.2
    uint8_t *udp = ip + 20;
    const uint32_t sport = 1024 + static_cast<uint32_t>(first_number) + i;
    udp[0] = static_cast<uint8_t>(sport >> 8), udp[1] = static_cast<uint8_t>(sport);
    udp[2] = 0, udp[3] = 53;
    udp[5] = 26;                                       // UDP length
    builder.add(frame, sizeof frame, sizeof frame, 0, first_number + i);
  }
  return builder.finish();
}

guint64 stat_u64(const GstStructure *s, const char *name) {
  guint64 v = 0;
  if (s) gst_structure_get_uint64(s, name, &v);
  return v;
}

void check_shard_stats() {
  g_setenv("GPP_SIM_DEVICES", "2", TRUE);
  GstHarness *h = start("mode=streams device-ids=0,1");
  GstElement *proc = gst_harness_find_element(h, "gpupacketproc");
  constexpr uint32_t kPackets = 64;
  uint64_t pushed = 0;
  auto push = [&](int batches) {
    for (int i = 0; i < batches; ++i) {
      const std::vector<uint8_t> batch = make_flow_batch(kPackets, pushed);
      if (gst_harness_push(h, gst_buffer_new_memdup(batch.data(), batch.size())) != GST_FLOW_OK)
        fail("shards: a batch failed");
      else if (GstBuffer *out = gst_harness_pull(h))
        gst_buffer_unref(out);
      pushed += kPackets;
    }
  };
  std::string problems;
  auto check = [&](const char *when) {
    GstStructure *s = nullptr;
    g_object_get(proc, "stats", &s, nullptr);
    const guint64 p0 = stat_u64(s, "shard-0-packets"), p1 = stat_u64(s, "shard-1-packets");
    gint d0 = -1, d1 = -1;
    if (s) {
      gst_structure_get_int(s, "shard-0-device-id", &d0);
      gst_structure_get_int(s, "shard-1-device-id", &d1);
    }
    const bool ok = p0 + p1 == pushed && p0 > 0 && p1 > 0 && d0 == 0 && d1 == 1;
    std::printf("%s shards %s: shard-0 %llu + shard-1 %llu packets of %llu pushed, devices %d, %d\n",
                ok ? "ok  " : "FAIL", when, static_cast<unsigned long long>(p0),
                static_cast<unsigned long long>(p1), static_cast<unsigned long long>(pushed), d0,
                d1);
    if (!ok) ++g_failures;
    if (s) gst_structure_free(s);
  };
  push(3);
  check("in mode=streams");
  gst_util_set_object_arg(G_OBJECT(proc), "mode", "graph");
  push(3);
  check("after a switch to mode=graph (the streams engine gone)");
  gst_element_set_state(proc, GST_STATE_READY);
  check("after PAUSED->READY (every engine gone)");
  gst_object_unref(proc);
  gst_harness_teardown(h);
  g_unsetenv("GPP_SIM_DEVICES");
}

void check_packet_records_off() {
  GstHarness *h = start("mode=streams packet-records=false");
  GstElement *proc = gst_harness_find_element(h, "gpupacketproc");
  constexpr uint32_t kPackets = 64, kBatches = 3;
  for (uint32_t i = 0; i < kBatches; ++i) {
    const std::vector<uint8_t> batch = make_flow_batch(kPackets, 1 + i * kPackets);
    if (gst_harness_push(h, gst_buffer_new_memdup(batch.data(), batch.size())) != GST_FLOW_OK)
      fail("records: a batch failed");
  }
  gst_harness_push_event(h, gst_event_new_eos()); // returns once every batch is out
  int gaps = 0;
  for (GstEvent *e; (e = gst_harness_try_pull_event(h)) != nullptr; gst_event_unref(e))
    gaps += GST_EVENT_TYPE(e) == GST_EVENT_GAP;
  GstStructure *s = nullptr;
  g_object_get(proc, "stats", &s, nullptr);
  const guint64 packets = stat_u64(s, "packets"), malformed = stat_u64(s, "malformed");
  const guint buffers = gst_harness_buffers_in_queue(h);
  const bool ok = buffers == 0 && gaps == 1 && packets == kPackets * kBatches && malformed == 0;
  std::printf("%s packet-records=false, mode=streams: %u results buffers, %d gaps, %" G_GUINT64_FORMAT
              " packets, %" G_GUINT64_FORMAT " malformed\n",
              ok ? "ok  " : "FAIL", buffers, gaps, packets, malformed);
  if (!ok) ++g_failures;
  if (s) gst_structure_free(s);
  gst_object_unref(proc);
  gst_harness_teardown(h);
}

void check_cpu_cycles() {
  constexpr int kCycles = 100, kBatches = 4;
  GstHarness *h = start("mode=cpu");
  std::vector<std::vector<uint8_t>> batches;
  for (int b = 0; b < kBatches; ++b) batches.push_back(make_batch(16, 1 + 16 * b));
  int done = 0;
  for (int c = 0; c < kCycles; ++c) {
    if (c > 0) {
      if (gst_element_set_state(h->element, GST_STATE_PLAYING) != GST_STATE_CHANGE_SUCCESS) {
        fail("cycles: NULL->PLAYING failed in cycle " + std::to_string(c));
        break;
      }
      gst_harness_push_event(h, gst_event_new_stream_start("cycle"));
      GstCaps *caps = gst_caps_from_string(GPP_BATCH_CAPS_NAME ", linktype=(int)1");
      gst_harness_push_event(h, gst_event_new_caps(caps));
      gst_caps_unref(caps);
      GstSegment segment;
      gst_segment_init(&segment, GST_FORMAT_TIME);
      gst_harness_push_event(h, gst_event_new_segment(&segment));
    }
    uint64_t expected = 1;
    bool ok = true;
    for (const auto &b : batches) {
      if (gst_harness_push(h, gst_buffer_new_memdup(b.data(), b.size())) != GST_FLOW_OK) {
        ok = false;
        break;
      }
    }
    gst_harness_push_event(h, gst_event_new_eos());
    for (int b = 0; b < kBatches && ok; ++b) {
      GstBuffer *out = gst_harness_try_pull(h);
      GstMapInfo map;
      if (!out || !gst_buffer_map(out, &map, GST_MAP_READ)) {
        ok = false;
        if (out) gst_buffer_unref(out);
        break;
      }
      for (size_t off = 0; off + sizeof(GppResult) <= map.size; off += sizeof(GppResult))
        ok = ok && reinterpret_cast<const GppResult *>(map.data + off)->packet_number == expected++;
      gst_buffer_unmap(out, &map);
      gst_buffer_unref(out);
    }
    if (!ok || expected != 1 + 16u * kBatches) {
      fail("cycles: cycle " + std::to_string(c) + " did not give packets 1.." +
           std::to_string(16 * kBatches) + " in order");
      break;
    }
    while (GstEvent *e = gst_harness_try_pull_event(h)) gst_event_unref(e);
    if (gst_element_set_state(h->element, GST_STATE_NULL) != GST_STATE_CHANGE_SUCCESS) {
      fail("cycles: PLAYING->NULL failed in cycle " + std::to_string(c));
      break;
    }
    ++done;
  }
  std::printf("%s cycles: %d of %d PLAYING<->NULL cycles in mode=cpu, every result each time\n",
              done == kCycles ? "ok  " : "FAIL", done, kCycles);
  if (done != kCycles) ++g_failures;
  gst_harness_teardown(h);
}

} // namespace

// One results buffer's records for `batch` (a buffer, consumed) through
// gpupacketproc `props`; the element's copied-batches, copied-bytes and
// bytes-to-device.
std::vector<uint8_t> run_one(const char *props, GstBuffer *batch, guint64 *copied_batches,
                             guint64 *copied_bytes, guint64 *bytes_to_device) {
  GstHarness *h = start(props);
  std::vector<uint8_t> records;
  if (gst_harness_push(h, batch) != GST_FLOW_OK) {
    fail(std::string(props) + ": the batch failed");
  } else if (GstBuffer *out = gst_harness_pull(h)) {
    GstMapInfo map;
    gst_buffer_map(out, &map, GST_MAP_READ);
    records.assign(map.data, map.data + map.size);
    gst_buffer_unmap(out, &map);
    gst_buffer_unref(out);
  } else {
    fail(std::string(props) + ": no results buffer");
  }
  GstElement *proc = gst_harness_find_element(h, "gpupacketproc");
  GstStructure *stats = nullptr;
  g_object_get(proc, "stats", &stats, nullptr);
  *copied_batches = stat_u64(stats, "copied-batches");
  *copied_bytes = stat_u64(stats, "copied-bytes");
  *bytes_to_device = stat_u64(stats, "bytes-to-device");
  gst_structure_free(stats);
  gst_object_unref(proc);
  gst_harness_teardown(h);
  return records;
}

void check_frames_in_place() {
  // 40 distinct IPv4/UDP packets, packed.
  gpp::BatchBuilder builder;
  builder.reset(GPP_LINKTYPE_ETHERNET);
  for (uint32_t i = 0; i < 40; ++i) {
    uint8_t frame[60 + 16] = {};
    const uint32_t len = 60 + (i % 17);
    frame[12] = 0x08;
    frame[14] = 0x45;
    frame[17] = static_cast<uint8_t>(len - 14);
    frame[22] = 64;
    frame[23] = 17; // UDP
    frame[26] = 10, frame[29] = static_cast<uint8_t>(i);
    frame[30] = 10, frame[33] = static_cast<uint8_t>(200 - i);
    frame[34] = 0x30, frame[35] = static_cast<uint8_t>(i);
    frame[36] = 0x00, frame[37] = 53;
    frame[39] = static_cast<uint8_t>(len - 34);
    builder.add(frame, len, len, 1000 * i, 1 + i);
  }
  const std::vector<uint8_t> packed = builder.finish();
  // The same batch with its packets 2 KiB apart, last first, 256 bytes into
  // each spot (frames in a UMEM): one block, the batch running to its end.
  const uint32_t count = 40;
  const size_t spots_at = gpp_align_up(gpp_batch_data_start(count), 4096);
  const size_t span = spots_at + count * 2048;
  // Junk around the packets, as a UMEM's frames hold stale bytes past each
  // packet: nothing may depend on zeroed padding.
  auto *sparse = static_cast<uint8_t *>(g_malloc(span));
  std::memset(sparse, 0xa5, span);
  std::memcpy(sparse, packed.data(), gpp_batch_data_start(count));
  reinterpret_cast<GppBatchHeader *>(sparse)->total_size = span;
  auto *descs = reinterpret_cast<GppPacketDesc *>(sparse + sizeof(GppBatchHeader));
  const GppPacketDesc *from = gpp_batch_descs(packed.data());
  for (uint32_t i = 0; i < count; ++i) {
    descs[i].offset = static_cast<uint32_t>(spots_at + (count - 1 - i) * 2048 + 256);
    std::memcpy(sparse + descs[i].offset, packed.data() + from[i].offset, from[i].caplen);
  }
  char why[256];
  if (!gpp_batch_validate(sparse, span, why, sizeof why)) fail(std::string("sparse batch: ") + why);
  auto sparse_buffer = [&](bool marked) {
    GstMemory *mem = gst_memory_new_wrapped(GST_MEMORY_FLAG_READONLY, sparse, span, 0, span,
                                            nullptr, nullptr);
    if (marked) gpp_memory_mark_device_mapped(mem);
    GstBuffer *buf = gst_buffer_new();
    gst_buffer_append_memory(buf, mem);
    return buf;
  };
  guint64 batches = 0, bytes = 0, to_device = 0;
  const std::vector<uint8_t> ref = run_one(
      "mode=cpu", gst_buffer_new_memdup(packed.data(), packed.size()), &batches, &bytes, &to_device);
  if (ref.size() != count * sizeof(GppResult)) fail("in-place: the cpu reference has no records");
  struct Case {
    const char *props;
    bool marked, in_place;
  } cases[] = {{"mode=zerocopy", true, true},   {"mode=persistent", true, true},
               {"mode=streams", true, false},   {"mode=graph", true, false},
               {"mode=zerocopy", false, false}, {"mode=cpu", true, true},
               // Shards copy their shares of it (two simulated devices):
               // they count those copies.
               {"mode=persistent device-ids=0,1", true, true}};
  for (const Case &c : cases) {
    const bool sharded = std::strstr(c.props, "device-ids") != nullptr;
    if (sharded) g_setenv("GPP_SIM_DEVICES", "2", TRUE);
    const std::vector<uint8_t> got =
        run_one(c.props, sparse_buffer(c.marked), &batches, &bytes, &to_device);
    if (sharded) g_unsetenv("GPP_SIM_DEVICES");
    const bool same = got == ref;
    const bool copies_ok = c.in_place ? batches == 0 : batches == 1 && bytes == packed.size();
    // What the GPU reads: the packed batch, copied or read in place (not the
    // span); each shard's share has a header of its own.
    const bool cpu = std::strcmp(c.props, "mode=cpu") == 0;
    const bool traffic_ok = cpu       ? to_device == 0
                            : sharded ? to_device >= packed.size() && to_device < packed.size() + 4096
                                      : to_device == packed.size();
    std::printf("%s in-place %s%s: records %s cpu's; copied %llu batches, %llu bytes; %llu bytes "
                "to the device (packed %zu, span %zu)\n",
                same && copies_ok && traffic_ok ? "ok  " : "FAIL", c.props,
                c.marked ? "" : " (not marked)", same ? "equal" : "differ from",
                static_cast<unsigned long long>(batches), static_cast<unsigned long long>(bytes),
                static_cast<unsigned long long>(to_device), packed.size(), span);
    if (!same || !copies_ok || !traffic_ok) ++g_failures;
  }
  g_free(sparse);
}

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  check_thread("mode=cpu low-latency=true", true);
  check_thread("mode=cpu", false);
  check_thread("mode=streams low-latency=true", true);
  check_thread("mode=persistent low-latency=true", true);
  check_thread("mode=streams", false);
  check_thread("mode=persistent", false);
  check_flush_wakes_pool_waiter();
  check_engine_kept("persistent");
  check_engine_kept("streams");
  check_shard_stats();
  check_packet_records_off();
  check_cpu_cycles();
  check_frames_in_place();
  std::printf(g_failures ? "%d FAILED\n" : "PASS\n", g_failures);
  return g_failures ? 1 : 0;
}
