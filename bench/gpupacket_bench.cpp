// gpupacket-bench: the raw limits of the GPU host, the engine in every mode
// and (with --gst) the gpupacketproc element, measured in one run, side by
// side, against the targets of the issue.  See bench/README.md.
//
//   gpupacket-bench [--quick] [--out DIR] [--gst] [--device N] [--streams N]
//
// Exit status: 0 every measurement ran (targets may still be MISSed: that is
// a result, not a failure); 1 some measurement failed (see the Errors list);
// 2 bad usage; 3 the watchdog stopped a phase that hung; 77 no usable GPU.
#include <cuda_runtime_api.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "bench_kernels.h"
#include "cpu_engine.h"
#include "cuda_util.h"
#include "engine.h"
#include "gst_bench.h"

using namespace gppbench;

namespace {

constexpr int kExitSkip = 77;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// ---- options -------------------------------------------------------------------

struct Options {
  bool quick = false;
  bool gst = false;
  bool cpu_only = false; // no GPU needed: the CPU rows (and --gst mode=cpu) only
  std::string out;
  int device = 0;
  unsigned streams = 4; // the element's num-streams default
  std::string command_line;
};

void usage(FILE *f) {
  std::fprintf(f,
               "usage: gpupacket-bench [--quick] [--out DIR] [--gst] [--device N] [--streams N]\n"
               "                       [--cpu-only]\n"
               "  --quick      short run (about 15 s; the full run takes about a minute)\n"
               "  --out DIR    write DIR/report.md and DIR/report.csv\n"
               "  --gst        also measure the gpupacketproc element (GstHarness); finds the\n"
               "               plugin through GST_PLUGIN_PATH_1_0 (default: this build's)\n"
               "  --device N   CUDA device (default 0)\n"
               "  --streams N  GpuSettings::num_streams for the GPU modes (default 4, as the\n"
               "               element's num-streams)\n"
               "  --cpu-only   no GPU needed: only the CPU rows (and with --gst, mode=cpu);\n"
               "               checks the benchmark itself on a machine without a GPU\n"
               "exit: 0 ran, 1 a measurement failed, 2 usage, 3 watchdog, 77 no usable GPU\n");
}

bool parse_options(int argc, char **argv, Options *o) {
  for (int i = 0; i < argc; ++i) o->command_line += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&](const char *name) -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "gpupacket-bench: %s needs a value\n", name);
        return nullptr;
      }
      return argv[++i];
    };
    if (a == "--quick") {
      o->quick = true;
    } else if (a == "--gst") {
      o->gst = true;
    } else if (a == "--cpu-only") {
      o->cpu_only = true;
    } else if (a == "--out") {
      const char *v = value("--out");
      if (!v) return false;
      o->out = v;
    } else if (a == "--device" || a == "--streams") {
      const char *v = value(a.c_str());
      if (!v) return false;
      char *end = nullptr;
      const long n = std::strtol(v, &end, 10);
      if (!*v || *end || n < 0 || (a == "--streams" && (n < 1 || n > 64)) || n > 1024) {
        std::fprintf(stderr, "gpupacket-bench: bad value for %s: %s\n", a.c_str(), v);
        return false;
      }
      if (a == "--device") o->device = static_cast<int>(n);
      else o->streams = static_cast<unsigned>(n);
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    } else {
      std::fprintf(stderr, "gpupacket-bench: unknown option %s\n", a.c_str());
      return false;
    }
  }
  return true;
}

// A table cell for a failure; the whole message is in the report's Errors list.
std::string short_error(const std::string &e) {
  const size_t kMax = 60;
  return "error: " + (e.size() <= kMax ? e : e.substr(0, kMax) + "... (see Errors)");
}

// ---- bounded CUDA waits ----------------------------------------------------------

// Polls until the event completes; throws on error or after `timeout_s`.
void wait_event_bounded(cudaEvent_t event, double timeout_s, const char *what) {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(timeout_s * 1e9);
  for (unsigned spins = 0;; ++spins) {
    const cudaError_t e = cudaEventQuery(event);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) GPP_CUDA_TRY(e);
    if ((spins & 255) == 255 && now_ns() > deadline)
      throw std::runtime_error(std::string(what) + ": no completion within " + fmt(timeout_s, 0) +
                               " s");
  }
}

void wait_stream_bounded(cudaStream_t stream, double timeout_s, const char *what) {
  const uint64_t deadline = now_ns() + static_cast<uint64_t>(timeout_s * 1e9);
  for (unsigned spins = 0;; ++spins) {
    const cudaError_t e = cudaStreamQuery(stream);
    if (e == cudaSuccess) return;
    if (e != cudaErrorNotReady) GPP_CUDA_TRY(e);
    if ((spins & 255) == 255 && now_ns() > deadline)
      throw std::runtime_error(std::string(what) + ": no completion within " + fmt(timeout_s, 0) +
                               " s");
  }
}

