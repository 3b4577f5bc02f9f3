// GPU suite: gpupacketproc in every mode, through GStreamer (GstHarness).
//
//   test-gpu-modes PCAP_DIR [--section NAME]
//
// Without --section the program checks that a CUDA device is usable (else it
// prints "SKIP: ..." and exits 77), then runs each section below in a child
// process of its own (the same program with --section), and the sections that
// try the GPU modes one after the other in one child per mode: a crash, a
// hang or a sticky CUDA error is then reported with what it was doing, and
// the other sections and modes still run.  Sections:
//
//   parity   every capture of PCAP_DIR and generated hostile traffic, batch
//            sizes 1/7/64/1000/4096 (all five for generated traffic and the 4
//            largest captures, 1 and 7 over the first 2000 packets; 64 and
//            4096 for the others), through mode=cpu
//            and each GPU mode: the GppResult records must be byte-identical,
//            one results buffer per batch, in input order, each with a
//            GstPacketBatchMeta that refers to the batch pushed.  Batches are
//            pushed as system memory (copied-batches must be > 0 in GPU modes)
//            and, for one GPU mode per capture, allocated from the allocator
//            the element proposes in the ALLOCATION query (copied-batches
//            must stay 0).  Then frames in place: the generated captures (64
//            and 4096) and the largest capture (4096, first 20000 packets)
//            as afxdpsrc frames-in-place lays batches out, in a registered
//            mapping, packets apart in shuffled order: every GPU mode equals
//            cpu; zerocopy and persistent copy nothing, the others copy the
//            batches packed.
//   switch   one element, ~200 batches, mode and num-streams changed while
//            PLAYING from the pushing thread and from a second thread at
//            random times; output must equal the cpu reference; then again
//            with a third thread reading the stats property meanwhile.
//   events   serialized events (custom markers, SEGMENT, CAPS, EOS) must leave
//            after exactly the batches pushed before them, in each GPU mode.
//   swap     acl-rules and dpi-patterns swapped every 7 batches while
//            PLAYING: each batch's records equal a cpu run's with the sets
//            scheduled for it (GPP_GPU_MODES_SWAP_REALISTIC: ClassBench 10k
//            sets and the whole ET Open 2024 folder, every 40 batches).
//   leaks    per GPU mode, 100 cycles NULL->PLAYING->NULL (pool-size=16):
//            device memory back within 4 MiB, RSS growth under 64 MiB.
//   errors   a batch larger than the pinned pool gives an element error in
//            each GPU mode; device-id=99 with mode=streams fails to reach
//            PAUSED with an error that names the device.
//   device1  (hosts with 2+ GPUs only) parity with device-id=1 in each GPU mode.
//   pools    a batch that fits the input pool but whose results (128 bytes a
//            packet) do not fit the results pool must give an element error,
//            not a hang (run last; see the comment at section_pools).
//
// Every failure line starts with "FAIL [context]" and names the mode, the
// capture, the batch size, the batch / packet number and the field.
//
// For reruns: GPP_GPU_MODES_MODES=graph,persistent restricts the GPU modes,
// GPP_GPU_MODES_CAPTURES=ssh,generated-raw the parity captures (substrings),
// GPP_GPU_MODES_PROPS="persistent-blocks=1 wait-strategy=yield" sets more
// properties on every element.
//
// GPP_GPU_MODES_SELFTEST=1 runs the same machinery with mode=cpu standing in
// for every GPU mode, on machines without a GPU (checks that need a GPU are
// left out).  It exists to test this program, not the element.
#include <fcntl.h>
#include <pcap/pcap.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdarg>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "batch_builder.h"
#include "engine.h"
#include "traffic_gen.h"
#include "pcap_linktype.h"
#include "../unit/capture_file.h"

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <gpupacket/gstpacketbatchmeta.h>
#include <gpupacket/flow-record.h>
#include <gpupacket/packet-batch.h>
#include <gpupacket/packet-result.h>

extern char **environ;

namespace {

constexpr int kSkip = 77;
constexpr size_t kRecord = sizeof(GppResult);

// Bytes a packet takes in a results buffer: a GppResult, and with
// GPP_GPU_MODES_PROPS="decap=inner" its GppTunnelInfo in the plane after
// the records (packet-result.h).
size_t record_bytes() {
  const char *props = g_getenv("GPP_GPU_MODES_PROPS");
  return props && std::strstr(props, "decap=inner") ? GPP_RESULTS_RECORD_SIZE_TUNNELS
                                                    : GPP_RESULTS_RECORD_SIZE;
}
constexpr int kWaitSeconds = 60;     // for results / EOS, extended while results arrive
constexpr int kStallSeconds = 120;   // watchdog: no progress at all for this long
constexpr int kMaxFailLines = 400;   // failure lines printed per process
constexpr int kMaxDiffsPerRun = 3;   // differing packets described per run

// Every mode's name, from the one table of modes (gpu/engine.h).
std::vector<std::string> all_modes() {
  std::vector<std::string> out;
  for (const gpp::ModeInfo &m : gpp::kModes) out.push_back(m.name);
  return out;
}

bool g_selftest = false;             // GPP_GPU_MODES_SELFTEST: cpu stands in for GPU modes
int g_failures = 0;
int g_fail_lines = 0;

// ---------------------------------------------------------------------------
// Failure reporting, progress, and what to say on a crash or a stall.

char g_context[768] = "start-up";
std::mutex g_context_mutex;
std::atomic<int64_t> g_progress_us{0};

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void touch_progress() { g_progress_us.store(now_us(), std::memory_order_relaxed); }

std::string vformat(const char *fmt, va_list ap) {
  char buf[2048];
  vsnprintf(buf, sizeof buf, fmt, ap);
  return buf;
}

std::string format(const char *fmt, ...) G_GNUC_PRINTF(1, 2);
std::string format(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  std::string s = vformat(fmt, ap);
  va_end(ap);
  return s;
}

// What the process is doing now; printed on a crash or a stall.
void set_context(const std::string &ctx) {
  std::lock_guard<std::mutex> lock(g_context_mutex);
  g_strlcpy(g_context, ctx.c_str(), sizeof g_context);
  touch_progress();
}

void fail(const std::string &ctx, const char *fmt, ...) G_GNUC_PRINTF(2, 3);
void fail(const std::string &ctx, const char *fmt, ...) {
  g_failures++;
  if (++g_fail_lines > kMaxFailLines) {
    if (g_fail_lines == kMaxFailLines + 1)
      std::fprintf(stderr, "FAIL ... (further failure lines suppressed; still counted)\n");
    return;
  }
  va_list ap;
  va_start(ap, fmt);
  std::string msg = vformat(fmt, ap);
  va_end(ap);
  std::fprintf(stderr, "FAIL [%s] %s\n", ctx.c_str(), msg.c_str());
  std::fflush(stderr);
}

extern "C" void on_fatal_signal(int sig) {
  // Async-signal-safe enough: write(2) of a static buffer, then die.
  char head[96];
  const int n = snprintf(head, sizeof head, "\nFATAL: signal %d (%s) during: ", sig,
                         sig == SIGSEGV ? "SIGSEGV" : sig == SIGABRT ? "SIGABRT"
                         : sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "?");
  ssize_t ignored = write(2, head, n);
  ignored = write(2, g_context, strnlen(g_context, sizeof g_context));
  ignored = write(2, "\n", 1);
  (void)ignored;
  signal(sig, SIG_DFL);
  raise(sig);
}

void start_watchdog() {
  for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE}) signal(sig, on_fatal_signal);
  touch_progress();
  std::thread([] {
    for (;;) {
      std::this_thread::sleep_for(std::chrono::seconds(1));
      const int64_t idle = now_us() - g_progress_us.load(std::memory_order_relaxed);
      if (idle > int64_t(kStallSeconds) * 1000000) {
        std::lock_guard<std::mutex> lock(g_context_mutex);
        std::fprintf(stderr, "\nFAIL STALL: no progress for %d s during: %s\n", kStallSeconds,
                     g_context);
        std::fflush(stderr);
        std::fflush(stdout);
        _exit(3);
      }
    }
  }).detach();
}

// ---------------------------------------------------------------------------
// Traffic: captures read with libpcap, generated hostile traffic, batches.

using Packet = gpptest::CapturedPacket;

struct Capture {
  std::string name;
  uint32_t linktype = GPP_LINKTYPE_ETHERNET;
  std::vector<Packet> packets;
  size_t file_bytes = 0;
};

struct Batch {
  std::vector<uint8_t> bytes;
  uint32_t count = 0;
  uint64_t first_number = 0; // packet_number of its first packet (0 when empty)
};

bool read_capture(const std::string &path, Capture &cap) {
  std::string error;
  if (!gpptest::read_pcap(path, &cap.linktype, &cap.packets, &error)) {
    fail("read " + path, "libpcap: %s", error.c_str());
    return false;
  }
  return true;
}

std::vector<Capture> read_captures(const std::string &dir) {
  std::vector<Capture> out;
  std::vector<std::string> names;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *e = readdir(d)) {
      const std::string name = e->d_name;
      auto ends = [&](const char *suffix) {
        const size_t n = strlen(suffix);
        return name.size() > n && name.compare(name.size() - n, n, suffix) == 0;
      };
      if (ends(".pcap") || ends(".pcapng")) names.push_back(name);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  for (const std::string &name : names) {
    Capture cap;
    cap.name = name;
    const std::string path = dir + "/" + name;
    if (!read_capture(path, cap)) continue;
    for (const Packet &p : cap.packets) cap.file_bytes += p.bytes.size();
    out.push_back(std::move(cap));
  }
  return out;
}

// Random traffic in the style of test_gpu_parity.cpp: plausible link, VLAN,
// IPv4/IPv6 and L4 headers with random lengths, fields and payloads (IPv4
// fragment fields, IPv6 extension chains), then a share cut short by a snap
// length or with a wire length past the capture: every parser path and error
// path runs.  Sizes 1..max_size, with extra weight on tiny packets.
std::vector<Packet> generate_traffic(size_t count, uint32_t seed, uint32_t linktype,
                                     uint32_t max_size = 9000) {
  std::mt19937 rng(seed);
  auto rnd = [&](uint32_t n) { return n ? static_cast<uint32_t>(rng() % n) : 0u; };
  std::vector<Packet> out;
  out.reserve(count);
  const uint8_t protos[] = {6, 17, 1, 58, 0, 44, 43, 60, 51, 47, 132};
  for (size_t i = 0; i < count; ++i) {
    const uint32_t size = rnd(8) == 0 ? 1 + rnd(std::min<uint32_t>(64, max_size))
                                      : 1 + rnd(max_size);
    std::vector<uint8_t> b(size);
    for (auto &x : b) x = static_cast<uint8_t>(rng());
    auto put16 = [&](size_t at, uint16_t v) {
      if (at + 1 < b.size()) {
        b[at] = static_cast<uint8_t>(v >> 8);
        b[at + 1] = static_cast<uint8_t>(v);
      }
    };
    const bool v6 = rnd(2);
    const uint16_t ethertype = rnd(16) == 0 ? static_cast<uint16_t>(rnd(65536))
                                            : (v6 ? 0x86dd : 0x0800);
    size_t off = 0;
    if (linktype == GPP_LINKTYPE_ETHERNET) {
      off = 12;
      for (uint32_t tags = rnd(8) < 5 ? 0 : rnd(6); tags > 0; --tags, off += 4)
        put16(off, rnd(2) ? 0x8100 : 0x88a8);
      put16(off, ethertype);
      off += 2;
    } else if (linktype == GPP_LINKTYPE_LINUX_SLL) {
      put16(14, ethertype);
      off = 16;
    }
    const uint8_t proto = protos[rnd(sizeof protos)];
    if (off + 40 < b.size()) {
      if (v6) {
        b[off] = static_cast<uint8_t>(0x60 | (b[off] & 0x0f));
        put16(off + 4, rnd(4) ? static_cast<uint16_t>(size - off - 40)
                              : static_cast<uint16_t>(rnd(65536)));
        b[off + 6] = proto;
        for (size_t e = off + 40; e + 8 < b.size() && e < off + 200; e += 8) b[e + 1] = 0;
      } else {
        b[off] = static_cast<uint8_t>(0x40 | (rnd(8) ? 5 : rnd(16)));
        put16(off + 2, rnd(4) ? static_cast<uint16_t>(size - off)
                              : static_cast<uint16_t>(rnd(65536)));
        const uint32_t frag = rnd(6);
        put16(off + 6, frag < 3 ? 0x4000 : frag < 4 ? 0 : static_cast<uint16_t>(rnd(65536)));
        b[off + 9] = proto;
      }
    }
    uint32_t caplen = size, wirelen = size;
    if (rnd(5) == 0) caplen = rnd(size + 1);          // cut by a snap length (maybe to 0)
    if (rnd(20) == 0) wirelen = size + rnd(2000);      // longer on the wire than captured
    b.resize(caplen);
    out.push_back({std::move(b), wirelen});
  }
  return out;
}