uint32_t load_acquire(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void store_release(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// ---- what the run learns, shared between sections ---------------------------------

struct Bandwidth {
  double h2d = kNaN, d2h = kNaN; // GB/s (1e9 bytes/s), median of single copies
};

struct ThroughputResult {
  std::string error;
  uint64_t batches = 0, packets = 0, batch_bytes = 0, wire_bytes = 0;
  double seconds = 0;
  bool parity_checked = false, parity_ok = false;
  double mpps() const { return seconds > 0 ? packets / seconds / 1e6 : kNaN; }
  double gbps() const { return seconds > 0 ? wire_bytes * 8.0 / seconds / 1e9 : kNaN; }
  double batch_gBps() const { return seconds > 0 ? batch_bytes / seconds / 1e9 : kNaN; }
};

struct Run {
  Options opt;
  Report report;
  Watchdog *watchdog = nullptr;
  uint64_t started_ns = now_ns();
  std::string device_name;

  std::map<size_t, Bandwidth> bandwidth;  // by copy size
  std::map<size_t, double> h2d_sustained; // GB/s, back-to-back copies of that size
  LatencyStats empty_kernel, pingpong;
  std::string pingpong_error;

  // engine name -> batch packets -> latency
  std::map<std::string, std::map<uint32_t, LatencyStats>> latency;
  std::map<std::string, std::string> engine_error;
  // engine name -> frame bytes -> throughput (4096-packet batches)
  std::map<std::string, std::map<uint32_t, ThroughputResult>> throughput;
  std::map<std::string, std::string> latency_parity; // engine -> "ok" / "MISMATCH ..."

  bool gst_ran = false;
  std::string gst_error;
  std::vector<GstModeResult> gst;

  void phase(const std::string &name, double seconds) {
    std::fprintf(stderr, "[%6.1f s] %s\n", (now_ns() - started_ns) / 1e9, name.c_str());
    watchdog->arm(name, seconds);
  }
  void csv(const std::string &section, const std::string &item, const std::string &mode,
           uint32_t batch_packets, uint32_t packet_bytes, const std::string &metric, double value,
           const std::string &unit, const std::string &target = "", const std::string &status = "",
           const std::string &note = "") {
    CsvRow r;
    r.section = section;
    r.item = item;
    r.mode = mode;
    r.batch_packets = batch_packets;
    r.packet_bytes = packet_bytes;
    r.metric = metric;
    r.value = value;
    r.unit = unit;
    r.target = target;
    r.status = status;
    r.note = note;
    report.add_csv(r);
  }
};

// ---- section A: limits ---------------------------------------------------------------

const std::vector<size_t> kCopySizes = {4u << 10, 64u << 10, 1u << 20, 16u << 20, 256u << 20};

// DESIGN.md "Measured limits of the target GPU host" (H200, 2026-11-30).
double design_h2d(size_t size) {
  switch (size) {
  case 4u << 10: return 1.5;
  case 64u << 10: return 17;
  case 1u << 20: return 47;
  case 16u << 20: return 55;
  case 256u << 20: return 55.5;
  default: return kNaN;
  }
}
double design_d2h(size_t size) { return size == (256u << 20) ? 55.3 : kNaN; }

void measure_bandwidth(Run &run, const std::vector<size_t> &extra_sizes) {
  std::vector<size_t> sizes = kCopySizes;
  for (size_t s : extra_sizes)
    if (std::find(sizes.begin(), sizes.end(), s) == sizes.end()) sizes.push_back(s);
  std::sort(sizes.begin(), sizes.end());
  const size_t max_size = sizes.back();
  run.phase("A: pinned copy bandwidth", 60);
  gpp::PinnedMemory host(max_size, cudaHostAllocPortable);
  gpp::DeviceMemory device(max_size);
  std::memset(host.get(), 0x5a, max_size);
  GPP_CUDA_TRY(cudaMemset(device.get(), 0, max_size));
  gpp::Stream stream;
  gpp::Event start(cudaEventDefault), stop(cudaEventDefault);

  auto time_copies = [&](size_t size, cudaMemcpyKind kind, int copies) {
    GPP_CUDA_TRY(cudaEventRecord(start.get(), stream.get()));
    for (int c = 0; c < copies; ++c) {
      if (kind == cudaMemcpyHostToDevice)
        GPP_CUDA_TRY(cudaMemcpyAsync(device.get(), host.get(), size, kind, stream.get()));
      else
        GPP_CUDA_TRY(cudaMemcpyAsync(host.get(), device.get(), size, kind, stream.get()));
    }
    GPP_CUDA_TRY(cudaEventRecord(stop.get(), stream.get()));
    wait_event_bounded(stop.get(), 30, "pinned copy");
    float ms = 0;
    GPP_CUDA_TRY(cudaEventElapsedTime(&ms, start.get(), stop.get()));
    return ms > 0 ? static_cast<double>(size) * copies / (ms * 1e-3) / 1e9 : kNaN;
  };

  for (size_t size : sizes) {
    int repeats = size <= (64u << 10) ? 300 : size <= (1u << 20) ? 100 : size <= (16u << 20) ? 30 : 10;
    if (run.opt.quick) repeats = std::max(3, repeats / 5);
    for (cudaMemcpyKind kind : {cudaMemcpyHostToDevice, cudaMemcpyDeviceToHost}) {
      for (int w = 0; w < 3; ++w) time_copies(size, kind, 1);
      std::vector<double> gbs;
      for (int r = 0; r < repeats; ++r) gbs.push_back(time_copies(size, kind, 1));
      (kind == cudaMemcpyHostToDevice ? run.bandwidth[size].h2d : run.bandwidth[size].d2h) =
          median(gbs);
    }
  }
  // Back-to-back copies (the copy engine never idles): the ceiling a pipeline
  // of batches of that size can reach.
  for (size_t size : extra_sizes) {
    const int copies = std::max<int>(8, static_cast<int>((256u << 20) / std::max<size_t>(size, 1)));
    std::vector<double> gbs;
    for (int r = 0; r < (run.opt.quick ? 3 : 7); ++r)
      gbs.push_back(time_copies(size, cudaMemcpyHostToDevice, std::min(copies, 256)));
    run.h2d_sustained[size] = median(gbs);
  }

  Table t;
  t.id = "A-bandwidth";
  t.title = "A. Pinned copy bandwidth (cudaMemcpyAsync, one copy timed with CUDA events, median)";
  t.header = {"size", "H2D GB/s", "DESIGN H2D", "H2D/DESIGN", "D2H GB/s", "DESIGN D2H",
              "H2D back-to-back GB/s"};
  for (size_t size : sizes) {
    const Bandwidth &b = run.bandwidth[size];
    const double ref = design_h2d(size);
    const bool extra = std::find(kCopySizes.begin(), kCopySizes.end(), size) == kCopySizes.end();
    auto sustained = run.h2d_sustained.find(size);
    t.rows.push_back({fmt_bytes(size) + (extra ? " (batch)" : ""), fmt(b.h2d, 1), fmt(ref, 1),
                      std::isnan(ref) ? "-" : fmt(b.h2d / ref, 2) + "x", fmt(b.d2h, 1),
                      fmt(design_d2h(size), 1),
                      sustained == run.h2d_sustained.end() ? "-" : fmt(sustained->second, 1)});
    run.csv("A", "pinned-copy", "", 0, 0, "h2d_gbps@" + std::to_string(size), b.h2d, "GB/s");
    run.csv("A", "pinned-copy", "", 0, 0, "d2h_gbps@" + std::to_string(size), b.d2h, "GB/s");
    if (sustained != run.h2d_sustained.end())
      run.csv("A", "pinned-copy", "", 0, 0, "h2d_back_to_back_gbps@" + std::to_string(size),
              sustained->second, "GB/s");
  }
  t.notes.push_back("GB/s = 1e9 bytes/s.  DESIGN = DESIGN.md's 2026-11-30 H200 figures (1 MiB: "
                    "46-48, shown as 47).");
  t.notes.push_back("(batch) rows are the sizes of the 4096-packet throughput batches; the 1500-byte "
                    "target compares against them.");
  run.report.add_table(t);
}

void measure_empty_kernel(Run &run) {
  run.phase("A: empty kernel launch + sync", 60);
  gpp::Stream stream;
  const int iters = run.opt.quick ? 500 : 2000;
  std::vector<uint64_t> samples;
  for (int i = 0; i < 100 + iters; ++i) {
    const uint64_t t0 = now_ns();
    GPP_CUDA_TRY(launch_empty_kernel(stream.get()));
    wait_stream_bounded(stream.get(), 10, "empty kernel");
    const uint64_t t1 = now_ns();
    if (i >= 100) samples.push_back(t1 - t0);
  }
  run.empty_kernel = summarize(samples);
}

// The persistent-kernel floor: one resident thread answers a mapped flag.
void measure_pingpong(Run &run) {
  run.phase("A: persistent ping-pong", 60);
  gpp::PinnedMemory shm(sizeof(PingPongShared), cudaHostAllocMapped | cudaHostAllocPortable);
  auto *s = shm.get<PingPongShared>();
  std::memset(s, 0, sizeof *s);
  PingPongShared *device_view = nullptr;
  GPP_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void **>(&device_view), s, 0));
  gpp::Stream stream;
  GPP_CUDA_TRY(launch_pingpong(device_view, 10ull * 1000 * 1000 * 1000, stream.get()));
  // Always stop the kernel, also when a measurement throws.
  struct Stopper {
    PingPongShared *s;
    cudaStream_t stream;
    ~Stopper() {
      store_release(&s->ping, kPingStop);
      try {
        wait_stream_bounded(stream, 15, "ping-pong kernel exit");
      } catch (...) {
      }
    }
  } stopper{s, stream.get()};

  uint64_t deadline = now_ns() + 10ull * 1000 * 1000 * 1000;
  for (unsigned spins = 0; load_acquire(&s->ready) != 1; ++spins) {
    if ((spins & 4095) == 4095) {
      const cudaError_t e = cudaStreamQuery(stream.get());
      if (e != cudaErrorNotReady) {
        if (e != cudaSuccess) GPP_CUDA_TRY(e);
        throw std::runtime_error("ping-pong kernel ended before it started answering");
      }
      if (now_ns() > deadline) throw std::runtime_error("ping-pong kernel did not start within 10 s");
    }
  }
  const int iters = run.opt.quick ? 2000 : 10000, warm = 500;
  std::vector<uint64_t> samples;
  samples.reserve(iters);
  for (int i = 1; i <= warm + iters; ++i) {
    const uint32_t seq = static_cast<uint32_t>(i);
    const uint64_t t0 = now_ns();
    store_release(&s->ping, seq);
    for (unsigned spins = 0; load_acquire(&s->pong) != seq; ++spins) {
      if ((spins & 65535) == 65535 && now_ns() - t0 > 1000ull * 1000 * 1000)
        throw std::runtime_error("ping-pong: no answer within 1 s (exit reason " +
                                 std::to_string(load_acquire(&s->exit_reason)) + ")");
    }
    const uint64_t t1 = now_ns();
    if (i > warm) samples.push_back(t1 - t0);
  }
  run.pingpong = summarize(samples);
}

void section_a(Run &run, const std::vector<size_t> &batch_sizes) {
  try {
    measure_bandwidth(run, batch_sizes);
  } catch (const std::exception &e) {
    run.report.add_error(std::string("A bandwidth: ") + e.what());
  }
  try {
    measure_empty_kernel(run);
  } catch (const std::exception &e) {
    run.report.add_error(std::string("A empty kernel: ") + e.what());
  }
  try {
    measure_pingpong(run);
  } catch (const std::exception &e) {
    run.pingpong_error = e.what();
    run.report.add_error(std::string("A ping-pong: ") + e.what());
  }
  Table t;
  t.id = "A-latency";
  t.title = "A. Round-trip floors (host wall clock, microseconds)";
  t.header = {"probe", "n", "p50 us", "p99 us", "p99.9 us", "max us", "DESIGN p50/p99", "p50/DESIGN"};
  auto row = [&](const char *name, const LatencyStats &s, double ref50, double ref99) {
    t.rows.push_back({name, std::to_string(s.n), fmt_us(s.p50), fmt_us(s.p99), fmt_us(s.p999),
                      fmt_us(s.max), fmt(ref50, 1) + " / " + fmt(ref99, 1),
                      s.n ? fmt(s.p50 / 1000.0 / ref50, 2) + "x" : "-"});
    run.csv("A", name, "", 0, 0, "p50", s.p50 / 1000.0, "us");
    run.csv("A", name, "", 0, 0, "p99", s.p99 / 1000.0, "us");
    run.csv("A", name, "", 0, 0, "p99.9", s.p999 / 1000.0, "us");
  };
  row("empty kernel launch + sync", run.empty_kernel, 8.6, 15.8);
  row("persistent ping-pong (mapped flags)", run.pingpong, 1.6, 1.7);
  t.notes.push_back("launch + sync: <<<1,1>>> empty kernel, then cudaStreamQuery polled until done "
                    "(a spin, bounded), 100 warm-up launches.");
  t.notes.push_back("ping-pong: bench/bench_kernels.cu, one thread of one block polls a flag in "
                    "cudaHostAllocMapped memory and writes it back to another (separate 128-byte "
                    "lines); the host writes the flag and spins on the answer; 500 warm-up rounds.");
  run.report.add_table(t);
}

// ---- section B: engines --------------------------------------------------------------

const gpp::CoreConfig &core_config() {
  static const gpp::CoreConfig cfg = [] {
    gpp::CoreConfig c{};
    std::memcpy(c.rss_key, gpp::kDefaultRssKey, sizeof c.rss_key);
    c.symmetric_rss = 0;
    c.verify_l4_checksum = 0; // the element's defaults
    return c;
  }();
  return cfg;
}

struct Batch {
  const uint8_t *data = nullptr;
  size_t bytes = 0;
  uint32_t count = 0;
  uint64_t wire_bytes = 0;
};

// --cpu-only: plain aligned heap memory standing in for the pinned arena
// (a bump allocator; release() is a no-op, the bench frees nothing early).
class HeapArena final : public gpp::HostArena {
public:
  explicit HeapArena(size_t bytes)
      : base_(static_cast<uint8_t *>(std::aligned_alloc(kAlign, gpp_align_up(bytes, kAlign)))),
        capacity_(base_ ? gpp_align_up(bytes, kAlign) : 0) {}
  ~HeapArena() override { std::free(base_); }
  void *allocate(size_t bytes) override {
    bytes = gpp_align_up(std::max<size_t>(bytes, 1), kAlign);
    if (used_ + bytes > capacity_) return nullptr;
    void *p = base_ + used_;
    used_ += bytes;
    return p;
  }
  void release(void *) override {}
  bool contains(const void *p) const override {
    return p >= base_ && p < base_ + capacity_;
  }
  size_t capacity() const override { return capacity_; }
  size_t in_use() const override { return used_; }

private:
  uint8_t *base_;
  size_t capacity_;
  size_t used_ = 0;
};

std::unique_ptr<gpp::HostArena> make_arena(const Options &opt, size_t bytes, std::string *error) {
  if (!opt.cpu_only)
    return gpp::make_host_arena(opt.device, bytes, gpp::HostMemoryKind::Default, error);
  auto arena = std::make_unique<HeapArena>(bytes);
  if (!arena->capacity()) {
    *error = "out of memory";
    return nullptr;
  }
  return arena;
}

// `kRing` distinct batches of one shape in the pinned input arena, and the
// CPU results of each (the reference every engine must reproduce).
struct Ring {
  uint32_t count = 0, frame_bytes = 0;
  std::vector<Batch> batches;
  std::vector<std::vector<uint8_t>> bytes;      // host copies (for --gst)
  std::vector<std::vector<GppResult>> reference;
};
constexpr unsigned kRing = 8;

// One way of running batches: a GPU engine or the CPU engine.
class Runner {
public:
  virtual ~Runner() = default;
  virtual unsigned slots() const = 0;
  virtual bool submit(const Batch &b, GppResult *results, std::string *error) = 0;
  virtual bool wait_oldest(std::string *error) = 0;
};

class GpuRunner final : public Runner {
public:
  explicit GpuRunner(std::unique_ptr<gpp::GpuEngine> e) : engine_(std::move(e)) {}
  unsigned slots() const override { return engine_->slots(); }
  bool submit(const Batch &b, GppResult *results, std::string *error) override {
    return engine_->submit(b.data, b.bytes, b.count, core_config(), results, error);
  }
  bool wait_oldest(std::string *error) override { return engine_->wait_oldest(error); }

private:
  std::unique_ptr<gpp::GpuEngine> engine_;
};

// CpuEngine::process is synchronous: submit does the work, wait returns.
class CpuRunner final : public Runner {
public:
  explicit CpuRunner(unsigned threads) : engine_(threads) {}
  unsigned slots() const override { return 1; }
  bool submit(const Batch &b, GppResult *results, std::string *) override {
    engine_.process(b.data, core_config(), results);
    return true;
  }
  bool wait_oldest(std::string *) override { return true; }

private:
  gpp::CpuEngine engine_;
};

struct EngineSpec {
  std::string name;
  gpp::Mode mode;
  unsigned cpu_threads = 0;       // cpu: 0 = all cores
  unsigned persistent_blocks = 0; // persistent: 0 = one per SM
  bool throughput = true;         // also measured for throughput
};