Capture generated_capture(const char *name, uint32_t linktype, size_t count, uint32_t seed,
                          uint32_t max_size = 9000) {
  Capture c;
  c.name = name;
  c.linktype = linktype;
  c.packets = generate_traffic(count, seed, linktype, max_size);
  for (const Packet &p : c.packets) c.file_bytes += p.bytes.size();
  return c;
}

// Packets [first, last) of `cap` as one batch; packet i gets number i + 1.
Batch make_batch(const Capture &cap, size_t first, size_t last) {
  gpp::BatchBuilder bb;
  bb.reset(cap.linktype);
  for (size_t i = first; i < last; ++i)
    bb.add(cap.packets[i].bytes.data(), static_cast<uint32_t>(cap.packets[i].bytes.size()),
           cap.packets[i].wirelen, 1000000000ull + 1000ull * i, i + 1);
  Batch b;
  b.bytes = bb.finish();
  b.count = bb.packet_count();
  b.first_number = b.count ? first + 1 : 0;
  return b;
}

// Batches over the first `max_packets` packets of `cap`.
std::vector<Batch> make_batches(const Capture &cap, size_t batch_size,
                                size_t max_packets = SIZE_MAX) {
  std::vector<Batch> out;
  const size_t end = std::min(cap.packets.size(), max_packets);
  for (size_t first = 0; first < end; first += batch_size)
    out.push_back(make_batch(cap, first, std::min(end, first + batch_size)));
  return out;
}

// Batches of random sizes (1..max_batch packets) over `cap`, with empty
// batches at the given indices.
std::vector<Batch> random_batches(const Capture &cap, size_t max_batch, uint32_t seed,
                                  const std::vector<size_t> &empty_at = {}) {
  std::mt19937 rng(seed);
  std::vector<Batch> out;
  size_t first = 0;
  while (first < cap.packets.size()) {
    if (std::find(empty_at.begin(), empty_at.end(), out.size()) != empty_at.end()) {
      out.push_back(make_batch(cap, first, first));
      continue;
    }
    const size_t n = 1 + rng() % max_batch;
    const size_t last = std::min(cap.packets.size(), first + n);
    out.push_back(make_batch(cap, first, last));
    first = last;
  }
  return out;
}

size_t max_batch_bytes(const std::vector<Batch> &batches) {
  size_t m = 0;
  for (const Batch &b : batches)
    m = std::max({m, b.bytes.size(), size_t(b.count) * kRecord});
  return m;
}

// A pool (pool-size, MiB) that holds two of the largest batches and their
// results: small pools keep the per-run cudaHostAlloc cheap.
guint pool_mib_for(const std::vector<Batch> &batches) {
  const size_t need = 2 * max_batch_bytes(batches) + (1u << 20);
  return std::max<guint>(8, static_cast<guint>((need + (1u << 20) - 1) >> 20));
}

// ---------------------------------------------------------------------------
// GppResult fields, for saying which one differs.

struct Field {
  const char *name;
  size_t offset, size;
};

#define GPP_FIELD(f) Field{#f, offsetof(GppResult, f), sizeof(static_cast<GppResult *>(nullptr)->f)}
const Field kFields[] = {
    GPP_FIELD(packet_number), GPP_FIELD(timestamp_ns), GPP_FIELD(status),
    GPP_FIELD(rss_hash), GPP_FIELD(caplen), GPP_FIELD(wirelen), GPP_FIELD(ethertype),
    GPP_FIELD(vlan_ids), GPP_FIELD(vlan_count), GPP_FIELD(ip_version), GPP_FIELD(l4_proto),
    GPP_FIELD(ipv4_checksum), GPP_FIELD(l4_checksum), GPP_FIELD(ip_flags),
    GPP_FIELD(frag_offset), GPP_FIELD(sport), GPP_FIELD(dport), GPP_FIELD(tcp_flags),
    GPP_FIELD(ttl), GPP_FIELD(icmp_type), GPP_FIELD(icmp_code), GPP_FIELD(ipv6_ext_count),
    GPP_FIELD(mpls_label_count), GPP_FIELD(l3_offset), GPP_FIELD(l4_offset),
    GPP_FIELD(payload_length), GPP_FIELD(src), GPP_FIELD(dst), GPP_FIELD(acl_rule),
    GPP_FIELD(acl_action), GPP_FIELD(reserved0), GPP_FIELD(dpi_pattern), GPP_FIELD(dpi_hits),
    GPP_FIELD(payload_offset), GPP_FIELD(ip_length),
};
#undef GPP_FIELD

std::string field_value(const uint8_t *rec, const Field &f) {
  const uint8_t *p = rec + f.offset;
  if (f.size == 1 || f.size == 2 || f.size == 4 || f.size == 8) {
    uint64_t v = 0;
    std::memcpy(&v, p, f.size); // little-endian host
    return format("%llu (0x%llx)", static_cast<unsigned long long>(v),
                  static_cast<unsigned long long>(v));
  }
  std::string s;
  for (size_t i = 0; i < f.size; ++i) s += format("%02x", p[i]);
  return s;
}

// "status: cpu=0 streams=4 (0x4); rss_hash: ..." for the fields that differ.
std::string describe_diff(const GppResult &ref, const GppResult &got, const char *mode) {
  const auto *a = reinterpret_cast<const uint8_t *>(&ref);
  const auto *b = reinterpret_cast<const uint8_t *>(&got);
  std::string out;
  bool covered[kRecord] = {};
  for (const Field &f : kFields) {
    for (size_t i = 0; i < f.size; ++i) covered[f.offset + i] = true;
    if (std::memcmp(a + f.offset, b + f.offset, f.size) != 0)
      out += format("%s%s: cpu=%s %s=%s", out.empty() ? "" : "; ", f.name,
                    field_value(a, f).c_str(), mode, field_value(b, f).c_str());
  }
  for (size_t i = 0; i < kRecord; ++i)
    if (!covered[i] && a[i] != b[i])
      out += format("%sunnamed byte %zu: cpu=%02x %s=%02x", out.empty() ? "" : "; ", i, a[i],
                    mode, b[i]);
  return out;
}

// ---------------------------------------------------------------------------
// One gpupacketproc in a GstHarness, with a probe on its src pad that takes
// every results buffer (copies its records, reads its meta, then drops it so
// that pinned memory goes back at once) and logs buffers and events in the
// order the element pushes them.

struct OutBuffer {
  size_t size = 0;
  uint64_t first_number = 0;     // of its first record (0: none)
  bool has_meta = false;
  const void *meta_batch = nullptr;
  uint32_t meta_count = UINT32_MAX;  // packet_count in the meta's batch header
  uint64_t meta_first = 0;          // first packet_number in the meta's batch
  GstClockTime pts = GST_CLOCK_TIME_NONE;
};

struct LogEntry {
  bool is_buffer;
  GstEventType type;          // events
  size_t buffers_before;      // results buffers pushed before this item
  guint64 marker = G_MAXUINT64; // custom marker events: batches pushed before them
  guint64 segment_base = 0;
};

struct Collector {
  std::mutex m;
  std::condition_variable cv;
  std::vector<OutBuffer> buffers;
  std::vector<GppResult> records;
  std::vector<GppTunnelInfo> tunnels; // decap=inner: the tunnel plane's entries
  std::vector<LogEntry> log;
  std::vector<GppFlowRecord> flows; // from the flows pad
  bool eos = false;
  std::vector<std::string> problems; // found in the probe (odd sizes...)

  void clear() {
    std::lock_guard<std::mutex> lock(m);
    buffers.clear();
    records.clear();
    flows.clear();
    log.clear();
    eos = false;
    problems.clear();
  }
};

GType batch_meta_api() {
  static GType api = 0;
  if (!api) api = g_type_from_name(GST_PACKET_BATCH_META_API_NAME);
  return api;
}

GstPadProbeReturn flows_probe_cb(GstPad *, GstPadProbeInfo *info, gpointer user_data) {
  auto *c = static_cast<Collector *>(user_data);
  GstMapInfo map;
  GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
  if (!gst_buffer_map(buf, &map, GST_MAP_READ)) return GST_PAD_PROBE_OK;
  std::lock_guard<std::mutex> lock(c->m);
  if (map.size % sizeof(GppFlowRecord) != 0)
    c->problems.push_back(format("a flows buffer of %zu bytes", map.size));
  const auto *r = reinterpret_cast<const GppFlowRecord *>(map.data);
  c->flows.insert(c->flows.end(), r, r + map.size / sizeof(GppFlowRecord));
  gst_buffer_unmap(buf, &map);
  return GST_PAD_PROBE_OK;
}

GstPadProbeReturn probe_cb(GstPad *, GstPadProbeInfo *info, gpointer user_data) {
  auto *c = static_cast<Collector *>(user_data);
  touch_progress();
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_BUFFER) {
    GstBuffer *buf = GST_PAD_PROBE_INFO_BUFFER(info);
    OutBuffer ob;
    ob.pts = GST_BUFFER_PTS(buf);
    const GType api = batch_meta_api();
    if (GstMeta *meta = api ? gst_buffer_get_meta(buf, api) : nullptr) {
      ob.has_meta = true;
      GstBuffer *batch = reinterpret_cast<GstPacketBatchMeta *>(meta)->batch;
      ob.meta_batch = batch;
      GstMapInfo bm;
      if (batch && gst_buffer_map(batch, &bm, GST_MAP_READ)) {
        if (bm.size >= sizeof(GppBatchHeader)) {
          GppBatchHeader h;
          std::memcpy(&h, bm.data, sizeof h);
          ob.meta_count = h.packet_count;
          if (h.packet_count && bm.size >= sizeof h + sizeof(GppPacketDesc)) {
            GppPacketDesc d;
            std::memcpy(&d, bm.data + h.header_size, sizeof d);
            ob.meta_first = d.packet_number;
          }
        }
        gst_buffer_unmap(batch, &bm);
      }
    }
    GstMapInfo map;
    std::vector<GppResult> recs;
    std::vector<GppTunnelInfo> tunnels;
    std::string problem;
    if (gst_buffer_map(buf, &map, GST_MAP_READ)) {
      ob.size = map.size;
      const size_t per_packet = record_bytes();
      if (map.size % per_packet)
        problem = format("results buffer of %zu bytes is not a whole number of %zu-byte records",
                         map.size, per_packet);
      recs.resize(map.size / per_packet);
      if (!recs.empty()) std::memcpy(recs.data(), map.data, recs.size() * kRecord);
      if (per_packet == GPP_RESULTS_RECORD_SIZE_TUNNELS) {
        const GppTunnelInfo *plane = gpp_results_tunnels(map.data, map.size);
        tunnels.assign(plane, plane + recs.size());
      }
      gst_buffer_unmap(buf, &map);
    } else {
      problem = "could not map a results buffer";
    }
    if (!recs.empty()) ob.first_number = recs[0].packet_number;
    {
      std::lock_guard<std::mutex> lock(c->m);
      if (!problem.empty())
        c->problems.push_back(format("results buffer %zu: %s", c->buffers.size(), problem.c_str()));
      if (c->eos)
        c->problems.push_back(format("results buffer %zu arrived after EOS", c->buffers.size()));
      c->log.push_back({true, GST_EVENT_UNKNOWN, c->buffers.size()});
      c->buffers.push_back(ob);
      c->records.insert(c->records.end(), recs.begin(), recs.end());
      c->tunnels.insert(c->tunnels.end(), tunnels.begin(), tunnels.end());
    }
    c->cv.notify_all();
    return GST_PAD_PROBE_DROP;
  }
  if (GST_PAD_PROBE_INFO_TYPE(info) & GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM) {
    GstEvent *ev = GST_PAD_PROBE_INFO_EVENT(info);
    LogEntry e{false, GST_EVENT_TYPE(ev), 0};
    if (GST_EVENT_TYPE(ev) == GST_EVENT_CUSTOM_DOWNSTREAM) {
      const GstStructure *s = gst_event_get_structure(ev);
      if (s && gst_structure_has_name(s, "gpp-test-marker"))
        gst_structure_get_uint64(s, "after", &e.marker);
    } else if (GST_EVENT_TYPE(ev) == GST_EVENT_SEGMENT) {
      const GstSegment *seg;
      gst_event_parse_segment(ev, &seg);
      e.segment_base = seg->base;
    }
    {
      std::lock_guard<std::mutex> lock(c->m);
      e.buffers_before = c->buffers.size();
      if (c->eos)
        c->problems.push_back(format("%s event after EOS", GST_EVENT_TYPE_NAME(ev)));
      if (GST_EVENT_TYPE(ev) == GST_EVENT_EOS) c->eos = true;
      c->log.push_back(e);
    }
    c->cv.notify_all();
  }
  return GST_PAD_PROBE_OK;
}

std::string flow_name(GstFlowReturn r) { return gst_flow_get_name(r); }

guint64 stat_u64(const GstStructure *s, const char *field) {
  guint64 v = 0;
  if (s) gst_structure_get_uint64(s, field, &v);
  return v;
}