std::unique_ptr<Runner> make_runner(const Run &run, const EngineSpec &spec, std::string *error) {
  if (spec.mode == gpp::Mode::Cpu) return std::make_unique<CpuRunner>(spec.cpu_threads);
  gpp::GpuSettings s;
  s.device_id = run.opt.device;
  s.num_streams = run.opt.streams;
  s.persistent_blocks = spec.persistent_blocks;
  s.wait = gpp::WaitStrategy::Spin;
  auto engine = gpp::make_gpu_engine(spec.mode, s, error);
  if (!engine) return nullptr;
  return std::make_unique<GpuRunner>(std::move(engine));
}

// One batch at a time: submit, wait; per-batch wall time.
LatencyStats run_latency(Runner &r, const Ring &ring, const std::vector<GppResult *> &results,
                         unsigned warmup, unsigned iters, double max_seconds, std::string *error) {
  std::vector<uint64_t> samples;
  samples.reserve(iters);
  const uint64_t stop_at = now_ns() + static_cast<uint64_t>(max_seconds * 1e9);
  for (unsigned i = 0; i < warmup + iters; ++i) {
    const Batch &b = ring.batches[i % ring.batches.size()];
    GppResult *out = results[i % results.size()];
    const uint64_t t0 = now_ns();
    if (!r.submit(b, out, error) || !r.wait_oldest(error)) return summarize(samples);
    const uint64_t t1 = now_ns();
    if (i >= warmup) {
      samples.push_back(t1 - t0);
      if (samples.size() >= 200 && t1 > stop_at) break;
    }
  }
  return summarize(samples);
}

// Runs ring.batches[i] once into results[0] and compares with the reference.
bool check_parity(Runner &r, const Ring &ring, size_t i, GppResult *out, std::string *error) {
  const Batch &b = ring.batches[i];
  std::memset(out, 0xee, b.count * sizeof(GppResult));
  if (!r.submit(b, out, error) || !r.wait_oldest(error)) return false;
  if (std::memcmp(out, ring.reference[i].data(), b.count * sizeof(GppResult)) != 0) {
    uint32_t first = 0;
    while (first < b.count && std::memcmp(&out[first], &ring.reference[i][first], sizeof(GppResult)) == 0)
      ++first;
    *error = "results differ from the CPU reference (first at packet " + std::to_string(first) +
             " of " + std::to_string(b.count) + ")";
    return false;
  }
  return true;
}

// Keeps every slot busy for `seconds`.
ThroughputResult run_throughput(Runner &r, const Ring &ring, const std::vector<GppResult *> &results,
                                double seconds) {
  ThroughputResult t;
  const unsigned slots = std::min<unsigned>(r.slots(), static_cast<unsigned>(results.size()));
  uint64_t submitted = 0, completed = 0;
  auto submit_next = [&]() {
    const Batch &b = ring.batches[submitted % ring.batches.size()];
    if (!r.submit(b, results[submitted % slots], &t.error)) return false;
    ++submitted;
    return true;
  };
  // Warm-up: two rounds of every slot.
  for (unsigned i = 0; i < 2 * slots; ++i)
    if (!submit_next() || !r.wait_oldest(&t.error)) return t;
  submitted = 0;
  const uint64_t t0 = now_ns();
  const uint64_t end = t0 + static_cast<uint64_t>(seconds * 1e9);
  bool submitting = true;
  for (;;) {
    while (submitting && submitted - completed < slots) {
      if (!submit_next()) {
        submitting = false;
        break;
      }
    }
    if (submitted == completed) break;
    if (!r.wait_oldest(&t.error)) break;
    const Batch &b = ring.batches[completed % ring.batches.size()];
    ++completed;
    t.packets += b.count;
    t.batch_bytes += b.bytes;
    t.wire_bytes += b.wire_bytes;
    if (submitting && now_ns() >= end) submitting = false;
  }
  t.seconds = (now_ns() - t0) / 1e9;
  t.batches = completed;
  return t;
}

// The host's ceiling: one CPU core per thread, each on batches of its own.
ThroughputResult run_cpu_parallel(const Ring &ring, unsigned threads, double seconds) {
  ThroughputResult t;
  std::atomic<bool> go{false}, stop{false};
  std::vector<uint64_t> done(threads, 0);
  std::vector<std::thread> pool;
  for (unsigned k = 0; k < threads; ++k) {
    pool.emplace_back([&, k] {
      std::vector<GppResult> out(ring.count);
      while (!go.load(std::memory_order_acquire)) std::this_thread::yield();
      uint64_t n = 0;
      for (size_t i = k; !stop.load(std::memory_order_relaxed); ++i, ++n) {
        const Batch &b = ring.batches[i % ring.batches.size()];
        gpp::process_batch_range(b.data, core_config(), out.data(), 0, b.count);
      }
      done[k] = n;
    });
  }
  const uint64_t t0 = now_ns();
  go.store(true, std::memory_order_release);
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto &th : pool) th.join();
  t.seconds = (now_ns() - t0) / 1e9;
  for (unsigned k = 0; k < threads; ++k) {
    t.batches += done[k];
    for (uint64_t i = 0; i < done[k]; ++i) {
      const Batch &b = ring.batches[(k + i) % ring.batches.size()];
      t.packets += b.count;
      t.batch_bytes += b.bytes;
      t.wire_bytes += b.wire_bytes;
    }
  }
  return t;
}

const std::vector<uint32_t> kSweepSizes = {1, 8, 64, 256, 1024, 4096};
constexpr uint32_t kLatencyPackets = 64;
constexpr uint32_t kSmallFrame = 64, kLargeFrame = 1500, kTputPackets = 4096;

struct Engines {
  std::unique_ptr<gpp::HostArena> inputs, outputs;
  std::map<std::pair<uint32_t, uint32_t>, Ring> rings; // (count, frame bytes)
  std::vector<GppResult *> results;                    // one per slot, kTputPackets records
};

bool build_rings(Run &run, Engines &eng) {
  std::vector<std::pair<uint32_t, uint32_t>> shapes;
  for (uint32_t n : kSweepSizes) shapes.push_back({n, kSmallFrame});
  shapes.push_back({kTputPackets, kLargeFrame});
  std::map<std::pair<uint32_t, uint32_t>, std::vector<std::vector<uint8_t>>> built;
  size_t arena_bytes = 1u << 20;
  uint32_t flow = 0;
  for (auto shape : shapes) {
    auto &v = built[shape];
    for (unsigned k = 0; k < kRing; ++k) {
      v.push_back(make_udp_batch(shape.first, shape.second, flow));
      flow += shape.first;
      arena_bytes += gpp_align_up(v.back().size(), gpp::HostArena::kAlign);
    }
  }
  std::string error;
  eng.inputs = make_arena(run.opt, arena_bytes, &error);
  const unsigned nres = std::max(1u, run.opt.streams);
  const size_t per_result = gpp_align_up(kTputPackets * sizeof(GppResult), gpp::HostArena::kAlign);
  if (eng.inputs)
    eng.outputs = make_arena(run.opt, per_result * nres + (1u << 20), &error);
  if (!eng.inputs || !eng.outputs) {
    run.report.add_error("B: pinned arenas: " + error);
    return false;
  }
  for (unsigned i = 0; i < nres; ++i)
    eng.results.push_back(static_cast<GppResult *>(eng.outputs->allocate(per_result)));
  gpp::CpuEngine cpu(1);
  for (auto &kv : built) {
    Ring &ring = eng.rings[kv.first];
    ring.count = kv.first.first;
    ring.frame_bytes = kv.first.second;
    for (auto &bytes : kv.second) {
      char why[256];
      if (!gpp_batch_validate(bytes.data(), bytes.size(), why, sizeof why)) {
        run.report.add_error(std::string("B: a synthetic batch is invalid: ") + why);
        return false;
      }
      auto *dst = static_cast<uint8_t *>(eng.inputs->allocate(bytes.size()));
      if (!dst) {
        run.report.add_error("B: input arena too small");
        return false;
      }
      std::memcpy(dst, bytes.data(), bytes.size());
      Batch b;
      b.data = dst;
      b.bytes = bytes.size();
      b.count = ring.count;
      for (uint32_t i = 0; i < b.count; ++i) b.wire_bytes += gpp_batch_descs(dst)[i].wirelen;
      ring.batches.push_back(b);
      std::vector<GppResult> ref(ring.count);
      cpu.process(dst, core_config(), ref.data());
      for (uint32_t i = 0; i < ring.count; ++i)
        if (ref[i].status != 0) {
          run.report.add_error("B: the core flags synthetic packet " + std::to_string(i) +
                               " (status " + std::to_string(ref[i].status) + "): generator bug");
          return false;
        }
      ring.reference.push_back(std::move(ref));
      ring.bytes.push_back(std::move(bytes));
    }
  }
  return true;
}

void section_b(Run &run, Engines &eng) {
  const bool q = run.opt.quick;
  std::vector<EngineSpec> specs = {
      {"cpu-1", gpp::Mode::Cpu, 1, 0, true},
      {"cpu-all", gpp::Mode::Cpu, 0, 0, true},
      {"streams", gpp::Mode::Streams, 0, 0, true},
      {"zerocopy", gpp::Mode::ZeroCopy, 0, 0, true},
      {"graph", gpp::Mode::Graph, 0, 0, true},
      {"persistent", gpp::Mode::Persistent, 0, 0, true},
      {"persistent-1blk", gpp::Mode::Persistent, 0, 1, false},
  };
  if (run.opt.cpu_only)
    specs.erase(std::remove_if(specs.begin(), specs.end(),
                               [](const EngineSpec &e) { return e.mode != gpp::Mode::Cpu; }),
                specs.end());
  const double tput_s = q ? 0.3 : 2.0;
  for (const EngineSpec &spec : specs) {
    run.phase("B: " + spec.name + " start", 60);
    std::string error;
    std::unique_ptr<Runner> r = make_runner(run, spec, &error);
    if (!r) {
      run.engine_error[spec.name] = error;
      run.report.add_error("B " + spec.name + ": " + error);
      continue;
    }
    bool ok = true;
    for (uint32_t n : kSweepSizes) {
      const bool main = n == kLatencyPackets;
      const unsigned iters = main ? (q ? 1000 : 5000) : (q ? 300 : 2000);
      const double cap = main ? (q ? 1.0 : 4.0) : (q ? 0.3 : 1.5);
      run.phase("B: " + spec.name + " latency, " + std::to_string(n) + "-packet batches", cap + 20);
      const Ring &ring = eng.rings.at({n, kSmallFrame});
      LatencyStats s = run_latency(*r, ring, eng.results, main ? 200 : 50, iters, cap, &error);
      if (!error.empty()) {
        run.engine_error[spec.name] = error;
        run.report.add_error("B " + spec.name + " latency (" + std::to_string(n) + "): " + error);
        ok = false;
        break;
      }
      run.latency[spec.name][n] = s;
      run.csv("B", "latency", spec.name, n, kSmallFrame, "p50", s.p50 / 1000, "us");
      run.csv("B", "latency", spec.name, n, kSmallFrame, "p99", s.p99 / 1000, "us");
      run.csv("B", "latency", spec.name, n, kSmallFrame, "p99.9", s.p999 / 1000, "us");
    }
    if (ok) {
      run.phase("B: " + spec.name + " parity", 60);
      std::string why;
      const Ring &ring = eng.rings.at({kLatencyPackets, kSmallFrame});
      run.latency_parity[spec.name] = check_parity(*r, ring, 1, eng.results[0], &why) ? "ok" : why;
      if (!why.empty()) run.report.add_error("B " + spec.name + " parity: " + why);
    }
    if (ok && spec.throughput) {
      for (uint32_t frame : {kSmallFrame, kLargeFrame}) {
        run.phase("B: " + spec.name + " throughput, 4096 x " + std::to_string(frame) + " B",
                  tput_s + 30);
        const Ring &ring = eng.rings.at({kTputPackets, frame});
        ThroughputResult t = run_throughput(*r, ring, eng.results, tput_s);
        if (t.error.empty()) {
          std::string why;
          t.parity_checked = true;
          t.parity_ok = check_parity(*r, ring, 2, eng.results[0], &why);
          if (!t.parity_ok) run.report.add_error("B " + spec.name + " parity (4096 x " +
                                                 std::to_string(frame) + "): " + why);
        } else {
          run.report.add_error("B " + spec.name + " throughput: " + t.error);
        }
        run.throughput[spec.name][frame] = t;
        run.csv("B", "throughput", spec.name, kTputPackets, frame, "mpps", t.mpps(), "Mpps");
        run.csv("B", "throughput", spec.name, kTputPackets, frame, "gbps_wire", t.gbps(), "Gbit/s");
        run.csv("B", "throughput", spec.name, kTputPackets, frame, "batch_gBps", t.batch_gBps(),
                "GB/s");
      }
    }
    run.phase("B: " + spec.name + " teardown", 60);
    r.reset();
  }
  // The host's real CPU ceiling: every core on batches of its own.
  const unsigned cores = std::max(1u, std::thread::hardware_concurrency());
  const std::string par = "cpu-" + std::to_string(cores) + "x1";
  for (uint32_t frame : {kSmallFrame, kLargeFrame}) {
    run.phase("B: " + par + " throughput, 4096 x " + std::to_string(frame) + " B", tput_s + 30);
    ThroughputResult t = run_cpu_parallel(eng.rings.at({kTputPackets, frame}), cores, tput_s);
    run.throughput[par][frame] = t;
    run.csv("B", "throughput", par, kTputPackets, frame, "mpps", t.mpps(), "Mpps");
    run.csv("B", "throughput", par, kTputPackets, frame, "gbps_wire", t.gbps(), "Gbit/s");
  }

  // ---- tables
  std::vector<std::string> names;
  for (const EngineSpec &s : specs) names.push_back(s.name);
  {
    Table t;
    t.id = "B-latency";
    t.title = "B. Engine latency, 64-packet batches of 64-byte packets, one batch at a time (us)";
    t.header = {"engine", "n", "p50", "p99", "p99.9", "max", "ns/packet @p50", "parity"};
    for (const auto &name : names) {
      auto it = run.latency.find(name);
      if (it == run.latency.end() || !it->second.count(kLatencyPackets)) {
        t.rows.push_back({name, "-", "-", "-", "-", "-", "-",
                          short_error(run.engine_error[name])});
        continue;
      }
      const LatencyStats &s = it->second.at(kLatencyPackets);
      t.rows.push_back({name, std::to_string(s.n), fmt_us(s.p50), fmt_us(s.p99), fmt_us(s.p999),
                        fmt_us(s.max), fmt(s.p50 / kLatencyPackets, 0), run.latency_parity[name]});
    }
    t.notes.push_back("submit() to wait_oldest() returning, host wall clock; WaitStrategy::Spin; "
                      "num_streams " + std::to_string(run.opt.streams) +
                      "; persistent: one block per SM, persistent-1blk: persistent_blocks=1.");
    t.notes.push_back("parity: a batch's results compared byte for byte with the CPU engine's.");
    run.report.add_table(t);
  }
  {
    Table t;
    t.id = "B-sweep";
    t.title = "B. Latency by batch size, 64-byte packets: p50 / p99 (us)";
    t.header = {"packets"};
    for (const auto &name : names) t.header.push_back(name);
    for (uint32_t n : kSweepSizes) {
      std::vector<std::string> row = {std::to_string(n)};
      for (const auto &name : names) {
        auto it = run.latency.find(name);
        if (it == run.latency.end() || !it->second.count(n)) {
          row.push_back("-");
          continue;
        }
        const LatencyStats &s = it->second.at(n);
        row.push_back(fmt_us(s.p50) + " / " + fmt_us(s.p99));
      }
      t.rows.push_back(row);
    }
    run.report.add_table(t);
  }
  {
    // Where does the GPU start beating the CPU?  Against the better of cpu-1
    // and cpu-all at each size, on p50.
    Table t;
    t.id = "B-crossover";
    t.title = "B. CPU/GPU crossover (p50 latency; cpu = the better of cpu-1 and cpu-all)";
    t.header = {"mode"};
    for (uint32_t n : kSweepSizes) t.header.push_back("cpu/gpu @" + std::to_string(n));
    t.header.push_back("GPU faster from");
    for (const auto &name : names) {
      if (name.rfind("cpu", 0) == 0) continue;
      std::vector<std::string> row = {name};
      uint32_t from = 0;
      bool any = false;
      for (uint32_t n : kSweepSizes) {
        double cpu = kNaN;
        for (const char *c : {"cpu-1", "cpu-all"}) {
          auto it = run.latency.find(c);
          if (it != run.latency.end() && it->second.count(n))
            cpu = std::isnan(cpu) ? it->second.at(n).p50 : std::min(cpu, it->second.at(n).p50);
        }
        auto g = run.latency.find(name);
        if (std::isnan(cpu) || g == run.latency.end() || !g->second.count(n)) {
          row.push_back("-");
          continue;
        }
        any = true;
        const double ratio = cpu / g->second.at(n).p50;
        row.push_back(fmt(ratio, 2) + "x");
        if (ratio > 1) {
          if (!from) from = n;
        } else {
          from = 0; // the CPU won again at a larger size
        }
      }
      const std::string verdict = !any ? "-" : from ? std::to_string(from) + " packets"
                                                    : "never (cpu wins up to 4096)";
      row.push_back(verdict);
      t.rows.push_back(row);
      run.csv("B", "crossover", name, from, kSmallFrame, "gpu_faster_from_packets", from, "packets",
              "", "", verdict);
      std::printf("crossover: %s beats the CPU from %s\n", name.c_str(), verdict.c_str());
    }
    t.notes.push_back("cpu/gpu > 1: the GPU mode has the lower p50.  \"from\" = the smallest "
                      "measured size from which the GPU mode stays faster at every larger size.");
    run.report.add_table(t);
  }
  {
    Table t;
    t.id = "B-throughput";
    t.title = "B. Engine throughput, 4096-packet batches, all slots busy";
    t.header = {"engine", "packet B", "batches", "Mpps", "Gbit/s wire", "batch GB/s",
                "% H2D (1 copy)", "% H2D (back-to-back)", "parity"};
    std::vector<std::string> tnames;
    for (const auto &s : specs)
      if (s.throughput) tnames.push_back(s.name);
    tnames.push_back(par);
    for (uint32_t frame : {kSmallFrame, kLargeFrame}) {
      const size_t batch_size = eng.rings.at({kTputPackets, frame}).batches[0].bytes;
      const double h2d = run.bandwidth.count(batch_size) ? run.bandwidth[batch_size].h2d : kNaN;
      const double b2b = run.h2d_sustained.count(batch_size) ? run.h2d_sustained[batch_size] : kNaN;
      for (const auto &name : tnames) {
        auto it = run.throughput.find(name);
        if (it == run.throughput.end() || !it->second.count(frame)) {
          t.rows.push_back({name, std::to_string(frame), "-", "-", "-", "-", "-", "-",
                            short_error(run.engine_error[name])});
          continue;
        }
        const ThroughputResult &r = it->second.at(frame);
        const bool gpu = name.rfind("cpu", 0) != 0;
        const double pct = gpu ? 100 * r.batch_gBps() / h2d : kNaN;
        const double pct2 = gpu ? 100 * r.batch_gBps() / b2b : kNaN;
        t.rows.push_back({name, std::to_string(frame), std::to_string(r.batches), fmt(r.mpps(), 2),
                          fmt(r.gbps(), 1), fmt(r.batch_gBps(), 2),
                          gpu ? fmt(pct, 1) + "%" : "-", gpu ? fmt(pct2, 1) + "%" : "-",
                          !r.error.empty() ? short_error(r.error)
                          : r.parity_checked ? (r.parity_ok ? "ok" : "MISMATCH")
                                             : "-"});
        if (gpu) {
          run.csv("B", "throughput", name, kTputPackets, frame, "pct_of_h2d", pct, "%");
          run.csv("B", "throughput", name, kTputPackets, frame, "pct_of_h2d_back_to_back", pct2, "%");
        }
      }
    }
    t.notes.push_back("Gbit/s wire = 8 x sum of wire lengths (the frame without preamble, IFG and "
                      "FCS); batch GB/s = whole batches (header + descriptors + 16-byte-aligned "
                      "packets) per second, the bytes that cross PCIe to the GPU.");
    t.notes.push_back("% H2D: batch GB/s over the pinned H2D bandwidth of table A at the batch's "
                      "size (1 copy: median single copy; back-to-back: copies queued on one stream).");
    t.notes.push_back(par + ": " + std::to_string(std::max(1u, std::thread::hardware_concurrency())) +
                      " threads, each running the core over batches of its own (no engine): "
                      "the host's ceiling.  cpu-all is CpuEngine(0), one batch at a time, which "
                      "splits a 4096-packet batch over at most 8 threads (512 packets each).");
    t.notes.push_back("Core settings are the element's defaults (Toeplitz default key, symmetric-rss "
                      "and verify-l4-checksum off): the core reads headers, not payloads, so the "
                      "CPU's cost hardly grows with packet size while the GPU modes still move "
                      "every byte over PCIe.");
    t.notes.push_back("Batch ring: " + std::to_string(kRing) + " distinct pinned batches per shape, "
                      "results into one pinned buffer per engine slot; " +
                      fmt(tput_s, 1) + " s per row after two rounds of warm-up.");
    run.report.add_table(t);
  }
}