struct Props {
  std::string mode = "cpu";
  guint pool_mib = 8;
  guint num_streams = gpp::kDefaultNumStreams;
  gint device_id = 0;
  bool verify_l4 = false;
  bool symmetric_rss = false;
  // More properties, set before the element starts (e.g. flows=true).
  std::vector<std::pair<std::string, std::string>> extra;
};

std::string caps_text(uint32_t linktype) {
  return format("%s, linktype=(int)%u", GPP_BATCH_CAPS_NAME, linktype);
}

class Proc {
public:
  GstHarness *h = nullptr;
  GstElement *element = nullptr;
  GstBus *bus = nullptr;
  Collector col;
  std::string ctx;

  // Creates the element with `props`, brings it to PLAYING and sends
  // caps and a segment.  ok() is false when it could not start (the
  // failure is already reported unless `expect_failure`).
  Proc(const Props &props, uint32_t linktype, const std::string &context,
       bool expect_failure = false)
      : ctx(context) {
    element = gst_element_factory_make("gpupacketproc", nullptr);
    if (!element) {
      fail(ctx, "gpupacketproc not found: is GST_PLUGIN_PATH_1_0 the build's gst-plugin dir?");
      return;
    }
    gst_object_ref_sink(element);
    bus = gst_bus_new();
    gst_element_set_bus(element, bus);
    set_mode(props.mode.c_str());
    g_object_set(element, "pool-size", props.pool_mib, "num-streams", props.num_streams,
                 "device-id", props.device_id, "verify-l4-checksum",
                 static_cast<gboolean>(props.verify_l4), "symmetric-rss",
                 static_cast<gboolean>(props.symmetric_rss), nullptr);
    // GPP_GPU_MODES_PROPS="persistent-blocks=1 wait-strategy=yield": more
    // properties for every element (for reruns).
    if (const char *extra = g_getenv("GPP_GPU_MODES_PROPS")) {
      gchar **pairs = g_strsplit_set(extra, " ,", -1);
      for (gchar **kv = pairs; *kv; ++kv) {
        gchar **parts = g_strsplit(*kv, "=", 2);
        if (parts[0] && parts[1]) gst_util_set_object_arg(G_OBJECT(element), parts[0], parts[1]);
        g_strfreev(parts);
      }
      g_strfreev(pairs);
    }
    for (const auto &kv : props.extra)
      gst_util_set_object_arg(G_OBJECT(element), kv.first.c_str(), kv.second.c_str());
    // Flow records (flows=true), unlinked: the probe sees them all the same.
    GstPad *flows = gst_element_get_static_pad(element, "flows");
    gst_pad_add_probe(flows, GST_PAD_PROBE_TYPE_BUFFER, flows_probe_cb, &col, nullptr);
    gst_object_unref(flows);
    GstPad *src = gst_element_get_static_pad(element, "src");
    gst_pad_add_probe(src,
                      static_cast<GstPadProbeType>(GST_PAD_PROBE_TYPE_BUFFER |
                                                   GST_PAD_PROBE_TYPE_EVENT_DOWNSTREAM),
                      probe_cb, &col, nullptr);
    gst_object_unref(src);
    // The harness asserts that the element reaches PLAYING; try it first.
    const GstStateChangeReturn r = gst_element_set_state(element, GST_STATE_PLAYING);
    if (r == GST_STATE_CHANGE_FAILURE) {
      if (!expect_failure)
        fail(ctx, "could not reach PLAYING: %s", take_errors().c_str());
      gst_element_set_state(element, GST_STATE_NULL);
      return;
    }
    h = gst_harness_new_with_element(element, "sink", "src");
    started_ = true;
    send_caps_and_segment(linktype);
  }

  ~Proc() {
    if (h) gst_harness_teardown(h);
    else if (element) gst_element_set_state(element, GST_STATE_NULL);
    if (element) gst_object_unref(element);
    if (bus) gst_object_unref(bus);
  }

  bool ok() const { return started_; }

  void set_mode(const char *mode) { gst_util_set_object_arg(G_OBJECT(element), "mode", mode); }

  bool push_event(GstEvent *ev, const char *what) {
    if (!gst_harness_push_event(h, ev)) {
      fail(ctx, "the element refused the %s event", what);
      return false;
    }
    return true;
  }

  bool send_caps_and_segment(uint32_t linktype, guint64 segment_base = 0) {
    GstCaps *caps = gst_caps_from_string(caps_text(linktype).c_str());
    bool ok = push_event(gst_event_new_caps(caps), "CAPS");
    gst_caps_unref(caps);
    GstSegment segment;
    gst_segment_init(&segment, GST_FORMAT_TIME);
    segment.base = segment_base;
    return push_event(gst_event_new_segment(&segment), "SEGMENT") && ok;
  }

  // After a restart from NULL the element's pad has lost its sticky events.
  bool restart_stream(uint32_t linktype, int n) {
    const std::string id = format("gpp-modes-%d", n);
    return push_event(gst_event_new_stream_start(id.c_str()), "STREAM_START") &&
           send_caps_and_segment(linktype);
  }

  // The allocator the element proposes in the ALLOCATION query (ref'd), or
  // nullptr.
  GstAllocator *query_allocator(uint32_t linktype, GstAllocationParams *params) {
    GstCaps *caps = gst_caps_from_string(caps_text(linktype).c_str());
    GstQuery *q = gst_query_new_allocation(caps, FALSE);
    gst_caps_unref(caps);
    GstAllocator *allocator = nullptr;
    gst_allocation_params_init(params);
    if (gst_pad_peer_query(h->srcpad, q) && gst_query_get_n_allocation_params(q) > 0)
      gst_query_parse_nth_allocation_param(q, 0, &allocator, params);
    gst_query_unref(q);
    return allocator;
  }

  GstStructure *stats() {
    GstStructure *s = nullptr;
    g_object_get(element, "stats", &s, nullptr);
    return s;
  }

  // Error (and warning) messages on the bus so far, joined; "" when none.
  std::string take_errors() {
    std::string out;
    while (GstMessage *msg = gst_bus_pop_filtered(
               bus, static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_WARNING))) {
      GError *err = nullptr;
      gchar *debug = nullptr;
      if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR)
        gst_message_parse_error(msg, &err, &debug);
      else
        gst_message_parse_warning(msg, &err, &debug);
      out += format("%s%s: \"%s\" (%s)", out.empty() ? "" : " / ",
                    GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR ? "ERROR" : "WARNING",
                    err ? err->message : "?", debug ? debug : "");
      g_clear_error(&err);
      g_free(debug);
      gst_message_unref(msg);
    }
    return out;
  }

  // Whether an ERROR message was posted (kept for all_errors()).
  bool has_error() {
    if (GstMessage *m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) pending_errors_.push_back(m);
    return !pending_errors_.empty();
  }

  std::string all_errors() {
    std::string out;
    for (GstMessage *m : pending_errors_) {
      GError *err = nullptr;
      gchar *debug = nullptr;
      gst_message_parse_error(m, &err, &debug);
      out += format("%sERROR: \"%s\" (%s)", out.empty() ? "" : " / ", err ? err->message : "?",
                    debug ? debug : "");
      g_clear_error(&err);
      g_free(debug);
      gst_message_unref(m);
    }
    pending_errors_.clear();
    const std::string rest = take_errors();
    if (!rest.empty()) out += (out.empty() ? "" : " / ") + rest;
    return out;
  }

  // Waits for EOS at the probe; false (reported) on a timeout or an error.
  bool wait_eos(size_t expected_buffers) {
    int64_t deadline = now_us() + int64_t(kWaitSeconds) * 1000000;
    std::unique_lock<std::mutex> lock(col.m);
    size_t seen = col.buffers.size();
    while (!col.eos) {
      col.cv.wait_for(lock, std::chrono::milliseconds(50));
      if (col.buffers.size() != seen) {
        seen = col.buffers.size();
        deadline = now_us() + int64_t(kWaitSeconds) * 1000000;
      }
      if (col.eos) break;
      lock.unlock();
      const bool error = has_error();
      lock.lock();
      if (error && !col.eos) {
        fail(ctx, "element error while waiting for EOS (%zu of %zu results buffers out): %s",
             col.buffers.size(), expected_buffers, all_errors().c_str());
        return false;
      }
      if (now_us() > deadline) {
        fail(ctx, "no EOS after %d s without progress: %zu of %zu results buffers out",
             kWaitSeconds, col.buffers.size(), expected_buffers);
        return false;
      }
    }
    return true;
  }

private:
  bool started_ = false;
  std::vector<GstMessage *> pending_errors_;
};

GstBuffer *system_buffer(const Batch &b) {
  return gst_buffer_new_memdup(b.bytes.data(), b.bytes.size());
}

GstBuffer *pool_buffer(const Batch &b, GstAllocator *allocator, GstAllocationParams *params) {
  GstMemory *mem = gst_allocator_alloc(allocator, b.bytes.size(), params);
  if (!mem) return nullptr;
  GstMapInfo map;
  gst_memory_map(mem, &map, GST_MAP_WRITE);
  std::memcpy(map.data, b.bytes.data(), b.bytes.size());
  gst_memory_unmap(mem, &map);
  GstBuffer *buf = gst_buffer_new();
  gst_buffer_append_memory(buf, mem);
  return buf;
}