// ---- section C: the element ---------------------------------------------------------------

void section_c(Run &run, Engines &eng) {
  const Ring &ring = eng.rings.at({kLatencyPackets, kSmallFrame});
  GstBenchConfig cfg;
  cfg.device_id = run.opt.device;
  cfg.warmup = run.opt.quick ? 200 : 500;
  cfg.measured = 4096;
  std::vector<std::string> modes = {"persistent", "streams", "graph", "zerocopy", "cpu"};
  if (run.opt.cpu_only) modes = {"cpu"};
  run.gst_ran = run_gst_latency(
      cfg, ring.bytes, ring.reference, modes,
      [&](const std::string &mode) { run.phase("C: element, mode=" + mode, 60); }, &run.gst,
      &run.gst_error);
  if (!run.gst_ran) {
    run.report.add_error("C: " + run.gst_error);
    return;
  }
  Table t;
  t.id = "C-element";
  t.title = "C. gpupacketproc in a GstHarness, 64-packet batches of 64-byte packets, one at a time (us)";
  t.header = {"mode", "stats p50", "stats p99", "stats p99.9", "push->pull p50", "push->pull p99",
              "engine-only p99 (B)", "stats p99 / raw ping-pong p99", "pinned", "parity"};
  for (const GstModeResult &g : run.gst) {
    const std::string engine = g.mode == "cpu" ? "cpu-1" : g.mode;
    auto it = run.latency.find(engine);
    const double eng_p99 = it != run.latency.end() && it->second.count(kLatencyPackets)
                               ? it->second.at(kLatencyPackets).p99
                               : kNaN;
    const double ratio = run.pingpong.n ? g.stats_p99 / run.pingpong.p99 : kNaN;
    if (!g.error.empty()) {
      t.rows.push_back({g.mode, "-", "-", "-", "-", "-", fmt_us(eng_p99), "-", "-",
                        short_error(g.error)});
      run.report.add_error("C " + g.mode + ": " + g.error);
      continue;
    }
    const std::string pinned = !g.had_allocator ? "no allocator offered"
                               : g.copied_batches ? std::to_string(g.copied_batches) + " copied"
                               : g.pool_fallbacks ? std::to_string(g.pool_fallbacks) + " fallbacks"
                                                  : "yes";
    t.rows.push_back({g.mode, fmt_us(g.stats_p50), fmt_us(g.stats_p99), fmt_us(g.stats_p999),
                      fmt_us(g.external.p50), fmt_us(g.external.p99), fmt_us(eng_p99),
                      std::isnan(ratio) ? "-" : fmt(ratio, 2) + "x", pinned,
                      g.parity_ok ? "ok" : "MISMATCH"});
    run.csv("C", "element", g.mode, kLatencyPackets, kSmallFrame, "stats_p50", g.stats_p50 / 1000.0, "us");
    run.csv("C", "element", g.mode, kLatencyPackets, kSmallFrame, "stats_p99", g.stats_p99 / 1000.0, "us");
    run.csv("C", "element", g.mode, kLatencyPackets, kSmallFrame, "stats_p99.9", g.stats_p999 / 1000.0, "us");
    run.csv("C", "element", g.mode, kLatencyPackets, kSmallFrame, "push_pull_p50", g.external.p50 / 1000, "us");
    run.csv("C", "element", g.mode, kLatencyPackets, kSmallFrame, "push_pull_p99", g.external.p99 / 1000, "us");
    if (!g.parity_ok) run.report.add_error("C " + g.mode + ": results differ from the CPU reference");
  }
  t.notes.push_back("stats: the element's own MODE-latency-pNN-ns (chain entry to result push) over "
                    "its last 4096 batches = the " + std::to_string(cfg.measured) +
                    " measured ones after " + std::to_string(cfg.warmup) + " warm-up batches.");
  t.notes.push_back("push->pull: gst_harness_push() until gst_harness_try_pull() (spinning) returns "
                    "the results.  Batches live in memory from the allocator the element offers in "
                    "the ALLOCATION query (pinned: \"yes\" = no batch was copied).  cpu: cpu-threads=1.");
  run.report.add_table(t);
}