// Batches as afxdpsrc frames-in-place makes them: each batch's header and
// descriptors in a slot ahead of one registered mapping whose packets lie
// apart, in shuffled order (as frames a fill ring recycles), each 256 bytes
// into a 2 KiB-aligned spot of its own, with junk (0xa5) around it; a batch
// runs to the mapping's end.  Buffers carry GPP_DEVICE_MAPPED_QDATA.
class InPlaceBatches {
public:
  InPlaceBatches(const std::vector<Batch> &batches, uint32_t seed) {
    std::vector<size_t> slot_at;
    size_t slots = 0, packets = 0, spots = 0;
    for (const Batch &b : batches) {
      slot_at.push_back(slots);
      slots += gpp_align_up(gpp_batch_data_start(b.count), 4096);
      const GppPacketDesc *d = gpp_batch_descs(b.bytes.data());
      for (uint32_t i = 0; i < b.count; ++i, ++packets)
        spots += gpp_align_up(kHeadroom + d[i].caplen, kSpot);
    }
    bytes_ = slots + spots;
    if (bytes_ > UINT32_MAX) return; // offsets are 32-bit
    base_ = static_cast<uint8_t *>(
        mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    if (base_ == MAP_FAILED) {
      base_ = nullptr;
      return;
    }
    // Junk around the packets, as a UMEM's frames hold stale bytes past each
    // packet: nothing may depend on zeroed padding.
    std::memset(base_, 0xa5, bytes_);
    std::string why;
    registration_ = gpp::register_host_memory(base_, bytes_, &why);
    if (!registration_) {
      fail("in-place batches", "register_host_memory: %s", why.c_str());
      return;
    }
    // Spots in shuffled order, packet by packet.
    std::vector<size_t> order(packets);
    for (size_t i = 0; i < packets; ++i) order[i] = i;
    std::shuffle(order.begin(), order.end(), std::mt19937(seed));
    std::vector<size_t> spot_size(packets), spot_at(packets);
    for (size_t b = 0, k = 0; b < batches.size(); ++b) {
      const GppPacketDesc *d = gpp_batch_descs(batches[b].bytes.data());
      for (uint32_t i = 0; i < batches[b].count; ++i, ++k)
        spot_size[k] = gpp_align_up(kHeadroom + d[i].caplen, kSpot);
    }
    for (size_t at = slots, i = 0; i < packets; ++i) {
      spot_at[order[i]] = at;
      at += spot_size[order[i]];
    }
    for (size_t b = 0, k = 0; b < batches.size(); ++b) {
      const uint8_t *src = batches[b].bytes.data();
      uint8_t *dst = base_ + slot_at[b];
      std::memcpy(dst, src, gpp_batch_data_start(batches[b].count));
      auto *h = reinterpret_cast<GppBatchHeader *>(dst);
      h->total_size = bytes_ - slot_at[b];
      auto *d = reinterpret_cast<GppPacketDesc *>(dst + h->header_size);
      for (uint32_t i = 0; i < batches[b].count; ++i, ++k) {
        const size_t packet_at = spot_at[k] + kHeadroom;
        std::memcpy(base_ + packet_at, src + d[i].offset, d[i].caplen);
        d[i].offset = static_cast<uint32_t>(packet_at - slot_at[b]);
      }
      buffers_.push_back({dst, h->total_size});
    }
  }
  ~InPlaceBatches() {
    registration_.reset(); // before the memory goes
    if (base_) munmap(base_, bytes_);
  }
  bool ok() const { return registration_ && buffers_.size() > 0; }
  size_t span() const { return bytes_; }
  GstBuffer *buffer(size_t i) const {
    GstMemory *mem = gst_memory_new_wrapped(GST_MEMORY_FLAG_READONLY, buffers_[i].first,
                                            buffers_[i].second, 0, buffers_[i].second, nullptr,
                                            nullptr);
    gpp_memory_mark_device_mapped(mem);
    GstBuffer *buf = gst_buffer_new();
    gst_buffer_append_memory(buf, mem);
    return buf;
  }

private:
  static constexpr size_t kHeadroom = 256, kSpot = 2048;
  uint8_t *base_ = nullptr;
  size_t bytes_ = 0;
  std::unique_ptr<gpp::HostRegistration> registration_;
  std::vector<std::pair<uint8_t *, size_t>> buffers_;
};

// ---------------------------------------------------------------------------
// A run: push batches (with optional hooks), EOS, collect, check structure.

struct RunOptions {
  Props props;
  bool pool_memory = false; // batches from the allocator the element proposes
  const InPlaceBatches *in_place = nullptr; // batches from there (frames in place)
  // Push (and send EOS) from a thread of its own, as a pipeline's streaming
  // thread would: not the thread that changed the element's state.
  bool push_from_thread = false;
  // Called before batch i is pushed, and with i == batches.size() before EOS.
  std::function<void(Proc &, size_t)> before_push;
  // Always called before the element is torn down (also after a failure).
  std::function<void(Proc &)> before_teardown;
  // Whether the engine at EOS must be the mode set at the start (runs that
  // switch modes from other threads end wherever the last switch left it).
  bool same_mode_at_eos = true;
};

struct RunResult {
  bool started = false;
  bool completed = false;      // all batches pushed, EOS seen
  std::vector<GppResult> records;
  std::vector<GppTunnelInfo> tunnels; // decap=inner
  std::vector<GppFlowRecord> flows;
  std::vector<OutBuffer> buffers;
  std::vector<LogEntry> log;
  std::vector<const void *> pushed; // GstBuffer pointers, in push order
  guint64 copied = 0, copied_bytes = 0, fallbacks = 0;
  GstStructure *stats = nullptr;    // at EOS, owned
  ~RunResult() {
    if (stats) gst_structure_free(stats);
  }
};

// Checks one results buffer per batch, in input order, with the right size
// and a meta that refers to the batch pushed.
void check_structure(const std::string &ctx, const std::vector<Batch> &batches,
                     const RunResult &r) {
  if (r.buffers.size() != batches.size())
    fail(ctx, "%zu results buffers for %zu batches pushed", r.buffers.size(), batches.size());
  int reported = 0;
  const size_t n = std::min(r.buffers.size(), batches.size());
  for (size_t i = 0; i < n && reported < 5; ++i) {
    const OutBuffer &o = r.buffers[i];
    const Batch &b = batches[i];
    std::string what;
    if (o.size != size_t(b.count) * record_bytes())
      what += format("; %zu bytes, expected %u records = %zu bytes", o.size, b.count,
                     size_t(b.count) * record_bytes());
    if (b.count && o.first_number != b.first_number) {
      // Whose results are these?  Name the batch they belong to.
      long owner = -1;
      for (size_t j = 0; j < batches.size(); ++j)
        if (batches[j].count && batches[j].first_number == o.first_number) owner = long(j);
      what += format("; first record is packet %llu, expected packet %llu (results of batch %ld: "
                     "reordered, lost or duplicated)",
                     static_cast<unsigned long long>(o.first_number),
                     static_cast<unsigned long long>(b.first_number), owner);
    }
    if (!o.has_meta) {
      what += format("; no %s meta", GST_PACKET_BATCH_META_API_NAME);
    } else {
      if (i < r.pushed.size() && o.meta_batch != r.pushed[i])
        what += format("; meta refers to buffer %p, batch %zu was pushed as %p", o.meta_batch, i,
                       r.pushed[i]);
      if (o.meta_count != b.count || (b.count && o.meta_first != b.first_number))
        what += format("; meta's batch holds %u packets from packet %llu, expected %u from %llu",
                       o.meta_count, static_cast<unsigned long long>(o.meta_first), b.count,
                       static_cast<unsigned long long>(b.first_number));
    }
    if (!what.empty()) {
      fail(ctx, "results buffer %zu (batch %zu: %u packets from packet %llu)%s", i, i, b.count,
           static_cast<unsigned long long>(b.first_number), what.c_str());
      reported++;
    }
  }
  // EOS last, exactly once.
  size_t eos = 0;
  for (const LogEntry &e : r.log)
    if (!e.is_buffer && e.type == GST_EVENT_EOS) {
      eos++;
      if (e.buffers_before != batches.size())
        fail(ctx, "EOS left after %zu results buffers, expected after all %zu", e.buffers_before,
             batches.size());
    }
  if (r.completed && eos != 1) fail(ctx, "%zu EOS events at the sink, expected 1", eos);
}

// decap=inner: compares the tunnel plane's entries with the cpu reference's;
// returns the number that differ.
size_t compare_tunnels(const std::string &ctx, const char *mode,
                       const std::vector<GppTunnelInfo> &ref, const std::vector<GppTunnelInfo> &got) {
  if (ref.size() != got.size())
    fail(ctx, "%s: %zu tunnel entries, the cpu reference has %zu", mode, got.size(), ref.size());
  size_t diffs = 0;
  for (size_t i = 0; i < std::min(ref.size(), got.size()); ++i)
    if (std::memcmp(&ref[i], &got[i], sizeof(GppTunnelInfo)) != 0 && ++diffs <= kMaxDiffsPerRun)
      fail(ctx, "%s: tunnel entry %zu differs (types %u/%u, id %u/%u)", mode, i,
           ref[i].tunnel_count, got[i].tunnel_count, ref[i].tunnel_id, got[i].tunnel_id);
  return diffs;
}

// Compares records with the cpu reference; returns the number of differing
// records and describes the first few.
size_t compare_records(const std::string &ctx, const char *mode,
                       const std::vector<GppResult> &ref, const std::vector<GppResult> &got,
                       const std::vector<Batch> &batches) {
  size_t diffs = 0;
  if (ref.size() != got.size())
    fail(ctx, "%zu records, the cpu reference has %zu", got.size(), ref.size());
  const size_t n = std::min(ref.size(), got.size());
  // Which batch a record index falls in, for the message.
  std::vector<size_t> batch_end;
  size_t total = 0;
  for (const Batch &b : batches) batch_end.push_back(total += b.count);
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(&ref[i], &got[i], kRecord) == 0) continue;
    if (++diffs <= kMaxDiffsPerRun) {
      const size_t bi = std::upper_bound(batch_end.begin(), batch_end.end(), i) - batch_end.begin();
      const size_t in_batch = i - (bi ? batch_end[bi - 1] : 0);
      fail(ctx, "record %zu (packet %llu, batch %zu, index %zu in it) differs: %s", i,
           static_cast<unsigned long long>(ref[i].packet_number), bi, in_batch,
           describe_diff(ref[i], got[i], mode).c_str());
    }
  }
  if (diffs > kMaxDiffsPerRun)
    fail(ctx, "%zu records differ from the cpu reference in all (first %d shown)", diffs,
         kMaxDiffsPerRun);
  return diffs;
}

// Seconds spent per mode: making the element and reaching PLAYING, pushing
// until EOS, and tearing it down (printed by the parity summary).
struct ModeTime {
  double setup = 0, stream = 0, teardown = 0;
  size_t runs = 0, batches = 0;
};
std::map<std::string, ModeTime> g_mode_time;

struct SlowRun {
  double secs;
  size_t batches;
  std::string ctx;
};
std::vector<SlowRun> g_slow_runs; // streaming time of every completed run

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void run_batches(const std::string &ctx, uint32_t linktype, const std::vector<Batch> &batches,
                 const RunOptions &opt, RunResult &out) {
  set_context(ctx);
  ModeTime &mt = g_mode_time[opt.props.mode];
  mt.runs++;
  mt.batches += batches.size();
  auto t = std::chrono::steady_clock::now();
  std::unique_ptr<Proc> owner(new Proc(opt.props, linktype, ctx));
  Proc &p = *owner;
  mt.setup += seconds_since(t);
  t = std::chrono::steady_clock::now();
  struct Teardown {
    std::unique_ptr<Proc> &proc;
    ModeTime &mt;
    std::chrono::steady_clock::time_point &t;
    const std::string &ctx;
    size_t batches;
    ~Teardown() {
      const double secs = seconds_since(t);
      mt.stream += secs;
      g_slow_runs.push_back({secs, batches, ctx});
      const auto t2 = std::chrono::steady_clock::now();
      proc.reset();
      mt.teardown += seconds_since(t2);
    }
  } teardown{owner, mt, t, ctx, batches.size()};
  if (!p.ok()) return;
  out.started = true;
  GstAllocator *allocator = nullptr;
  GstAllocationParams params;
  bool pushed_all = true;
  if (opt.pool_memory) {
    allocator = p.query_allocator(linktype, &params);
    if (!allocator) {
      fail(ctx, "the element proposed no allocator in the ALLOCATION query");
      pushed_all = false;
    }
  }
  auto push_all = [&] {
    for (size_t i = 0; i < batches.size() && pushed_all; ++i) {
      if (opt.before_push) opt.before_push(p, i);
      GstBuffer *buf = allocator       ? pool_buffer(batches[i], allocator, &params)
                       : opt.in_place ? opt.in_place->buffer(i)
                                      : system_buffer(batches[i]);
      if (!buf) {
        fail(ctx, "could not allocate batch %zu (%zu bytes) from the proposed allocator", i,
             batches[i].bytes.size());
        pushed_all = false;
        break;
      }
      GST_BUFFER_PTS(buf) = GST_SECOND + i * GST_MSECOND;
      out.pushed.push_back(buf);
      touch_progress();
      const GstFlowReturn r = gst_harness_push(p.h, buf);
      if (r != GST_FLOW_OK) {
        fail(ctx, "pushing batch %zu (%u packets from packet %llu) returned %s; bus: %s", i,
             batches[i].count, static_cast<unsigned long long>(batches[i].first_number),
             flow_name(r).c_str(), p.all_errors().c_str());
        pushed_all = false;
        break;
      }
    }
    if (pushed_all) {
      if (opt.before_push) opt.before_push(p, batches.size());
      if (p.push_event(gst_event_new_eos(), "EOS") && p.wait_eos(batches.size()))
        out.completed = true;
    }
  };
  if (opt.push_from_thread)
    std::thread(push_all).join();
  else
    push_all();
  if (allocator) gst_object_unref(allocator);
  if (opt.before_teardown) opt.before_teardown(p);
  out.stats = p.stats();
  // EOS idles the engine (a persistent kernel stops) and keeps it, with its
  // allocations, for the next batch.
  const gchar *active = gst_structure_get_string(out.stats, "active-mode");
  if (out.completed && !batches.empty() && opt.same_mode_at_eos &&
      (!active || opt.props.mode != active))
    fail(ctx, "after EOS stats active-mode is %s, want %s (the engine should be idled, not "
              "destroyed)",
         active ? active : "(missing)", opt.props.mode.c_str());
  out.copied = stat_u64(out.stats, "copied-batches");
  out.copied_bytes = stat_u64(out.stats, "copied-bytes");
  out.fallbacks = stat_u64(out.stats, "pool-fallbacks");
  const std::string errors = p.all_errors();
  if (!errors.empty()) fail(ctx, "bus: %s", errors.c_str());
  {
    std::lock_guard<std::mutex> lock(p.col.m);
    out.records = std::move(p.col.records);
    out.tunnels = std::move(p.col.tunnels);
    out.flows = std::move(p.col.flows);
    out.buffers = std::move(p.col.buffers);
    out.log = std::move(p.col.log);
    for (const std::string &problem : p.col.problems) fail(ctx, "%s", problem.c_str());
  }
}

// GPP_GPU_MODES_MODES=streams,graph restricts the GPU modes (for reruns).
std::vector<std::string> gpu_modes() {
  if (g_selftest) return {"cpu"};
  std::vector<std::string> out;
  const char *only = g_getenv("GPP_GPU_MODES_MODES");
  for (const gpp::ModeInfo &m : gpp::kModes)
    if (gpp::is_gpu_mode(m.mode) && (!only || std::strstr(only, m.name))) out.push_back(m.name);
  return out;
}

// ---------------------------------------------------------------------------
// Section: parity.

struct ParityTotals {
  size_t runs = 0, records = 0, diff_records = 0, pool_runs = 0, in_place_runs = 0;
};

// Batch sizes below this run over the first kSmallBatchPackets packets only:
// per-batch costs dominate there, and the larger sizes cover every packet.
constexpr size_t kSmallBatch = 64, kSmallBatchPackets = 2000;