// ---- targets --------------------------------------------------------------------------------

struct Target {
  std::string name, measured, target, ratio, status, gap;
};

void targets(Run &run, Engines *eng) {
  std::vector<Target> ts;
  // 1. Element persistent p99 within 3x of the raw persistent round trip.
  {
    Target t;
    t.name = "persistent p99 in the element, 64-packet batches, <= 3x raw ping-pong p99";
    t.target = "<= 3.00x";
    const GstModeResult *g = nullptr;
    for (const auto &r : run.gst)
      if (r.mode == "persistent" && r.error.empty()) g = &r;
    auto eng_it = run.latency.find("persistent");
    const double eng_ratio = run.pingpong.n && eng_it != run.latency.end() &&
                                     eng_it->second.count(kLatencyPackets)
                                 ? eng_it->second.at(kLatencyPackets).p99 / run.pingpong.p99
                                 : kNaN;
    if (!run.pingpong.n) {
      t.status = "NOT MEASURED";
      t.gap = run.opt.cpu_only ? "--cpu-only" : "raw ping-pong failed: " + run.pingpong_error;
    } else if (!g) {
      t.status = "NOT MEASURED";
      t.measured = "engine-only: " + fmt(eng_ratio, 2) + "x";
      t.gap = run.opt.gst ? "element run failed: " + run.gst_error : "run with --gst";
    } else {
      const double ratio = g->stats_p99 / run.pingpong.p99;
      t.measured = fmt_us(g->stats_p99) + " us vs " + fmt_us(run.pingpong.p99) + " us";
      t.ratio = fmt(ratio, 2) + "x";
      t.status = ratio <= 3 ? "PASS" : "MISS";
      const double budget = 3 * run.pingpong.p99;
      t.gap = ratio <= 3 ? "headroom " + fmt_us(budget - g->stats_p99) + " us"
                         : fmt_us(g->stats_p99 - budget) + " us over (" + fmt(ratio / 3, 2) +
                               "x the budget of " + fmt_us(budget) + " us)";
      t.gap += "; engine-only " + fmt(eng_ratio, 2) + "x";
      run.csv("targets", "element-persistent-p99-vs-pingpong", "persistent", kLatencyPackets,
              kSmallFrame, "ratio", ratio, "x", "<=3", t.status);
    }
    ts.push_back(t);
  }
  // 2. streams / graph >= 150 Mpps on 4096 x 64-byte packets.
  for (const char *mode : {"streams", "graph"}) {
    Target t;
    t.name = std::string(mode) + " throughput, 4096 x 64-byte packets, >= 150 Mpps";
    t.target = ">= 150 Mpps";
    auto it = run.throughput.find(mode);
    if (it == run.throughput.end() || !it->second.count(kSmallFrame) ||
        !it->second.at(kSmallFrame).error.empty() || !it->second.at(kSmallFrame).batches) {
      t.status = "NOT MEASURED";
      t.gap = run.engine_error[mode];
    } else {
      const double m = it->second.at(kSmallFrame).mpps();
      t.measured = fmt(m, 1) + " Mpps";
      t.ratio = fmt(m / 150, 2) + "x";
      t.status = m >= 150 ? "PASS" : "MISS";
      t.gap = m >= 150 ? "headroom " + fmt(m - 150, 1) + " Mpps"
                       : fmt(150 - m, 1) + " Mpps short (" + fmt(150 / m, 2) + "x needed)";
      run.csv("targets", "tput-64B-4096", mode, kTputPackets, kSmallFrame, "mpps", m, "Mpps",
              ">=150", t.status);
    }
    ts.push_back(t);
  }
  // 3. 1500-byte packets at >= 80% of pinned H2D bandwidth (at the batch's size).
  if (eng) {
    const size_t batch_size = eng->rings.at({kTputPackets, kLargeFrame}).batches[0].bytes;
    const double h2d = run.bandwidth.count(batch_size) ? run.bandwidth[batch_size].h2d : kNaN;
    for (const char *mode : {"streams", "graph", "zerocopy", "persistent"}) {
      Target t;
      const bool copy_mode = std::strcmp(mode, "streams") == 0 || std::strcmp(mode, "graph") == 0;
      t.name = std::string(mode) + " 4096 x 1500-byte packets, >= 80% of pinned H2D" +
               (copy_mode ? "" : " (info)");
      t.target = ">= 80%";
      auto it = run.throughput.find(mode);
      if (std::isnan(h2d) || it == run.throughput.end() || !it->second.count(kLargeFrame) ||
          !it->second.at(kLargeFrame).error.empty() || !it->second.at(kLargeFrame).batches) {
        t.status = "NOT MEASURED";
        t.gap = std::isnan(h2d) ? "no H2D bandwidth measured" : run.engine_error[mode];
      } else {
        const ThroughputResult &r = it->second.at(kLargeFrame);
        const double pct = 100 * r.batch_gBps() / h2d;
        t.measured = fmt(r.batch_gBps(), 1) + " GB/s of " + fmt(h2d, 1) + " GB/s = " +
                     fmt(pct, 1) + "%";
        t.ratio = fmt(pct / 80, 2) + "x";
        t.status = pct >= 80 ? "PASS" : "MISS";
        t.gap = pct >= 80 ? "headroom " + fmt(pct - 80, 1) + " points"
                          : fmt(80 - pct, 1) + " points short (" + fmt(r.mpps(), 2) + " Mpps, " +
                                fmt(r.gbps(), 1) + " Gbit/s)";
        run.csv("targets", "tput-1500B-4096-pct-h2d", mode, kTputPackets, kLargeFrame, "pct_of_h2d",
                pct, "%", ">=80", copy_mode ? t.status : "info");
      }
      ts.push_back(t);
    }
  }
  Table t;
  t.id = "targets";
  t.title = "Targets (issue)";
  t.header = {"target", "measured", "target", "ratio", "status", "gap"};
  for (const auto &x : ts) t.rows.push_back({x.name, x.measured, x.target, x.ratio, x.status, x.gap});
  t.notes.push_back("ratio = measured / target (for the latency target: element p99 / ping-pong p99).");
  t.notes.push_back("(info): the issue names no target for this mode; shown for comparison.");
  run.report.add_table(t);
}