void parity_one(const Capture &cap, size_t batch_size, int pool_mode_index,
                const Props &base, const char *variant, ParityTotals &t) {
  const bool prefix = batch_size < kSmallBatch && cap.packets.size() > kSmallBatchPackets;
  const std::vector<Batch> batches =
      make_batches(cap, batch_size, prefix ? kSmallBatchPackets : SIZE_MAX);
  const std::string where =
      format("capture=%s%s linktype=%u batch-size=%zu%s%s", cap.name.c_str(),
             prefix ? format(" (first %zu packets)", kSmallBatchPackets).c_str() : "",
             cap.linktype, batch_size, *variant ? " " : "", variant);
  Props props = base;
  props.pool_mib = pool_mib_for(batches);

  RunOptions ref_opt;
  ref_opt.props = props;
  ref_opt.props.mode = "cpu";
  RunResult ref;
  const std::string ref_ctx = "mode=cpu " + where + " memory=system";
  run_batches(ref_ctx, cap.linktype, batches, ref_opt, ref);
  check_structure(ref_ctx, batches, ref);
  t.runs++;
  if (!ref.completed) return;
  // The reference itself must describe the packets pushed.
  for (size_t i = 0, k = 0; i < batches.size() && k < ref.records.size(); ++i)
    for (uint32_t j = 0; j < batches[i].count && k < ref.records.size(); ++j, ++k)
      if (ref.records[k].packet_number != batches[i].first_number + j) {
        fail(ref_ctx, "record %zu has packet_number %llu, expected %llu", k,
             static_cast<unsigned long long>(ref.records[k].packet_number),
             static_cast<unsigned long long>(batches[i].first_number + j));
        i = batches.size();
        break;
      }

  const std::vector<std::string> modes = gpu_modes();
  for (size_t m = 0; m < modes.size(); ++m) {
    for (int pool = 0; pool < 2; ++pool) {
      if (pool && (int(m) != pool_mode_index || g_selftest)) continue;
      RunOptions opt;
      opt.props = props;
      opt.props.mode = modes[m];
      opt.pool_memory = pool;
      const std::string ctx = "mode=" + modes[m] + " " + where +
                              (pool ? " memory=proposed-allocator" : " memory=system");
      RunResult got;
      run_batches(ctx, cap.linktype, batches, opt, got);
      t.runs++;
      t.pool_runs += pool;
      if (!got.started) continue;
      check_structure(ctx, batches, got);
      t.records += got.records.size();
      t.diff_records += compare_records(ctx, modes[m].c_str(), ref.records, got.records, batches);
      t.diff_records += compare_tunnels(ctx, modes[m].c_str(), ref.tunnels, got.tunnels);
      if (!g_selftest && !batches.empty()) {
        if (!pool && got.copied == 0)
          fail(ctx, "stats copied-batches is 0 after %zu system-memory batches: expected > 0",
               batches.size());
        if (pool && got.copied != 0)
          fail(ctx, "stats copied-batches is %llu for batches allocated from the proposed "
                    "allocator (pool-fallbacks %llu): expected 0",
               static_cast<unsigned long long>(got.copied),
               static_cast<unsigned long long>(got.fallbacks));
        if (pool && got.fallbacks != 0)
          fail(ctx, "stats pool-fallbacks is %llu: the %u MiB pool could not serve the batches",
               static_cast<unsigned long long>(got.fallbacks), props.pool_mib);
      }
    }
  }
}

// Frames in place: the batches of parity_one laid out as afxdpsrc
// frames-in-place lays them out (InPlaceBatches), over the first
// kInPlacePackets packets.  Each GPU mode's records equal the cpu run's on
// the packed batches; zerocopy and persistent read them where they lie
// (nothing copied), the others copy each batch packed (copied-bytes are the
// packed batches' bytes, not the mapping's).
constexpr size_t kInPlacePackets = 20000;

void parity_in_place(const Capture &cap, size_t batch_size, const Props &base, ParityTotals &t) {
  const std::vector<Batch> batches = make_batches(cap, batch_size, kInPlacePackets);
  const std::string where = format("capture=%s (first %zu packets) linktype=%u batch-size=%zu",
                                   cap.name.c_str(), kInPlacePackets, cap.linktype, batch_size);
  const InPlaceBatches in_place(batches, 7 + static_cast<uint32_t>(batch_size));
  if (!in_place.ok()) {
    fail(where, "could not lay out %zu batches in place (%zu bytes)", batches.size(),
         in_place.span());
    return;
  }
  Props props = base;
  // The persistent kernel stages a batch's span: the pool must hold it.
  props.pool_mib = std::max<guint>(pool_mib_for(batches),
                                   static_cast<guint>((in_place.span() >> 20) + 2));
  RunOptions ref_opt;
  ref_opt.props = props;
  ref_opt.props.mode = "cpu";
  RunResult ref;
  run_batches("mode=cpu " + where + " memory=system", cap.linktype, batches, ref_opt, ref);
  t.runs++;
  if (!ref.completed) return;
  size_t packed_bytes = 0;
  for (const Batch &b : batches) packed_bytes += b.bytes.size();
  for (const std::string &mode : gpu_modes()) {
    RunOptions opt;
    opt.props = props;
    opt.props.mode = mode;
    opt.in_place = &in_place;
    const std::string ctx = "mode=" + mode + " " + where + " memory=in-place";
    RunResult got;
    run_batches(ctx, cap.linktype, batches, opt, got);
    t.runs++;
    t.in_place_runs++;
    if (!got.started) continue;
    check_structure(ctx, batches, got);
    t.records += got.records.size();
    t.diff_records += compare_records(ctx, mode.c_str(), ref.records, got.records, batches);
    t.diff_records += compare_tunnels(ctx, mode.c_str(), ref.tunnels, got.tunnels);
    const bool reads_mapped = mode == "zerocopy" || mode == "persistent";
    if (reads_mapped && got.copied != 0)
      fail(ctx, "stats copied-batches is %llu: %s should read device-mapped batches in place",
           static_cast<unsigned long long>(got.copied), mode.c_str());
    if (!reads_mapped && got.copied_bytes != packed_bytes)
      fail(ctx, "stats copied-bytes is %llu, the packed batches hold %zu: the batches should be "
                "copied packed",
           static_cast<unsigned long long>(got.copied_bytes), packed_bytes);
  }
}

int section_parity(const std::string &pcap_dir) {
  std::vector<Capture> captures = read_captures(pcap_dir);
  if (captures.empty()) fail("parity", "no captures (.pcap/.pcapng) in %s", pcap_dir.c_str());
  // GPP_GPU_MODES_CAPTURES=ssh,generated-raw keeps the captures whose name
  // contains one of the words (for reruns).
  const char *only = g_getenv("GPP_GPU_MODES_CAPTURES");
  auto wanted = [only](const std::string &name) {
    if (!only) return true;
    gchar **words = g_strsplit(only, ",", -1);
    bool hit = false;
    for (gchar **w = words; *w; ++w) hit = hit || (**w && name.find(*w) != std::string::npos);
    g_strfreev(words);
    return hit;
  };
  captures.erase(std::remove_if(captures.begin(), captures.end(),
                                [&](const Capture &c) { return !wanted(c.name); }),
                 captures.end());
  // The 4 largest captures get every batch size.
  std::vector<size_t> order(captures.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return captures[a].file_bytes > captures[b].file_bytes;
  });
  std::vector<bool> representative(captures.size(), false);
  for (size_t i = 0; i < std::min<size_t>(4, order.size()); ++i) representative[order[i]] = true;

  std::vector<Capture> generated;
  if (wanted("generated-ethernet"))
    generated.push_back(generated_capture("generated-ethernet", GPP_LINKTYPE_ETHERNET, 4000, 11));
  if (wanted("generated-raw"))
    generated.push_back(generated_capture("generated-raw", GPP_LINKTYPE_RAW, 1500, 12));
  if (wanted("generated-linux-sll"))
    generated.push_back(generated_capture("generated-linux-sll", GPP_LINKTYPE_LINUX_SLL, 1500, 13));

  const size_t all_sizes[] = {1, 7, 64, 1000, 4096};
  const size_t some_sizes[] = {64, 4096};
  const int gpu_mode_count = static_cast<int>(gpu_modes().size());
  ParityTotals t;
  size_t packets = 0;
  int capture_index = 0;
  const auto t0 = std::chrono::steady_clock::now();
  Props base;
  for (size_t c = 0; c < captures.size(); ++c, ++capture_index) {
    const Capture &cap = captures[c];
    packets += cap.packets.size();
    const bool all = representative[c];
    const int pool_mode = capture_index % gpu_mode_count;
    if (all) {
      for (size_t bs : all_sizes) parity_one(cap, bs, bs == 64 ? pool_mode : -1, base, "", t);
    } else {
      for (size_t bs : some_sizes) parity_one(cap, bs, bs == 64 ? pool_mode : -1, base, "", t);
    }
  }
  for (const Capture &cap : generated) {
    packets += cap.packets.size();
    const int pool_mode = capture_index++ % gpu_mode_count;
    for (size_t bs : all_sizes) parity_one(cap, bs, bs == 64 ? pool_mode : -1, base, "", t);
  }
  // Frames in place (afxdpsrc frames-in-place): GPU modes only.
  if (!g_selftest) {
    for (const Capture &cap : generated)
      for (size_t bs : some_sizes) parity_in_place(cap, bs, base, t);
    if (!order.empty()) parity_in_place(captures[order[0]], 4096, base, t);
  }
  // The other core settings reach the GPU too.
  Props checksums;
  checksums.verify_l4 = true;
  checksums.symmetric_rss = true;
  for (const Capture &cap : generated)
    parity_one(cap, 64, -1, checksums, "verify-l4-checksum=true symmetric-rss=true", t);
  if (!order.empty())
    parity_one(captures[order[0]], 1000, -1, checksums,
               "verify-l4-checksum=true symmetric-rss=true", t);

  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  for (const auto &kv : g_mode_time)
    std::printf("parity time mode=%s: %zu runs, setup %.2f s, streaming %.2f s (%zu batches, "
                "%.3f ms a batch), teardown %.2f s\n",
                kv.first.c_str(), kv.second.runs, kv.second.setup, kv.second.stream,
                kv.second.batches,
                kv.second.batches ? 1000 * kv.second.stream / kv.second.batches : 0.0,
                kv.second.teardown);
  std::sort(g_slow_runs.begin(), g_slow_runs.end(),
            [](const SlowRun &a, const SlowRun &b) { return a.secs > b.secs; });
  for (size_t i = 0; i < std::min<size_t>(6, g_slow_runs.size()); ++i)
    std::printf("parity slow run: %.2f s for %zu batches (%.3f ms a batch, push to EOS): %s\n",
                g_slow_runs[i].secs, g_slow_runs[i].batches,
                g_slow_runs[i].batches ? 1000 * g_slow_runs[i].secs / g_slow_runs[i].batches : 0.0,
                g_slow_runs[i].ctx.c_str());
  std::printf("parity: %zu captures + %zu generated (%zu packets), %zu runs (%zu with batches "
              "from the proposed allocator, %zu with frames in place), %zu records compared, %zu "
              "differing, %.1f s: %s\n",
              captures.size(), generated.size(), packets, t.runs, t.pool_runs, t.in_place_runs,
              t.records, t.diff_records, secs, g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Section: mode and num-streams switches while PLAYING.

int switch_run(const std::vector<Batch> &batches, const std::vector<GppResult> &ref,
               bool poll_stats) {
  const std::string ctx = poll_stats ? "switch+stats-poller" : "switch";
  std::atomic<bool> stop{false};
  std::atomic<unsigned> changes_main{0}, changes_other{0}, stats_reads{0};
  std::vector<std::thread> threads;
  const std::vector<std::string> modes =
      g_selftest ? std::vector<std::string>{"cpu"} : all_modes();

  RunOptions opt;
  opt.props.mode = "cpu";
  opt.props.pool_mib = pool_mib_for(batches);
  opt.same_mode_at_eos = false;
  opt.before_push = [&](Proc &p, size_t i) {
    if (i == 0) {
      // The second thread: random property changes at random times.
      threads.emplace_back([&, element = p.element] {
        std::mt19937 rng(1234);
        while (!stop.load()) {
          std::this_thread::sleep_for(std::chrono::microseconds(rng() % 3000));
          if (rng() % 2)
            gst_util_set_object_arg(G_OBJECT(element), "mode", modes[rng() % modes.size()].c_str());
          else
            g_object_set(element, "num-streams", static_cast<guint>(1 + rng() % 8), nullptr);
          changes_other++;
        }
      });
      if (poll_stats)
        threads.emplace_back([&, element = p.element] {
          while (!stop.load()) {
            GstStructure *s = nullptr;
            g_object_get(element, "stats", &s, nullptr);
            if (s) gst_structure_free(s);
            stats_reads++;
            std::this_thread::sleep_for(std::chrono::microseconds(100));
          }
        });
    }
    if (i < batches.size()) {
      if (i % 3 == 0) {
        p.set_mode(modes[(i / 3) % modes.size()].c_str());
        changes_main++;
      }
      if (i % 4 == 0) {
        g_object_set(p.element, "num-streams", static_cast<guint>(1 + (i / 4) % 8), nullptr);
        changes_main++;
      }
      set_context(format("%s: pushing batch %zu of %zu", ctx.c_str(), i, batches.size()));
    } else {
      set_context(ctx + ": EOS");
    }
  };
  // The property threads stop before the element goes (also after a failure).
  opt.before_teardown = [&](Proc &) {
    stop = true;
    for (auto &t : threads) t.join();
    threads.clear();
  };
  RunResult got;
  run_batches(ctx, GPP_LINKTYPE_ETHERNET, batches, opt, got);
  if (!got.started) return 1;
  check_structure(ctx, batches, got);
  const size_t diffs = compare_records(ctx, "switching", ref, got.records, batches);
  std::string per_mode;
  for (const std::string &name : all_modes()) {
    const char *m = name.c_str();
    const guint64 n = stat_u64(got.stats, format("%s-batches", m).c_str());
    per_mode += format(" %s=%llu", m, static_cast<unsigned long long>(n));
    if (!g_selftest && n == 0)
      fail(ctx, "no batch ran in mode=%s (stats %s-batches is 0): the switches did not happen",
           m, m);
  }
  std::printf("%s: %zu batches, %u property changes from the pushing thread, %u from the second "
              "thread%s, batches per mode:%s, max-batches-in-flight=%u, %zu differing records\n",
              ctx.c_str(), batches.size(), changes_main.load(), changes_other.load(),
              poll_stats ? format(", %u stats reads", stats_reads.load()).c_str() : "",
              per_mode.c_str(),
              [&] {
                guint v = 0;
                if (got.stats) gst_structure_get_uint(got.stats, "max-batches-in-flight", &v);
                return v;
              }(),
              diffs);
  return 0;
}

int section_switch() {
  const Capture cap = generated_capture("generated-switch", GPP_LINKTYPE_ETHERNET, 26000, 21, 9000);
  const std::vector<Batch> batches = random_batches(cap, 256, 22, {0, 57, 58, 150});
  RunOptions ref_opt;
  ref_opt.props.pool_mib = pool_mib_for(batches);
  RunResult ref;
  run_batches("switch: cpu reference", cap.linktype, batches, ref_opt, ref);
  check_structure("switch: cpu reference", batches, ref);
  if (!ref.completed) return 1;
  switch_run(batches, ref.records, false);
  switch_run(batches, ref.records, true);
  std::printf("switch: %zu batches (%zu packets, 4 empty batches), 2 runs: %s\n", batches.size(),
              cap.packets.size(), g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Section: flows=true.  The flow table lives where the mode runs (the GPU's
// memory in every GPU mode, updated by each batch's kernel; host memory in
// cpu), so the flow
// records, ended by timeouts, TCP ends, a full table and EOS at points the
// packet times decide, must be the same stream, byte for byte and in the
// same order, whatever the mode: in each mode alone, and with the mode
// switched every few batches (the table moves between host and device with
// its open flows).  A table for 600 flows overflows now and then.

int section_flows() {
  // Every other packet from 20 busy flows (never idle, split by the active
  // timeout), the rest from 3,000 that come and go.
  gpp::TrafficSpec spec;
  spec.profile = gpp::TrafficProfile::Mix;
  spec.flows = 20;
  spec.seed = 30;
  gpp::TrafficGenerator busy(spec);
  spec.flows = 3000;
  spec.seed = 31;
  gpp::TrafficGenerator light(spec);
  std::vector<Batch> batches;
  std::mt19937 rng(32);
  // One packet a millisecond: 40 s of traffic, sweeps every second of it.
  const size_t total = g_selftest ? 8000 : 40000;
  for (size_t first = 0; first < total;) {
    const size_t n = std::min(total - first, size_t{1} + rng() % 512);
    gpp::BatchBuilder bb;
    bb.reset(GPP_LINKTYPE_ETHERNET);
    for (size_t i = first; i < first + n; ++i) {
      const std::vector<uint8_t> &frame = i % 2 ? light.next() : busy.next();
      bb.add(frame.data(), static_cast<uint32_t>(frame.size()), static_cast<uint32_t>(frame.size()),
             1000000000ull + 1000000ull * i, i + 1);
    }
    Batch b;
    b.bytes = bb.finish();
    b.count = bb.packet_count();
    b.first_number = first + 1;
    batches.push_back(std::move(b));
    first += n;
  }
  const std::vector<std::pair<std::string, std::string>> flow_props = {
      {"flows", "true"}, {"flow-idle-timeout", "1"}, {"flow-active-timeout", "5"},
      {"flow-max", "600"}};
  auto run = [&](const std::string &ctx, const std::string &mode, bool switching,
                 RunResult &out) {
    RunOptions opt;
    opt.props.mode = mode;
    opt.props.pool_mib = pool_mib_for(batches);
    opt.props.extra = flow_props;
    const std::vector<std::string> modes = g_selftest ? std::vector<std::string>{"cpu"} : all_modes();
    if (switching) {
      opt.same_mode_at_eos = false;
      opt.before_push = [&](Proc &p, size_t i) {
        if (i < batches.size() && i % 3 == 0) p.set_mode(modes[(i / 3) % modes.size()].c_str());
      };
    }
    run_batches(ctx, GPP_LINKTYPE_ETHERNET, batches, opt, out);
    if (!out.completed) return;
    gboolean on_gpu = FALSE;
    if (!gst_structure_get_boolean(out.stats, "flow-table-on-gpu", &on_gpu))
      fail(ctx, "stats have no flow-table-on-gpu");
    // Where the table lives: the GPU's memory in every GPU mode.
    const gchar *active = gst_structure_get_string(out.stats, "active-mode");
    const bool gpu_mode = active && std::string(active) != "cpu";
    if (bool(on_gpu) != gpu_mode)
      fail(ctx, "flow-table-on-gpu is %s in mode %s", on_gpu ? "true" : "false",
           active ? active : "?");
  };
  RunResult ref;
  run("flows: cpu", "cpu", false, ref);
  if (!ref.completed) return 1;
  std::map<int, size_t> reasons;
  uint64_t counted = 0;
  for (const GppFlowRecord &f : ref.flows) {
    reasons[f.end_reason]++;
    counted += f.packets[0] + f.packets[1];
  }
  const guint64 untracked = stat_u64(ref.stats, "flow-packets-untracked");
  const guint64 not_ip = stat_u64(ref.stats, "flow-packets-not-ip");
  std::printf("flows: cpu: %zu records (idle %zu, active %zu, end %zu, eos %zu, no room %zu), "
              "%llu packets in them, %llu untracked, %llu not IP\n",
              ref.flows.size(), reasons[GPP_FLOW_END_IDLE], reasons[GPP_FLOW_END_ACTIVE],
              reasons[GPP_FLOW_END_OF_FLOW], reasons[GPP_FLOW_END_FORCED],
              reasons[GPP_FLOW_END_NO_ROOM], static_cast<unsigned long long>(counted),
              static_cast<unsigned long long>(untracked), static_cast<unsigned long long>(not_ip));
  if (counted + untracked + not_ip != total)
    fail("flows: cpu", "%llu packets in records + %llu untracked + %llu not IP != %zu sent",
         static_cast<unsigned long long>(counted), static_cast<unsigned long long>(untracked),
         static_cast<unsigned long long>(not_ip), total);
  for (int reason : {GPP_FLOW_END_IDLE, GPP_FLOW_END_ACTIVE, GPP_FLOW_END_FORCED,
                     GPP_FLOW_END_NO_ROOM})
    if (reasons[reason] == 0) fail("flows: cpu", "no flow ended for reason %d", reason);
  auto compare = [&](const std::string &ctx, const RunResult &got) {
    size_t diffs = 0;
    if (got.flows.size() != ref.flows.size())
      fail(ctx, "%zu flow records, cpu gave %zu", got.flows.size(), ref.flows.size());
    for (size_t i = 0; i < std::min(got.flows.size(), ref.flows.size()); ++i)
      if (std::memcmp(&got.flows[i], &ref.flows[i], sizeof(GppFlowRecord)) != 0 && ++diffs <= 3)
        fail(ctx, "flow record %zu differs (cpu: first packet %llu, reason %u; here: %llu, %u)", i,
             static_cast<unsigned long long>(ref.flows[i].first_packet), ref.flows[i].end_reason,
             static_cast<unsigned long long>(got.flows[i].first_packet),
             got.flows[i].end_reason);
    for (const char *stat : {"flows-created", "flows-ended", "flows-evicted",
                             "flow-packets-untracked", "flow-packets-not-ip"})
      if (stat_u64(got.stats, stat) != stat_u64(ref.stats, stat))
        fail(ctx, "stats %s %llu, cpu %llu", stat,
             static_cast<unsigned long long>(stat_u64(got.stats, stat)),
             static_cast<unsigned long long>(stat_u64(ref.stats, stat)));
    std::printf("%s: %zu flow records, %zu differing\n", ctx.c_str(), got.flows.size(), diffs);
  };
  for (const std::string &mode : gpu_modes()) {
    if (mode == "cpu") continue;
    RunResult got;
    run("flows: " + mode, mode, false, got);
    if (got.completed) compare("flows: " + mode, got);
  }
  RunResult switched;
  run("flows: switching modes", "cpu", true, switched);
  if (switched.completed) compare("flows: switching modes", switched);
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Section: ACL and DPI sets swapped while PLAYING.  Setting acl-rules and
// dpi-patterns loads the files in the calling thread, so when the pushing
// thread sets them between two batches every later batch must run with the
// new sets: the records must equal, batch by batch, those of a cpu run with
// the sets scheduled for that batch.  This exercises the device copies of
// the sets (uploaded once per set; never rewritten under a persistent kernel).

int section_swap(const std::string &pcap_dir) {
  const std::string acl_dir = pcap_dir + "/../acl/", dpi_dir = pcap_dir + "/../dpi/";
  // GPP_GPU_MODES_SWAP_REALISTIC: sets of the size IDS and firewall users
  // load (ClassBench 10k, the whole ET Open 2024 folder: ~0.4 s to load),
  // swapped less often.
  const bool realistic = g_getenv("GPP_GPU_MODES_SWAP_REALISTIC") != nullptr;
  // The small second set has no DPI patterns: swapping DPI on and off also
  // switches the process kernel's build (graph mode rebuilds its graph).
  const std::string sets[2][2] = {
      {acl_dir + (realistic ? "classbench_acl1_10k.rules" : "classbench_acl1_1k.rules"),
       dpi_dir + (realistic ? "et_open_2024" : "et_open_emerging-scan.rules")},
      {acl_dir + (realistic ? "classbench_fw1_10k.rules" : "classbench_fw1_1k.rules"),
       realistic ? dpi_dir + "et_open_emerging-shellcode.rules" : std::string()}};
  const Capture cap = generated_capture("generated-swap", GPP_LINKTYPE_ETHERNET, 12000, 31, 1500);
  const std::vector<Batch> batches = random_batches(cap, 200, 32);
  const size_t kBatchesPerSet = realistic ? 40 : 7;
  auto scheduled = [&](size_t batch) { return (batch / kBatchesPerSet) % 2; };
  auto set_files = [&](Proc &p, size_t which) {
    g_object_set(p.element, "acl-rules", sets[which][0].c_str(), "dpi-patterns",
                 sets[which][1].c_str(), nullptr);
  };
  // cpu references with each set fixed.
  RunResult ref[2];
  for (size_t which = 0; which < 2; ++which) {
    RunOptions opt;
    opt.props.pool_mib = pool_mib_for(batches);
    opt.before_push = [&, which](Proc &p, size_t i) {
      if (i == 0) set_files(p, which);
    };
    const std::string ctx = format("swap: cpu reference with set %zu", which);
    run_batches(ctx, cap.linktype, batches, opt, ref[which]);
    check_structure(ctx, batches, ref[which]);
    if (!ref[which].completed) return 1;
  }
  std::vector<GppResult> expected;
  size_t differing = 0, at = 0;
  for (size_t i = 0; i < batches.size(); ++i) {
    const size_t which = scheduled(i);
    for (uint32_t k = 0; k < batches[i].count; ++k, ++at) {
      expected.push_back(ref[which].records[at]);
      differing += std::memcmp(&ref[0].records[at], &ref[1].records[at], kRecord) != 0;
    }
  }
  // Otherwise a swap that never happened would pass.
  if (differing < 100)
    fail("swap", "only %zu records differ between the two sets: the test traffic is too weak",
         differing);
  for (const std::string &mode : gpu_modes()) {
    RunOptions opt;
    opt.props.mode = mode;
    opt.props.pool_mib = pool_mib_for(batches);
    opt.push_from_thread = true;
    opt.before_push = [&](Proc &p, size_t i) {
      if (i < batches.size() && (i == 0 || scheduled(i) != scheduled(i - 1)))
        set_files(p, scheduled(i));
    };
    const std::string ctx = format("swap: mode=%s", mode.c_str());
    RunResult r;
    run_batches(ctx, cap.linktype, batches, opt, r);
    check_structure(ctx, batches, r);
    compare_records(ctx, mode.c_str(), expected, r.records, batches);
  }
  std::printf("swap%s: %zu batches, sets swapped every %zu, %zu of %zu records differ between "
              "the sets: %s\n", realistic ? " (realistic sets)" : "", batches.size(),
              kBatchesPerSet, differing, expected.size(), g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Section: serialized events keep their place among the batches.

int section_events() {
  // Mostly small batches (many in flight), every 10th a large one.
  const Capture cap = generated_capture("generated-events", GPP_LINKTYPE_ETHERNET, 16000, 31, 1500);
  std::vector<Batch> batches;
  {
    std::mt19937 rng(32);
    size_t first = 0;
    while (first < cap.packets.size() && batches.size() < 60) {
      const size_t n = batches.size() % 10 == 0 ? 2048 : 1 + rng() % 64;
      const size_t last = std::min(cap.packets.size(), first + n);
      batches.push_back(make_batch(cap, first, last));
      first = last;
    }
  }
  const size_t n = batches.size();
  const size_t segment_at = n / 2, caps_at = (3 * n) / 4;
  const guint64 kSegmentBase = 12345 * GST_SECOND;

  RunOptions ref_opt;
  ref_opt.props.pool_mib = pool_mib_for(batches);
  RunResult ref;
  run_batches("events: cpu reference", cap.linktype, batches, ref_opt, ref);
  if (!ref.completed) return 1;

  size_t runs = 0, markers_checked = 0;
  for (const std::string &mode : gpu_modes()) {
    const std::string ctx = "events mode=" + mode;
    RunOptions opt;
    opt.props.mode = mode;
    opt.props.pool_mib = pool_mib_for(batches);
    size_t markers_sent = 0;
    opt.before_push = [&](Proc &p, size_t i) {
      // i batches have been pushed so far.
      if (i > 0 && (i % 5 == 0 || i % 10 == 1 || i == n)) {
        GstStructure *s = gst_structure_new("gpp-test-marker", "after", G_TYPE_UINT64,
                                            static_cast<guint64>(i), nullptr);
        p.push_event(gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM, s), "custom marker");
        markers_sent++;
      }
      if (i == segment_at) {
        GstSegment seg;
        gst_segment_init(&seg, GST_FORMAT_TIME);
        seg.base = kSegmentBase;
        p.push_event(gst_event_new_segment(&seg), "SEGMENT");
      }
      if (i == caps_at) {
        GstCaps *caps = gst_caps_from_string(caps_text(cap.linktype).c_str());
        p.push_event(gst_event_new_caps(caps), "CAPS");
        gst_caps_unref(caps);
      }
    };
    RunResult got;
    run_batches(ctx, cap.linktype, batches, opt, got);
    runs++;
    if (!got.started) continue;
    check_structure(ctx, batches, got);
    compare_records(ctx, mode.c_str(), ref.records, got.records, batches);
    size_t markers_seen = 0;
    bool segment_seen = false;
    size_t caps_after_data = 0;
    for (const LogEntry &e : got.log) {
      if (e.is_buffer) continue;
      if (e.marker != G_MAXUINT64) {
        markers_seen++;
        if (e.buffers_before != e.marker)
          fail(ctx, "custom event sent after batch %llu left after %zu results buffers "
                    "(it %s earlier batches)",
               static_cast<unsigned long long>(e.marker), e.buffers_before,
               e.buffers_before < e.marker ? "overtook" : "was held back behind later");
      } else if (e.type == GST_EVENT_SEGMENT && e.segment_base == kSegmentBase) {
        segment_seen = true;
        if (e.buffers_before != segment_at)
          fail(ctx, "SEGMENT sent after batch %zu left after %zu results buffers", segment_at,
               e.buffers_before);
      } else if (e.type == GST_EVENT_CAPS && e.buffers_before > 0) {
        caps_after_data++;
        if (e.buffers_before != caps_at)
          fail(ctx, "CAPS sent after batch %zu left after %zu results buffers", caps_at,
               e.buffers_before);
      }
    }
    if (markers_seen != markers_sent)
      fail(ctx, "%zu of %zu custom events reached the sink", markers_seen, markers_sent);
    if (!segment_seen) fail(ctx, "the SEGMENT sent after batch %zu never reached the sink", segment_at);
    markers_checked += markers_seen;
    std::printf("events mode=%s: %zu batches, %zu markers, SEGMENT %s, CAPS after data %s, "
                "EOS after %zu results\n",
                mode.c_str(), n, markers_seen, segment_seen ? "in place" : "MISSING",
                caps_after_data ? "seen" : "not forwarded (same caps)",
                [&] {
                  for (const LogEntry &e : got.log)
                    if (!e.is_buffer && e.type == GST_EVENT_EOS) return e.buffers_before;
                  return size_t(0);
                }());
  }
  std::printf("events: %zu runs, %zu marker positions checked: %s\n", runs, markers_checked,
              g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Section: leaks over NULL->PLAYING->NULL cycles.

int64_t rss_bytes() {
  long pages_total = 0, pages_rss = 0;
  if (FILE *f = std::fopen("/proc/self/statm", "r")) {
    if (std::fscanf(f, "%ld %ld", &pages_total, &pages_rss) != 2) pages_rss = 0;
    std::fclose(f);
  }
  return int64_t(pages_rss) * sysconf(_SC_PAGESIZE);
}

int section_leaks() {
  constexpr int kCycles = 100;
  constexpr int64_t kDeviceSlack = 4 << 20, kRssSlack = 64 << 20;
  const Capture cap = generated_capture("generated-leaks", GPP_LINKTYPE_ETHERNET, 192, 41, 1500);
  const std::vector<Batch> batches = make_batches(cap, 64);
  for (const std::string &mode : gpu_modes()) {
    const std::string ctx = "leaks mode=" + mode + " pool-size=16";
    set_context(ctx + ": warm-up");
    Props props;
    props.mode = mode;
    props.pool_mib = 16;
    Proc p(props, cap.linktype, ctx);
    if (!p.ok()) continue;
    int64_t dev0 = -1, rss0 = 0;
    int cycles_done = 0;
    for (int c = 0; c <= kCycles; ++c) {
      const std::string cctx = format("%s cycle %d", ctx.c_str(), c);
      set_context(cctx);
      if (c > 0) {
        const GstStateChangeReturn r = gst_element_set_state(p.element, GST_STATE_PLAYING);
        if (r != GST_STATE_CHANGE_SUCCESS) {
          fail(cctx, "NULL->PLAYING returned %s: %s", gst_element_state_change_return_get_name(r),
               p.all_errors().c_str());
          break;
        }
        if (!p.restart_stream(cap.linktype, c)) break;
      }
      p.col.clear();
      p.ctx = cctx;
      bool ok = true;
      for (size_t i = 0; i < batches.size() && ok; ++i) {
        const GstFlowReturn r = gst_harness_push(p.h, system_buffer(batches[i]));
        if (r != GST_FLOW_OK) {
          fail(cctx, "pushing batch %zu returned %s: %s", i, flow_name(r).c_str(),
               p.all_errors().c_str());
          ok = false;
        }
      }
      if (ok && p.push_event(gst_event_new_eos(), "EOS") && p.wait_eos(batches.size())) {
        std::lock_guard<std::mutex> lock(p.col.m);
        if (p.col.buffers.size() != batches.size())
          fail(cctx, "%zu results buffers for %zu batches", p.col.buffers.size(), batches.size());
        else
          for (size_t i = 0; i < batches.size(); ++i)
            if (p.col.buffers[i].first_number != batches[i].first_number) {
              fail(cctx, "results buffer %zu starts at packet %llu, expected %llu", i,
                   static_cast<unsigned long long>(p.col.buffers[i].first_number),
                   static_cast<unsigned long long>(batches[i].first_number));
              break;
            }
      } else {
        ok = false;
      }
      const GstStateChangeReturn r = gst_element_set_state(p.element, GST_STATE_NULL);
      if (r != GST_STATE_CHANGE_SUCCESS) {
        fail(cctx, "PLAYING->NULL returned %s", gst_element_state_change_return_get_name(r));
        break;
      }
      if (!ok) break;
      if (c == 0) {
        dev0 = gpp::device_memory_used(0);
        rss0 = rss_bytes();
      } else {
        cycles_done++;
      }
    }
    const int64_t dev1 = gpp::device_memory_used(0);
    const int64_t rss1 = rss_bytes();
    std::printf("leaks mode=%s: %d cycles; device memory used %.1f -> %.1f MiB (%+.1f MiB); "
                "RSS %.1f -> %.1f MiB (%+.1f MiB)\n",
                mode.c_str(), cycles_done, dev0 / 1048576.0, dev1 / 1048576.0,
                (dev1 - dev0) / 1048576.0, rss0 / 1048576.0, rss1 / 1048576.0,
                (rss1 - rss0) / 1048576.0);
    if (cycles_done != kCycles) fail(ctx, "only %d of %d cycles completed", cycles_done, kCycles);
    if (!g_selftest) {
      if (dev0 < 0 || dev1 < 0)
        fail(ctx, "gpp::device_memory_used(0) is unknown (-1)");
      else if (std::llabs(dev1 - dev0) > kDeviceSlack)
        fail(ctx, "device memory used moved by %+.1f MiB over %d cycles (limit 4 MiB): a leak "
                  "of %.2f MiB per cycle",
             (dev1 - dev0) / 1048576.0, cycles_done,
             cycles_done ? (dev1 - dev0) / 1048576.0 / cycles_done : 0.0);
    }
    if (rss1 - rss0 >= kRssSlack)
      fail(ctx, "RSS grew by %.1f MiB over %d cycles (limit 64 MiB; the pinned pools are "
                "2 x 16 MiB a cycle)",
           (rss1 - rss0) / 1048576.0, cycles_done);
  }
  std::printf("leaks: %s\n", g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Section: errors.

bool contains(const std::string &text, const char *needle) {
  return text.find(needle) != std::string::npos;
}

int section_errors() {
  // A 2 MiB batch (system memory) into a 1 MiB pinned pool.
  const Capture cap = generated_capture("generated-big", GPP_LINKTYPE_ETHERNET, 3000, 51, 9000);
  std::vector<Batch> big;
  {
    size_t last = 0, bytes = 0;
    while (last < cap.packets.size() && bytes < (2u << 20) + 4096)
      bytes += cap.packets[last++].bytes.size() + 48;
    big.push_back(make_batch(cap, 0, last));
  }
  size_t checks = 0;
  if (big[0].bytes.size() <= (2u << 20))
    fail("errors", "test bug: the oversized batch has only %zu bytes", big[0].bytes.size());
  if (!g_selftest) {
    for (const std::string &mode : gpu_modes()) {
      const std::string ctx = format("errors: %zu-byte batch, pool-size=1, mode=%s",
                                     big[0].bytes.size(), mode.c_str());
      set_context(ctx);
      Props props;
      props.mode = mode;
      props.pool_mib = 1;
      Proc p(props, cap.linktype, ctx);
      if (!p.ok()) continue;
      std::atomic<int> flow{1};
      std::thread pusher([&] { flow = gst_harness_push(p.h, system_buffer(big[0])); });
      const int64_t deadline = now_us() + 20 * 1000000;
      while (flow.load() == 1 && now_us() < deadline)
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
      if (flow.load() == 1) {
        fail(ctx, "the push has not returned after 20 s (hang instead of an error)");
        std::fflush(stderr);
        _exit(1); // teardown would wait for the stuck chain
      }
      pusher.join();
      const std::string errors = p.all_errors();
      checks++;
      if (flow.load() != GST_FLOW_ERROR)
        fail(ctx, "push returned %s, expected error",
             flow_name(static_cast<GstFlowReturn>(flow.load())).c_str());
      if (!contains(errors, "ERROR"))
        fail(ctx, "no error message on the bus");
      else if (!contains(errors, "pool"))
        fail(ctx, "the error does not mention the pool: %s", errors.c_str());
      {
        std::lock_guard<std::mutex> lock(p.col.m);
        if (!p.col.buffers.empty()) fail(ctx, "%zu results buffers pushed", p.col.buffers.size());
      }
      std::printf("errors mode=%s: oversized batch -> %s, %s\n", mode.c_str(),
                  flow_name(static_cast<GstFlowReturn>(flow.load())).c_str(), errors.c_str());
    }
  }

  // device-id=99 in a GPU mode (streams, or each mode in its own child): no
  // PAUSED, an error naming the device.
  const std::vector<std::string> modes = gpu_modes();
  const std::string bad_mode = g_selftest || modes.empty() ? "streams" : modes[0];
  {
    const std::string ctx = "errors: device-id=99 mode=" + bad_mode;
    set_context(ctx);
    GstElement *e = gst_element_factory_make("gpupacketproc", nullptr);
    if (!e) {
      fail(ctx, "gpupacketproc not found");
    } else {
      gst_object_ref_sink(e);
      GstBus *bus = gst_bus_new();
      gst_element_set_bus(e, bus);
      gst_util_set_object_arg(G_OBJECT(e), "mode", bad_mode.c_str());
      g_object_set(e, "device-id", 99, "pool-size", 8u, nullptr);
      const GstStateChangeReturn r = gst_element_set_state(e, GST_STATE_PAUSED);
      GstState state = GST_STATE_VOID_PENDING;
      gst_element_get_state(e, &state, nullptr, 0);
      std::string text;
      if (GstMessage *m = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR)) {
        GError *err = nullptr;
        gchar *debug = nullptr;
        gst_message_parse_error(m, &err, &debug);
        text = format("\"%s\" (%s)", err ? err->message : "?", debug ? debug : "");
        g_clear_error(&err);
        g_free(debug);
        gst_message_unref(m);
      }
      checks++;
      if (r != GST_STATE_CHANGE_FAILURE)
        fail(ctx, "set_state(PAUSED) returned %s, expected FAILURE (state now %s)",
             gst_element_state_change_return_get_name(r), gst_element_state_get_name(state));
      if (state >= GST_STATE_PAUSED) fail(ctx, "the element reached %s", gst_element_state_get_name(state));
      if (text.empty())
        fail(ctx, "no error message on the bus");
      else if (!g_selftest && !contains(text, "99"))
        fail(ctx, "the error does not name device 99: %s", text.c_str());
      std::printf("errors device-id=99 mode=%s: set_state(PAUSED) -> %s, %s\n",
                  bad_mode.c_str(), gst_element_state_change_return_get_name(r), text.c_str());
      gst_element_set_state(e, GST_STATE_NULL);
      gst_object_unref(e);
      gst_object_unref(bus);
    }
  }
  std::printf("errors: %zu checks: %s\n", checks, g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Section: pools.  Results take 128 bytes a packet while a batch may take as
// little as 48 bytes a packet (caplen 1..16): the results of a batch that
// fills the batch pool are 2.67 times its size.  The results pool is three
// times pool-size, so such a batch must go through (an earlier element hung
// here, waiting for results memory that could never be free, and then
// crashed on shutdown).  A hang is reported with what was seen and the
// process exits at once.
int section_pools() {
  if (g_selftest) {
    std::printf("pools: skipped in the self-test (needs the pinned pool)\n");
    return 0;
  }
  constexpr size_t kPackets = 12000; // 1-byte packets: 48 bytes of batch, 128 of results each
  std::vector<Packet> pkts(kPackets, Packet{{0x45}, 1});
  Capture cap;
  cap.name = "tiny-packets";
  cap.linktype = GPP_LINKTYPE_RAW;
  cap.packets = pkts;
  const Batch b = make_batch(cap, 0, kPackets);
  const char *mode = "streams";
  const std::string ctx = format("pools: %zu-byte batch of %zu packets (results %zu bytes), "
                                 "pool-size=1 (1048576 bytes), mode=%s",
                                 b.bytes.size(), kPackets, kPackets * kRecord, mode);
  set_context(ctx);
  Props props;
  props.mode = mode;
  props.pool_mib = 1;
  Proc *p = new Proc(props, cap.linktype, ctx);
  if (!p->ok()) {
    delete p;
    return 1;
  }
  std::atomic<int> flow{1};
  std::thread pusher([&] { flow = gst_harness_push(p->h, system_buffer(b)); });
  const int64_t deadline = now_us() + 20 * 1000000;
  bool results = false;
  while (flow.load() == 1 && now_us() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    std::lock_guard<std::mutex> lock(p->col.m);
    results = !p->col.buffers.empty();
  }
  if (flow.load() == 1) {
    fail(ctx, "HANG: the push has not returned after 20 s and no error was posted: the results "
              "(%zu bytes) can never fit the %d-byte results pool, and the chain waits for them "
              "(gpp_pinned_allocator_alloc_wait in submit_gpu) instead of failing",
         kPackets * kRecord, 1 << 20);
    // What a shutdown does now (expected: a crash in discard_item, see above).
    set_context(ctx + ": PLAYING->NULL while the chain waits for results memory "
                      "(discard_item with item.results == NULL?)");
    std::fflush(stderr);
    std::fflush(stdout);
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::seconds(10));
      std::fprintf(stderr, "FAIL [pools] PLAYING->NULL did not return within 10 s either\n");
      _exit(1);
    }).detach();
    const GstStateChangeReturn r = gst_element_set_state(p->element, GST_STATE_NULL);
    std::fprintf(stderr, "FAIL [pools] (after the hang) PLAYING->NULL returned %s; the push "
                         "then returned %s\n",
                 gst_element_state_change_return_get_name(r),
                 flow.load() == 1 ? "nothing yet"
                                  : flow_name(static_cast<GstFlowReturn>(flow.load())).c_str());
    std::fflush(stderr);
    _exit(1);
  }
  pusher.join();
  const std::string errors = p->all_errors();
  if (flow.load() == GST_FLOW_OK) {
    // The results pool is four times pool-size, enough for any batch that
    // fits the batch pool: the results must come out.
    const int64_t out_deadline = now_us() + 20 * 1000000;
    while (!results && now_us() < out_deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      std::lock_guard<std::mutex> lock(p->col.m);
      results = !p->col.buffers.empty();
    }
    if (!results) fail(ctx, "push returned OK but no results came out within 20 s");
  } else if (!contains(errors, "ERROR")) {
    fail(ctx, "push returned %s without an error message",
         flow_name(static_cast<GstFlowReturn>(flow.load())).c_str());
  }
  std::printf("pools: results larger than the results pool -> push %s, %s: %s\n",
              flow_name(static_cast<GstFlowReturn>(flow.load())).c_str(),
              errors.empty() ? "no bus message" : errors.c_str(), g_failures ? "FAIL" : "PASS");
  delete p;
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Section: device1.  On hosts with two or more GPUs, device-id=1 in every GPU
// mode must give the cpu results too.  The engine is made on READY->PAUSED in
// the application's thread (make_gpu_engine calls cudaSetDevice there) while
// device buffers and graphs are made later in the streaming thread, so this
// checks that the streaming thread (here a thread of its own, whose current
// CUDA device is 0) works on the device asked for.

int section_device1() {
  const std::string why = g_selftest ? "self-test" : gpp::gpu_unavailable_reason(1);
  if (!why.empty()) {
    std::printf("device1: skipped (%s)\n", why.c_str());
    return 0;
  }
  const Capture cap = generated_capture("generated-device1", GPP_LINKTYPE_ETHERNET, 3000, 61, 9000);
  const std::vector<Batch> batches = make_batches(cap, 256);
  RunOptions ref_opt;
  ref_opt.props.pool_mib = pool_mib_for(batches);
  RunResult ref;
  run_batches("device1: cpu reference", cap.linktype, batches, ref_opt, ref);
  if (!ref.completed) return 1;
  size_t diffs = 0;
  for (const std::string &mode : gpu_modes()) {
    const std::string ctx = "device1 mode=" + mode + " device-id=1 batch-size=256";
    RunOptions opt;
    opt.props = ref_opt.props;
    opt.props.mode = mode;
    opt.props.device_id = 1;
    opt.push_from_thread = true;
    RunResult got;
    run_batches(ctx, cap.linktype, batches, opt, got);
    if (!got.started) continue;
    check_structure(ctx, batches, got);
    diffs += compare_records(ctx, mode.c_str(), ref.records, got.records, batches);
  }
  std::printf("device1: %zu batches in each GPU mode on device 1, %zu differing records: %s\n",
              batches.size(), diffs, g_failures ? "FAIL" : "PASS");
  return g_failures ? 1 : 0;
}

// ---------------------------------------------------------------------------
// Driver: the parent runs every section in a child process, and the
// sections that go through the GPU modes one by one in a child per mode: a
// CUDA error such as cudaErrorIllegalAddress is sticky and would fail every
// later mode of the same process.

struct Section {
  const char *name;
  bool per_mode; // one child per GPU mode (GPP_GPU_MODES_MODES=<mode>)
  int (*run)(const std::string &pcap_dir);
};

const Section kSections[] = {
    {"parity", true, section_parity},
    {"switch", false, [](const std::string &) { return section_switch(); }},
    {"flows", false, [](const std::string &) { return section_flows(); }},
    {"events", true, [](const std::string &) { return section_events(); }},
    {"swap", true, section_swap},
    {"leaks", true, [](const std::string &) { return section_leaks(); }},
    {"errors", true, [](const std::string &) { return section_errors(); }},
    {"device1", true, [](const std::string &) { return section_device1(); }},
    {"pools", false, [](const std::string &) { return section_pools(); }},
};

int run_child(const char *section, const std::string &pcap_dir) {
  for (const Section &s : kSections) {
    if (std::strcmp(s.name, section) != 0) continue;
    gst_init(nullptr, nullptr);
    start_watchdog();
    set_context(std::string("section ") + section);
    const int rc = s.run(pcap_dir);
    std::fflush(stdout);
    std::fflush(stderr);
    // Skip static destructors and gst_deinit: the element's threads are gone,
    // and a clean exit code is what the parent reads.
    _exit(rc);
  }
  std::fprintf(stderr, "unknown section %s\n", section);
  return 2;
}

// Runs `exe PCAP_DIR --section NAME` with GPP_GPU_MODES_MODES=mode when
// `mode` is not empty; returns "PASS" or "FAIL (why)".
std::string spawn_section(const char *exe, const std::string &pcap_dir, const char *name,
                          const std::string &mode) {
  std::vector<std::string> env_strings;
  for (char **e = environ; *e; ++e)
    if (mode.empty() || std::strncmp(*e, "GPP_GPU_MODES_MODES=", 20) != 0)
      env_strings.push_back(*e);
  if (!mode.empty()) env_strings.push_back("GPP_GPU_MODES_MODES=" + mode);
  std::vector<char *> envp;
  for (std::string &e : env_strings) envp.push_back(&e[0]);
  envp.push_back(nullptr);
  char *args[] = {const_cast<char *>(exe), const_cast<char *>(pcap_dir.c_str()),
                  const_cast<char *>("--section"), const_cast<char *>(name), nullptr};
  pid_t pid;
  if (posix_spawn(&pid, exe, nullptr, nullptr, args, envp.data()) != 0)
    return "FAIL (could not start)";
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "PASS";
  if (WIFEXITED(status))
    return format("FAIL (exit %d%s)", WEXITSTATUS(status),
                  WEXITSTATUS(status) == 3 ? ": stalled" : "");
  if (WIFSIGNALED(status))
    return format("FAIL (killed by signal %d, %s)", WTERMSIG(status), strsignal(WTERMSIG(status)));
  return "FAIL (?)";
}

int run_parent(const std::string &pcap_dir) {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    std::fprintf(stderr, "cannot find my own executable\n");
    return 1;
  }
  exe[n] = 0;
  struct Outcome {
    std::string name, verdict;
    double secs;
  };
  std::vector<Outcome> outcomes;
  bool all_ok = true;
  for (const Section &s : kSections) {
    std::vector<std::string> modes{""};
    if (s.per_mode && !g_selftest) modes = gpu_modes();
    for (const std::string &mode : modes) {
      const std::string label = mode.empty() ? s.name : std::string(s.name) + "[" + mode + "]";
      std::printf("=== section %s\n", label.c_str());
      std::fflush(stdout);
      std::fflush(stderr);
      const auto t0 = std::chrono::steady_clock::now();
      const std::string verdict = spawn_section(exe, pcap_dir, s.name, mode);
      all_ok = all_ok && verdict == "PASS";
      outcomes.push_back({label, verdict, seconds_since(t0)});
    }
  }
  std::printf("=== summary\n");
  for (const Outcome &o : outcomes)
    std::printf("%-20s %-48s %6.1f s\n", o.name.c_str(), o.verdict.c_str(), o.secs);
  std::printf("gpu-modes: %s\n", all_ok ? "PASS" : "FAIL");
  return all_ok ? 0 : 1;
}

} // namespace

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  g_selftest = g_getenv("GPP_GPU_MODES_SELFTEST") != nullptr;
  const char *section = nullptr;
  std::string pcap_dir;
  bool usage = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--section") == 0 && i + 1 < argc)
      section = argv[++i];
    else if (pcap_dir.empty() && argv[i][0] != '-')
      pcap_dir = argv[i];
    else
      usage = true;
  }
  if (usage || pcap_dir.empty()) {
    std::fprintf(stderr,
                 "usage: %s PCAP_DIR [--section parity|switch|flows|events|leaks|errors|device1|pools]\n",
                 argv[0]);
    return 2;
  }
  if (!g_selftest) {
    const std::string why = gpp::gpu_unavailable_reason(0);
    if (!why.empty()) {
      std::printf("SKIP: %s\n", why.c_str());
      return kSkip;
    }
  } else {
    std::printf("SELF-TEST: mode=cpu stands in for every GPU mode; GPU checks are left out\n");
  }
  if (section) return run_child(section, pcap_dir);
  return run_parent(pcap_dir);
}