// ---- setup -----------------------------------------------------------------------------------

std::string now_text() {
  char buf[64];
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  localtime_r(&t, &tm);
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S %Z", &tm);
  return buf;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) {
      const auto colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2);
    }
  return "unknown";
}

std::string version_text(int v) {
  return std::to_string(v / 1000) + "." + std::to_string(v % 1000 / 10);
}

// Checks that the device can run work; "" when usable.
std::string probe_device(int device, cudaDeviceProp *prop) {
  int count = 0;
  cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess)
    return std::string("CUDA could not initialise: ") + cudaGetErrorName(e) + " (" +
           cudaGetErrorString(e) + ")";
  if (count == 0) return "no CUDA device";
  if (device >= count)
    return "device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
           " device(s))";
  if ((e = cudaSetDevice(device)) != cudaSuccess || (e = cudaFree(nullptr)) != cudaSuccess ||
      (e = cudaGetDeviceProperties(prop, device)) != cudaSuccess)
    return std::string("device ") + std::to_string(device) + " is not usable: " +
           cudaGetErrorName(e) + " (" + cudaGetErrorString(e) + ")";
  return "";
}

} // namespace

int main(int argc, char **argv) {
  Options opt;
  if (!parse_options(argc, argv, &opt)) {
    usage(stderr);
    return 2;
  }
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  cudaDeviceProp prop{};
  const std::string why = opt.cpu_only ? "" : probe_device(opt.device, &prop);
  if (!why.empty()) {
    std::printf("gpupacket-bench: SKIP: no usable GPU: %s\n", why.c_str());
    return kExitSkip;
  }
  if (opt.gst && !gst_bench_available()) {
    std::fprintf(stderr, "gpupacket-bench: --gst: built without gstreamer-check-1.0 (GstHarness)\n");
    return 2;
  }

  Run run;
  run.opt = opt;
  Watchdog watchdog([&run](const std::string &msg) {
    run.report.add_error("WATCHDOG: " + msg);
    if (!run.opt.out.empty()) {
      std::string err;
      if (!run.report.try_write(run.opt.out, "ABORTED: " + msg, 2000, &err))
        std::fprintf(stderr, "gpupacket-bench: could not write the partial report: %s\n", err.c_str());
      else
        std::fprintf(stderr, "gpupacket-bench: partial report in %s\n", run.opt.out.c_str());
    }
  });
  run.watchdog = &watchdog;
  const uint64_t started = now_ns();

  int driver = 0, runtime = 0;
  if (cudaDriverGetVersion(&driver) != cudaSuccess) driver = 0;
  if (cudaRuntimeGetVersion(&runtime) != cudaSuccess) runtime = 0;
  struct utsname un{};
  uname(&un);
  char pci[32];
  std::snprintf(pci, sizeof pci, "%04x:%02x:%02x", prop.pciDomainID, prop.pciBusID, prop.pciDeviceID);
  run.device_name = opt.cpu_only ? "none (--cpu-only)" : prop.name;
  run.report.add_meta("date", now_text());
  run.report.add_meta("command", "`" + opt.command_line + "`");
  if (opt.cpu_only)
    run.report.add_meta("GPU", run.device_name);
  else
    run.report.add_meta("GPU", std::string(prop.name) + " (device " + std::to_string(opt.device) +
                                   ", PCI " + pci + ", " + std::to_string(prop.multiProcessorCount) +
                                   " SMs, " + std::to_string(prop.totalGlobalMem >> 30) +
                                   " GiB, sm_" + std::to_string(prop.major) +
                                   std::to_string(prop.minor) + ")");
  run.report.add_meta("CUDA driver / runtime", version_text(driver) + " / " + version_text(runtime) +
                                                   " (cudaDriverGetVersion / cudaRuntimeGetVersion)");
  {
    std::ifstream f("/proc/driver/nvidia/version");
    std::string line;
    if (std::getline(f, line)) run.report.add_meta("NVIDIA kernel module", line);
  }
  run.report.add_meta("host", std::string(un.nodename) + ", " + cpu_model() + ", " +
                                  std::to_string(std::thread::hardware_concurrency()) +
                                  " hardware threads, Linux " + un.release);
  run.report.add_meta("settings", std::string(opt.quick ? "quick" : "full") + " run, num_streams " +
                                      std::to_string(opt.streams) + ", wait spin" +
                                      (opt.gst ? ", with --gst" : ", without --gst") +
                                      (opt.cpu_only ? ", --cpu-only (no GPU rows)" : ""));
  std::printf("gpupacket-bench: %s, CUDA driver %s, runtime %s, %s run\n", run.device_name.c_str(),
              version_text(driver).c_str(), version_text(runtime).c_str(), opt.quick ? "quick" : "full");

  Engines eng;
  run.phase("B: building batches", 120);
  const bool have_rings = build_rings(run, eng);
  std::vector<size_t> batch_sizes;
  if (have_rings)
    for (uint32_t frame : {kSmallFrame, kLargeFrame})
      batch_sizes.push_back(eng.rings.at({kTputPackets, frame}).batches[0].bytes);

  if (!opt.cpu_only) section_a(run, batch_sizes);
  if (have_rings) {
    section_b(run, eng);
    if (opt.gst) section_c(run, eng);
  }
  targets(run, have_rings ? &eng : nullptr);
  watchdog.disarm();

  const double seconds = (now_ns() - started) / 1e9;
  const size_t errors = run.report.errors();
  const std::string status = errors ? "complete with " + std::to_string(errors) + " error(s)"
                                    : "complete";
  run.report.add_meta("run time", fmt(seconds, 1) + " s");
  std::printf("\ngpupacket-bench: %s in %.1f s\n", status.c_str(), seconds);
  if (!opt.out.empty()) {
    std::string err;
    if (!run.report.write(opt.out, status, &err)) {
      std::fprintf(stderr, "gpupacket-bench: %s\n", err.c_str());
      return 1;
    }
    std::printf("gpupacket-bench: wrote %s/report.md and %s/report.csv\n", opt.out.c_str(),
                opt.out.c_str());
  }
  return errors ? 1 : 0;
}
