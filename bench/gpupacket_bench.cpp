// gpupacket-bench: the raw limits of the GPU host, the engine in every mode
// and (with --gst) the gpupacketproc element, measured in one run, side by
// side, against the targets of the issue.  See bench/README.md.
//
//   gpupacket-bench [--quick] [--out DIR] [--gst] [--device N] [--streams N]
//                   [--cpu-only] [--data DIR] [--peers-csv FILE]
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
#include <iterator>
#include <limits>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "bench_cuda.h"
#include "bench_engines.h"
#include "bench_kernels.h"
#include "cuda_util.h"
#include "engine.h"
#include "grid.h"
#include "gst_bench.h"
#include "memory_kinds.h"
#include "workloads.h"

using namespace gppbench;

namespace {

constexpr int kExitSkip = 77;

// ---- options -------------------------------------------------------------------

struct Options {
  bool quick = false;
  bool gst = false;
  bool cpu_only = false; // no GPU needed: the CPU rows (and --gst mode=cpu) only
  std::string out;
  std::string data = GPP_BENCH_DATA_DIR; // ../shared/data
  std::string peers_csv;
  std::string grid = "all"; // stress | realistic | all
  int device = 0;
  unsigned streams = gpp::kDefaultNumStreams; // the element's num-streams default
  // Section B filters (empty: everything): for short A/B runs of a few cells.
  std::vector<std::string> engines;     // engine names (engine_specs)
  std::vector<uint32_t> sizes;          // batch sizes, packets
  std::vector<std::string> cells;       // "PROFILE/WORKLOAD"
  // false (--no-records): the GPU engines leave their records on the device,
  // so section B shows what a batch costs without the copy back (a ceiling
  // for smaller records), unchecked, and no targets are evaluated.
  bool records = true;
  std::string command_line;
};

// "a,b,c" -> {"a", "b", "c"}; empty items are kept (and then rejected).
std::vector<std::string> split_commas(const std::string &text) {
  std::vector<std::string> out;
  size_t from = 0;
  for (;;) {
    const size_t comma = text.find(',', from);
    out.push_back(text.substr(from, comma - from));
    if (comma == std::string::npos) return out;
    from = comma + 1;
  }
}

constexpr uint32_t kMaxBenchBatch = 16384; // the largest batch the grid is built and checked for

std::vector<uint32_t> sorted_unique(std::vector<uint32_t> v) {
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

std::string join(const std::vector<std::string> &items, const char *separator) {
  std::string out;
  for (size_t k = 0; k < items.size(); ++k) out += (k ? separator : "") + items[k];
  return out;
}

// The report's note of the section B filters in force ("" when none).
std::string section_b_filters(const Options &o) {
  std::vector<std::string> sizes;
  for (uint32_t n : o.sizes) sizes.push_back(std::to_string(n));
  std::string out;
  if (!o.engines.empty()) out += ", engines " + join(o.engines, ",");
  if (!o.sizes.empty()) out += ", sizes " + join(sizes, ",");
  if (!o.cells.empty()) out += ", cells " + join(o.cells, ",");
  return out;
}

void usage(FILE *f) {
  std::fprintf(f,
               "usage: gpupacket-bench [--quick] [--out DIR] [--gst] [--device N] [--streams N]\n"
               "                       [--cpu-only] [--data DIR] [--peers-csv FILE]\n"
               "                       [--grid stress|realistic|all]\n"
               "  --quick      short run: batch sizes 1, 64, 4096, tiny budgets (about 30 s;\n"
               "               the full run takes about 5 minutes on an H200 host)\n"
               "  --out DIR    write DIR/report.md and DIR/report.csv\n"
               "  --gst        also measure the gpupacketproc element (GstHarness); finds the\n"
               "               plugin through GST_PLUGIN_PATH_1_0 (default: this build's)\n"
               "  --device N   CUDA device (default 0)\n"
               "  --streams N  EngineSettings::num_streams for the GPU modes (default %u, as the\n"
               "               element's num-streams)\n"
               "  --cpu-only   no GPU needed: only the CPU rows (and with --gst, mode=cpu);\n"
               "               checks the benchmark itself on a machine without a GPU\n"
               "  --data DIR   rule and pattern files (default: the build's ../shared/data)\n"
               "  --peers-csv FILE  gpupacket-cpu-peers --csv output: the CPU peers' all-core\n"
               "               figures (rte_acl, Hyperscan, the CPU pipeline) for the targets\n"
               "  --grid G     which cells of section B: stress (the original workloads),\n"
               "               realistic (real ClassBench 10k sets, ET Open 2024 fast patterns,\n"
               "               real/HTTP/dense payloads) or all (default)\n"
               "  --engines LIST  only these engines of section B (comma-separated: cpu-1,\n"
               "               cpu-all, streams, zerocopy, graph, persistent, persistent-1blk,\n"
               "               cpu-parallel = the cpu-Nx1 column)\n"
               "  --sizes LIST only these batch sizes, packets (comma-separated, 1-%u)\n"
               "  --cells LIST only these cells of the grid (comma-separated PROFILE/WORKLOAD,\n"
               "               e.g. pcap-1500B/+et2024); targets without their points read\n"
               "               NOT MEASURED\n"
               "  --no-records streams, zerocopy and graph leave their records on the device\n"
               "               (EngineSettings::records_to_host=false): section B's cost of a\n"
               "               batch without the copy back; those points are not checked\n"
               "               against the CPU, and the targets are not evaluated\n"
               "exit: 0 ran, 1 a measurement failed, 2 usage, 3 watchdog, 77 no usable GPU\n",
               gpp::kDefaultNumStreams, kMaxBenchBatch);
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
    } else if (a == "--out" || a == "--data" || a == "--peers-csv" || a == "--grid") {
      const char *v = value(a.c_str());
      if (!v) return false;
      (a == "--out" ? o->out : a == "--data" ? o->data : a == "--grid" ? o->grid : o->peers_csv) = v;
      if (a == "--grid" && o->grid != "stress" && o->grid != "realistic" && o->grid != "all") {
        std::fprintf(stderr, "gpupacket-bench: --grid is stress, realistic or all, not %s\n", v);
        return false;
      }
    } else if (a == "--device" || a == "--streams") {
      const char *v = value(a.c_str());
      if (!v) return false;
      char *end = nullptr;
      const long n = std::strtol(v, &end, 10);
      const long max_streams = static_cast<long>(gpp::kMaxNumStreams);
      if (!*v || *end || n < 0 || (a == "--streams" && (n < 1 || n > max_streams)) || n > 1024) {
        std::fprintf(stderr, "gpupacket-bench: bad value for %s: %s\n", a.c_str(), v);
        return false;
      }
      if (a == "--device") o->device = static_cast<int>(n);
      else o->streams = static_cast<unsigned>(n);
    } else if (a == "--engines" || a == "--sizes" || a == "--cells") {
      const char *v = value(a.c_str());
      if (!v) return false;
      for (const std::string &item : split_commas(v)) {
        if (a == "--engines") {
          const auto specs = engine_specs(false);
          if (item != kCpuParallelEngine &&
              std::none_of(specs.begin(), specs.end(),
                           [&item](const EngineSpec &e) { return e.name == item; })) {
            std::fprintf(stderr, "gpupacket-bench: --engines: no engine \"%s\" (see --help)\n",
                         item.c_str());
            return false;
          }
          o->engines.push_back(item);
        } else if (a == "--sizes") {
          char *end = nullptr;
          const unsigned long n = std::strtoul(item.c_str(), &end, 10);
          if (item.empty() || *end || item[0] == '-' || n < 1 || n > kMaxBenchBatch) {
            std::fprintf(stderr, "gpupacket-bench: --sizes: \"%s\" is not a batch size of 1-%u\n",
                         item.c_str(), kMaxBenchBatch);
            return false;
          }
          o->sizes.push_back(static_cast<uint32_t>(n));
        } else {
          const size_t slash = item.find('/');
          if (slash == std::string::npos || !find_profile(item.substr(0, slash)) ||
              !find_workload(item.substr(slash + 1))) {
            std::fprintf(stderr,
                         "gpupacket-bench: --cells: \"%s\" is not PROFILE/WORKLOAD of a known "
                         "profile and workload (e.g. pcap-1500B/+et2024)\n",
                         item.c_str());
            return false;
          }
          o->cells.push_back(item);
        }
      }
    } else if (a == "--no-records") {
      o->records = false;
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


uint32_t load_acquire(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void store_release(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

// ---- what the run learns, shared between sections ---------------------------------

struct Bandwidth {
  double h2d = kNaN, d2h = kNaN; // GB/s (1e9 bytes/s), median of single copies
};

struct Run {
  Options opt;
  Report report;
  Watchdog *watchdog = nullptr;
  uint64_t started_ns = now_ns();
  std::string device_name;
  const RuleSets *sets = nullptr;

  std::map<size_t, Bandwidth> bandwidth;  // by copy size
  std::map<size_t, double> h2d_sustained; // GB/s, back-to-back copies of that size
  LatencyStats empty_kernel, pingpong, stream_round_trip, graph_round_trip;
  // The payload ping-pong (a persistent job's PCIe traffic without its work).
  struct PayloadProbe {
    const char *name;
    uint32_t read_bytes, write_bytes;
    bool host_reads_records;
    AnswerStyle answer;
    LatencyStats stats;
  };
  std::vector<PayloadProbe> payload_probes;
  std::string pingpong_error;

  bool gst_ran = false;
  std::string gst_error;
  // persistent, 64 x 64-byte, in the element: the latency targets' points
  // (parse+rss: the GPU modes' issue; +acl1k: the benchmarks' issue).
  std::map<std::string, GstModeResult> element_key; // by workload
  // parse+rss, 64 x 64-byte, every element mode: the element's own cost
  // (element p99 - engine p99), with the push task and with low-latency.
  struct ElementOverhead {
    GstModeResult handoff, low_latency;
    double engine_p99_us = 0;
  };
  std::map<std::string, ElementOverhead> element_overhead; // by mode
  std::map<std::tuple<std::string, std::string, uint32_t>, double> pipeline_mpps;

  void phase(const std::string &name, double seconds) {
    std::fprintf(stderr, "[%6.1f s] %s\n", (now_ns() - started_ns) / 1e9, name.c_str());
    watchdog->arm(name, seconds);
  }
  void csv(const std::string &section, const std::string &item, const std::string &mode,
           const std::string &profile, const std::string &workload, uint32_t batch_packets,
           uint32_t packet_bytes, const std::string &metric, double value, const std::string &unit,
           const std::string &target = "", const std::string &status = "",
           const std::string &note = "") {
    CsvRow r;
    r.section = section;
    r.item = item;
    r.mode = mode;
    r.profile = profile;
    r.workload = workload;
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
    run.csv("A", "pinned-copy", "", "", "", 0, 0, "h2d_gbps@" + std::to_string(size), b.h2d, "GB/s");
    run.csv("A", "pinned-copy", "", "", "", 0, 0, "d2h_gbps@" + std::to_string(size), b.d2h, "GB/s");
    if (sustained != run.h2d_sustained.end())
      run.csv("A", "pinned-copy", "", "", "", 0, 0, "h2d_back_to_back_gbps@" + std::to_string(size),
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

// Runs a resident ping-pong kernel (started by `launch` on the device view of
// a mapped PingPongShared) for warm-up + measured rounds; `after_answer` runs
// on the host after each answer, inside the timed round.
template <typename Launch, typename AfterAnswer>
LatencyStats pingpong_rounds(Run &run, Launch &&launch, AfterAnswer &&after_answer) {
  gpp::PinnedMemory shm(sizeof(PingPongShared), cudaHostAllocMapped | cudaHostAllocPortable);
  auto *s = shm.get<PingPongShared>();
  std::memset(s, 0, sizeof *s);
  PingPongShared *device_view = nullptr;
  GPP_CUDA_TRY(cudaHostGetDevicePointer(reinterpret_cast<void **>(&device_view), s, 0));
  gpp::Stream stream;
  GPP_CUDA_TRY(launch(device_view, 10ull * 1000 * 1000 * 1000, stream.get()));
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
    after_answer(seq);
    const uint64_t t1 = now_ns();
    if (i > warm) samples.push_back(t1 - t0);
  }
  return summarize(samples);
}

// The persistent-kernel floor: one resident thread answers a mapped flag.
void measure_pingpong(Run &run) {
  run.phase("A: persistent ping-pong", 60);
  run.pingpong = pingpong_rounds(run, launch_pingpong, [](uint32_t) {});
}

// The floor under one persistent job of 64 64-byte packets, without the
// work: the answer also waits for a batch read from host memory and records
// written back to it, and optionally the host reads those records (as a
// consumer of the results would) before the next ping.
constexpr uint32_t kPayloadBatchBytes = 6208; // header + 64 descriptors + 64 frames, 16-byte rounded
constexpr uint32_t kPayloadRecordBytes = 64 * sizeof(GppResult);

LatencyStats measure_pingpong_payload(Run &run, uint32_t read_bytes, uint32_t write_bytes,
                                      bool host_reads_records, AnswerStyle answer) {
  gpp::PinnedMemory batch(kPayloadBatchBytes, cudaHostAllocMapped | cudaHostAllocPortable);
  gpp::PinnedMemory records(kPayloadRecordBytes, cudaHostAllocMapped | cudaHostAllocPortable);
  std::memset(batch.get(), 0x5a, kPayloadBatchBytes);
  std::memset(records.get(), 0, kPayloadRecordBytes);
  void *batch_view = nullptr, *records_view = nullptr;
  GPP_CUDA_TRY(cudaHostGetDevicePointer(&batch_view, batch.get(), 0));
  GPP_CUDA_TRY(cudaHostGetDevicePointer(&records_view, records.get(), 0));
  std::vector<uint8_t> copy(kPayloadRecordBytes);
  const auto *first = records.get<uint32_t>();
  return pingpong_rounds(
      run,
      [&](PingPongShared *shared, uint64_t timeout_ns, cudaStream_t stream) {
        return launch_pingpong_payload(shared, batch_view, read_bytes, records_view, write_bytes,
                                       answer, timeout_ns, stream);
      },
      [&](uint32_t seq) {
        if (!host_reads_records) return;
        std::memcpy(copy.data(), records.get(), write_bytes);
        if (write_bytes && first[0] != seq) // the kernel writes seq into every record word 0
          throw std::runtime_error("payload ping-pong: records of round " + std::to_string(seq) +
                                   " not in host memory when its answer was");
      });
}

// 2 KB in, empty kernel, 512 B out: once as stream work, once as a CUDA
// graph captured from the same work and replayed (DESIGN.md's probes).
void measure_round_trips(Run &run) {
  run.phase("A: stream and graph round trips", 60);
  gpp::PinnedMemory host(4096, cudaHostAllocPortable);
  gpp::DeviceMemory device(4096);
  gpp::Stream stream;
  auto enqueue = [&]() {
    GPP_CUDA_TRY(cudaMemcpyAsync(device.get(), host.get(), 2048, cudaMemcpyHostToDevice, stream.get()));
    GPP_CUDA_TRY(launch_empty_kernel(stream.get()));
    GPP_CUDA_TRY(cudaMemcpyAsync(host.get<uint8_t>() + 2048, device.get(), 512,
                                 cudaMemcpyDeviceToHost, stream.get()));
  };
  cudaGraph_t graph = nullptr;
  GPP_CUDA_TRY(cudaStreamBeginCapture(stream.get(), cudaStreamCaptureModeThreadLocal));
  try {
    enqueue();
  } catch (...) {
    cudaStreamEndCapture(stream.get(), &graph);
    if (graph) cudaGraphDestroy(graph);
    throw;
  }
  GPP_CUDA_TRY(cudaStreamEndCapture(stream.get(), &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t inst = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  GPP_CUDA_TRY(inst);
  struct ExecOwner {
    cudaGraphExec_t e;
    ~ExecOwner() { cudaGraphExecDestroy(e); }
  } owner{exec};
  const int iters = run.opt.quick ? 500 : 2000;
  for (bool use_graph : {false, true}) {
    std::vector<uint64_t> samples;
    for (int i = 0; i < 100 + iters; ++i) {
      const uint64_t t0 = now_ns();
      if (use_graph) GPP_CUDA_TRY(cudaGraphLaunch(exec, stream.get()));
      else enqueue();
      wait_stream_bounded(stream.get(), 10, use_graph ? "graph round trip" : "stream round trip");
      if (i >= 100) samples.push_back(now_ns() - t0);
    }
    (use_graph ? run.graph_round_trip : run.stream_round_trip) = summarize(samples);
  }
}

void measure_memory_kinds_table(Run &run) {
  std::vector<size_t> sizes;
  const size_t max = run.opt.quick ? (16u << 20) : (256u << 20);
  for (size_t s = 4u << 10; s <= max; s *= 4) sizes.push_back(s);
  const auto rows = measure_memory_kinds(
      run.opt.device, sizes, run.opt.quick ? 10 : 50, run.opt.quick ? 0.03 : 0.12,
      [](void *arg, const std::string &name) { static_cast<Run *>(arg)->phase(name, 120); }, &run);
  Table t;
  t.id = "A-memory-kinds";
  t.title = "A. Host memory kinds: H2D / D2H GB/s by transfer size (host wall clock, median)";
  t.header = {"size"};
  std::vector<std::string> kinds;
  for (const auto &r : rows)
    if (std::find(kinds.begin(), kinds.end(), r.kind) == kinds.end()) kinds.push_back(r.kind);
  for (const auto &k : kinds) t.header.push_back(k + " H2D / D2H");
  for (size_t size : sizes) {
    std::vector<std::string> row = {fmt_bytes(size)};
    for (const auto &k : kinds) {
      std::string cell = "-";
      for (const auto &r : rows) {
        if (r.kind != k) continue;
        if (!r.error.empty()) cell = short_error(r.error);
        else if (r.bytes == size) cell = fmt(r.h2d_gbps, 1) + " / " + fmt(r.d2h_gbps, 1);
      }
      row.push_back(cell);
    }
    t.rows.push_back(row);
  }
  for (const auto &r : rows) {
    if (!r.error.empty()) {
      run.report.add_error("A memory kinds, " + r.kind + ": " + r.error);
      continue;
    }
    run.csv("A", "memory-kinds", r.kind, "", "", 0, 0, "h2d_gbps@" + std::to_string(r.bytes),
            r.h2d_gbps, "GB/s");
    run.csv("A", "memory-kinds", r.kind, "", "", 0, 0, "d2h_gbps@" + std::to_string(r.bytes),
            r.d2h_gbps, "GB/s");
  }
  t.notes.push_back("pinned = cudaHostAlloc(cudaHostAllocDefault), pageable = aligned_alloc, "
                    "write-combined = cudaHostAllocWriteCombined: cudaMemcpyAsync to / from device "
                    "memory.  mapped = cudaHostAllocMapped: a copy kernel (16-byte loads and stores, "
                    "4 blocks of 256 threads per SM) reads the host buffer into device memory (H2D) "
                    "or writes it from device memory (D2H) through its device pointer.");
  t.notes.push_back("Each figure: the call until cudaStreamQuery reports completion (so small sizes "
                    "include launch and completion cost, as an application sees them), median of up "
                    "to " + std::to_string(run.opt.quick ? 10 : 50) + " after one warm-up.  The "
                    "event-timed pinned table above is the copy alone.");
  run.report.add_table(t);
}

// Runs one measurement of section A; a failure becomes a report error
// ("A what: message", returned too) and the other measurements go on.
template <typename Measure>
std::string measure_or_report(Run &run, const std::string &what, Measure &&measure) {
  try {
    measure();
    return "";
  } catch (const std::exception &e) {
    run.report.add_error("A " + what + ": " + e.what());
    return e.what();
  }
}

void section_a(Run &run, const std::vector<size_t> &batch_sizes) {
  measure_or_report(run, "bandwidth", [&] { measure_bandwidth(run, batch_sizes); });
  measure_or_report(run, "empty kernel", [&] { measure_empty_kernel(run); });
  measure_or_report(run, "round trips", [&] { measure_round_trips(run); });
  measure_or_report(run, "memory kinds", [&] { measure_memory_kinds_table(run); });
  run.pingpong_error = measure_or_report(run, "ping-pong", [&] { measure_pingpong(run); });
  using AS = AnswerStyle;
  run.payload_probes = {
      {"ping-pong, 256 threads, no payload", 0, 0, false, AS::FenceThenStore, {}},
      {"+ read a 64 x 64-byte batch (6 KB)", kPayloadBatchBytes, 0, false, AS::FenceThenStore, {}},
      {"+ write 64 records (8 KB)", 0, kPayloadRecordBytes, false, AS::FenceThenStore, {}},
      {"+ read 6 KB and write 8 KB (a 64-packet job, no work)", kPayloadBatchBytes,
       kPayloadRecordBytes, false, AS::FenceThenStore, {}},
      {"same, and the host reads the records after each answer", kPayloadBatchBytes,
       kPayloadRecordBytes, true, AS::FenceThenStore, {}},
      {"same, answer by st.release.sys", kPayloadBatchBytes, kPayloadRecordBytes, true,
       AS::StoreRelease, {}},
      {"same, answer by st.release.sys, then a fence", kPayloadBatchBytes,
       kPayloadRecordBytes, true, AS::StoreReleaseFence, {}},
  };
  run.phase("A: payload ping-pong", 60);
  for (auto &probe : run.payload_probes)
    measure_or_report(run, std::string("payload ping-pong (") + probe.name + ")", [&] {
      probe.stats = measure_pingpong_payload(run, probe.read_bytes, probe.write_bytes,
                                             probe.host_reads_records, probe.answer);
    });
  Table t;
  t.id = "A-latency";
  t.title = "A. Round-trip floors (host wall clock, microseconds)";
  t.header = {"probe", "n", "p50 us", "p99 us", "p99.9 us", "max us", "DESIGN p50/p99", "p50/DESIGN"};
  auto row = [&](const char *name, const LatencyStats &s, double ref50, double ref99) {
    const bool ref = !std::isnan(ref50);
    t.rows.push_back({name, std::to_string(s.n), fmt_us(s.p50), fmt_us(s.p99), fmt_us(s.p999),
                      fmt_us(s.max), ref ? fmt(ref50, 1) + " / " + fmt(ref99, 1) : "-",
                      s.n && ref ? fmt(s.p50 / 1000.0 / ref50, 2) + "x" : "-"});
    run.csv("A", name, "", "", "", 0, 0, "p50", s.p50 / 1000.0, "us");
    run.csv("A", name, "", "", "", 0, 0, "p99", s.p99 / 1000.0, "us");
    run.csv("A", name, "", "", "", 0, 0, "p99.9", s.p999 / 1000.0, "us");
  };
  row("empty kernel launch + sync", run.empty_kernel, 8.6, 15.8);
  row("stream round trip (2 KB in, kernel, 512 B out)", run.stream_round_trip, 13.3, 23.6);
  row("CUDA graph round trip (same, captured)", run.graph_round_trip, 10.3, 19.4);
  row("persistent ping-pong (mapped flags)", run.pingpong, 1.6, 1.7);
  for (const auto &probe : run.payload_probes)
    if (probe.stats.n) row(probe.name, probe.stats, kNaN, kNaN);
  t.notes.push_back("launch + sync: <<<1,1>>> empty kernel, then cudaStreamQuery polled until done "
                    "(a spin, bounded), 100 warm-up launches.");
  t.notes.push_back("ping-pong: bench/bench_kernels.cu, one thread of one block polls a flag in "
                    "cudaHostAllocMapped memory and writes it back to another (separate 128-byte "
                    "lines); the host writes the flag and spins on the answer; 500 warm-up rounds.");
  t.notes.push_back("payload ping-pong: one 256-thread block that, before each answer, reads a "
                    "batch from mapped memory (16-byte loads, 8 in flight per thread, as the "
                    "persistent kernel stages a batch), writes records to mapped memory in "
                    "16-byte stores and fences (__threadfence_system): the floor under one "
                    "64-packet persistent job, without the parse.  \"host reads\" adds the host "
                    "copying the records out after each answer, as a consumer would (it also "
                    "checks they are there).  The last rows publish the answer by a release store, "
                    "which orders the records before it without a separate fence, then with a "
                    "system fence after it (the persistent kernel uses a release fence there: it "
                    "pushes the answer out, as the full fence does, and keeps L1).");
  run.report.add_table(t);
}
// ---- section B: the grid, engine-only ----------------------------------------------------

// report.csv's packet_bytes of a profile: its frame size, 0 for a mix.
uint32_t csv_frame_bytes(const Profile &p) {
  return p.traffic == gpp::TrafficProfile::Small   ? 64
         : p.traffic == gpp::TrafficProfile::Large ? 1500
                                                   : 0;
}

void section_b(Run &run, Grid &grid) {
  auto phase = [&run](const std::string &name, double s) { run.phase(name, s); };
  std::vector<std::string> errors;
  grid.measure_kernel_time(phase, &errors);
  grid.run(phase, &errors);
  for (const auto &e : errors) run.report.add_error(e);
  const GridOptions &go = grid.options();
  const std::vector<std::string> engines = grid.engine_names();
  const std::string par = grid.parallel_name();

  {
    Table t;
    t.id = "B-traffic";
    t.title = "B. Traffic: share of packets matching a specific ACL rule (not the catch-all), with "
              "a DPI hit, and DPI occurrences per KiB of scanned payload (CPU references, largest "
              "batches)";
    t.header = {"profile", "workload", "mean wire bytes", "ACL match", "DPI hit", "DPI hits/KiB"};
    for (const Cell &c : go.cells) {
      const Profile &p = *c.profile;
      const Workload &w = *c.workload;
      if (!w.acl && !w.dpi) continue;
      const TrafficShare s = grid.share(p.name, w.name);
      auto pct = [](double v) { return std::isnan(v) ? std::string("-") : fmt(100 * v, 1) + "%"; };
      t.rows.push_back({p.name, w.name, fmt(s.mean_wire_bytes, 0), pct(s.acl_matched),
                        pct(s.dpi_hit), std::isnan(s.dpi_hits_per_kb) ? "-" : fmt(s.dpi_hits_per_kb, 1)});
      run.csv("B", "traffic", "", p.name, w.name, 0, 0, "acl_matched_share", s.acl_matched, "");
      run.csv("B", "traffic", "", p.name, w.name, 0, 0, "dpi_hit_share", s.dpi_hit, "");
      run.csv("B", "traffic", "", p.name, w.name, 0, 0, "dpi_hits_per_kb", s.dpi_hits_per_kb, "");
    }
    t.notes.push_back(std::string("Stress traffic (64B, imix, 1500B): ") + kTrafficDescription + ".");
    t.notes.push_back(std::string("Realistic traffic (realistic workloads): ") +
                      kRealisticTrafficDescription + ".");
    std::string sets;
    for (const auto &kv : run.sets->acl) sets += kv.first + " = " + kv.second.description + "; ";
    for (const auto &kv : run.sets->dpi)
      sets += kv.first + " = " + kv.second.description + ", built in " +
              fmt(kv.second.load_seconds, 2) + " s; ";
    t.notes.push_back("Workloads: parse+rss = parse, validate, Toeplitz RSS; +ACLSET = and that "
                      "ACL set; +dpi = and the scan set; full = +acl10k and +dpi; +et2024 = and "
                      "the et2024 set; acl1+et2024 / fw1+et2024 = acl1_10k / fw1_10k and et2024. "
                      "Sets: " + sets);
    run.report.add_table(t);
  }

  for (const Cell &c : go.cells) {
    const Profile &p = *c.profile;
    const Workload &w = *c.workload;
    {
      Table t;
      t.id = std::string("B-grid-") + p.name + "-" + w.name;
      t.title = std::string("B. Engine-only, ") + p.name + ", " + w.name +
                ": Mpps | latency p50/p99 us";
      t.header = {"packets"};
      for (const auto &e : engines) t.header.push_back(e);
      t.header.push_back(par + " Mpps");
      t.header.push_back("kernel us");
      for (uint32_t n : grid.sizes(c)) {
        std::vector<std::string> row = {std::to_string(n)};
        const uint32_t frame = csv_frame_bytes(p);
        for (const auto &e : engines) {
          const GridPoint *pt = grid.point(e, p.name, w.name, n);
          if (!pt || !pt->has_latency || !pt->latency.stats.n) {
            row.push_back("-");
            continue;
          }
          const LatencyStats &s = pt->latency.stats;
          const ThroughputResult &tp = pt->throughput;
          const bool bad = pt->latency.parity_failed || tp.parity_failed;
          row.push_back(fmt(tp.mpps(), 2) + " | " + fmt_us(s.p50) + "/" + fmt_us(s.p99) +
                        (bad ? " MISMATCH" : ""));
          auto c = [&](const std::string &metric, double v, const std::string &unit) {
            run.csv("B", "grid", e, p.name, w.name, n, frame, metric, v, unit);
          };
          c("p50", s.p50 / 1000, "us");
          c("p99", s.p99 / 1000, "us");
          c("p99.9", s.p999 / 1000, "us");
          c("latency_samples", static_cast<double>(s.n), "");
          // persistent: the GPU-side p50 by phase (latest block; Engine::last_device_phases)
          for (size_t k = 0; k < std::size(gpp::kDevicePhaseNames); ++k)
            if (pt->latency.phases[k].n)
              c(std::string("device_") + gpp::kDevicePhaseNames[k] + "_p50",
                pt->latency.phases[k].p50 / 1000, "us");
          c("mpps", tp.mpps(), "Mpps");
          c("gbps_wire", tp.gbps(), "Gbit/s");
          c("batch_gBps", tp.batch_gBps(), "GB/s");
          c("cpu_us_per_batch", tp.cpu_us_per_batch(), "us");
          c("parity_failed", static_cast<double>(pt->latency.parity_failed + tp.parity_failed),
            "batches");
          c("parity_checked", static_cast<double>(pt->latency.parity_checked + tp.parity_checked),
            "batches");
        }
        const GridPoint *pp = grid.point(par, p.name, w.name, n);
        row.push_back(pp ? fmt(pp->throughput.mpps(), 2) : "-");
        if (pp) {
          run.csv("B", "grid", par, p.name, w.name, n, frame, "mpps", pp->throughput.mpps(), "Mpps");
          run.csv("B", "grid", par, p.name, w.name, n, frame, "gbps_wire", pp->throughput.gbps(),
                  "Gbit/s");
        }
        const double kus = grid.kernel_us(p.name, w.name, n);
        row.push_back(fmt(kus, kus < 10 ? 2 : 1));
        if (!std::isnan(kus))
          run.csv("B", "grid", "kernel", p.name, w.name, n, frame, "gpu_kernel_us", kus, "us");
        t.rows.push_back(row);
      }
      run.report.add_table(t);
    }
  }
  {
    Table t;
    t.id = "B-grid-notes";
    t.title = "B. How the grid was measured";
    t.header = {"what", "how"};
    t.rows.push_back({"latency", "one batch at a time, submit() to wait_oldest() on the host clock, "
                      "WaitStrategy::Spin; up to " + std::to_string(go.latency_iters_small) +
                      " samples (<= 256 packets) or " + std::to_string(go.latency_iters_large) +
                      ", stopping after " + fmt(go.latency_seconds, 2) + " s once " +
                      std::to_string(go.min_samples) + " are in (report.csv: latency_samples)"});
    t.rows.push_back({"throughput", "every engine slot busy for " + fmt(go.tput_seconds, 2) +
                      " s after two rounds of warm-up; Mpps and Gbit/s of wire bytes"});
    t.rows.push_back({"CPU time", "process CPU time (all threads: the spinning waiter, engine "
                      "threads) over the throughput interval / batches (report.csv: cpu_us_per_batch)"});
    t.rows.push_back({"kernel us", "GPU time of the process kernel alone (gpp::launch_process_batch, "
                      "batch already in device memory), CUDA events, median: what the GPU spends "
                      "per batch besides copies and signalling"});
    t.rows.push_back({"parity", "every latency batch and the last batch of every slot after a "
                      "throughput run compared byte for byte with the CPU engine's results; "
                      "MISMATCH marks a point where any differed"});
    t.rows.push_back({par, "every host core running the core over batches of its own (no engine): "
                      "the host's ceiling; cpu-all is CpuEngine(0), one batch at a time (splits "
                      "batches of >= 1024 packets over threads, 512 packets each)"});
    t.rows.push_back({"engines", "num_streams " + std::to_string(go.streams) +
                      "; persistent: one block per SM; persistent-1blk: persistent_blocks=1"});
    run.report.add_table(t);
  }
  {
    // The persistent kernel times each job itself (%globaltimer, from block 0
    // seeing the job to its answer): what is left of the host's round trip is
    // the doorbell and the answer crossing PCIe, and the host.
    Table t;
    t.id = "B-persistent-split";
    t.title = "B. persistent: a batch's latency on the host clock, the GPU's own part of it, and "
              "where the GPU's part went (us)";
    t.header = {"profile", "workload", "packets", "host p50 / p99", "GPU-side p50 / p99",
                "host - GPU p50",
                "GPU phases p50: " + join({std::begin(gpp::kDevicePhaseNames),
                                           std::end(gpp::kDevicePhaseNames)}, " / ")};
    for (const Cell &c : go.cells) {
      const Profile &p = *c.profile;
      const Workload &w = *c.workload;
      for (uint32_t n : grid.sizes(c)) {
        const GridPoint *pt = grid.point("persistent", p.name, w.name, n);
        if (!pt || !pt->latency.stats.n || !pt->latency.device.n) continue;
        const LatencyStats &h = pt->latency.stats, &d = pt->latency.device;
        std::vector<std::string> phases;
        for (const LatencyStats &ph : pt->latency.phases) phases.push_back(fmt_us(ph.p50));
        t.rows.push_back({p.name, w.name, std::to_string(n), fmt_us(h.p50) + " / " + fmt_us(h.p99),
                          fmt_us(d.p50) + " / " + fmt_us(d.p99), fmt_us(h.p50 - d.p50),
                          join(phases, " / ")});
        const uint32_t frame = csv_frame_bytes(p);
        run.csv("B", "persistent-split", "persistent", p.name, w.name, n, frame, "device_p50",
                d.p50 / 1000, "us");
        run.csv("B", "persistent-split", "persistent", p.name, w.name, n, frame, "device_p99",
                d.p99 / 1000, "us");
      }
    }
    t.notes.push_back("GPU-side: the kernel's own %globaltimer from block 0 seeing the job to "
                      "writing its answer (staging the batch over PCIe, the core, the records "
                      "and the system-scope fence); host - GPU: the doorbell reaching the "
                      "polling warp, the answer reaching the host, and the host's own work.");
    t.notes.push_back("GPU phases (Engine::last_device_phases), each the latest block's end of it "
                      "after block 0 saw the job: woken = the block has the job (block 0 first "
                      "stages a fanned-out job of at most 128 KB into device memory), staged = "
                      "its packets are in shared memory, classified = parse, ACL and DPI done, "
                      "written = its record stores issued; p50 of each.");
    if (!t.rows.empty()) run.report.add_table(t);
  }
  {
    // Where does each GPU mode start beating the CPU on latency?
    Table t;
    t.id = "B-crossover";
    t.title = "B. CPU/GPU latency crossover: smallest batch from which the GPU mode's p50 stays "
              "below the better of cpu-1 and cpu-all";
    t.header = {"profile", "workload"};
    for (const auto &e : engines)
      if (e.rfind("cpu", 0) != 0) t.header.push_back(e);
    for (const Cell &c : go.cells) {
      const Profile &p = *c.profile;
      const Workload &w = *c.workload;
      std::vector<std::string> row = {p.name, w.name};
      for (const auto &e : engines) {
        if (e.rfind("cpu", 0) == 0) continue;
        uint32_t from = 0;
        bool any = false;
        for (uint32_t n : grid.sizes(c)) {
          double cpu = kNaN;
          for (const char *cpu_engine : {"cpu-1", "cpu-all"}) {
            const GridPoint *pt = grid.point(cpu_engine, p.name, w.name, n);
            if (pt && pt->latency.stats.n)
              cpu = std::isnan(cpu) ? pt->latency.stats.p50 : std::min(cpu, pt->latency.stats.p50);
          }
          const GridPoint *g = grid.point(e, p.name, w.name, n);
          if (std::isnan(cpu) || !g || !g->latency.stats.n) continue;
          any = true;
          if (g->latency.stats.p50 < cpu) {
            if (!from) from = n;
          } else {
            from = 0;
          }
        }
        const std::string verdict = !any ? "-" : from ? std::to_string(from)
                                                      : "never (<= " + std::to_string(grid.sizes(c).back()) + ")";
        row.push_back(verdict);
        if (any)
          run.csv("B", "crossover", e, p.name, w.name, from, 0, "gpu_faster_from_packets", from,
                  "packets", "", "", verdict);
      }
      t.rows.push_back(row);
    }
    t.notes.push_back("Below the crossover the CPU mode answers a batch sooner; 0 in report.csv = never.");
    run.report.add_table(t);
  }
}

// ---- section C: the element ----------------------------------------------------------------

const std::vector<std::string> kElementModes = {"persistent", "streams", "graph", "zerocopy", "cpu"};

PropertyList proc_properties(const Workload &w, const RuleSets &sets) {
  PropertyList props;
  if (const AclSet *acl = sets.find_acl(w.acl)) props.push_back({"acl-rules", acl->path});
  if (const DpiSet *dpi = sets.find_dpi(w.dpi)) {
    props.push_back({"dpi-select", gpp::dpi_select_name(dpi->select)});
    props.push_back({"dpi-patterns", dpi->path});
  }
  return props;
}

// The workloads whose persistent 64-packet element latency has a target.
constexpr const char *kLatencyTargetWorkloads[] = {"parse+rss", "+acl1k"};
bool is_latency_target(const std::string &workload) {
  for (const char *w : kLatencyTargetWorkloads)
    if (workload == w) return true;
  return false;
}

// The engine-only figure of the element's mode (cpu: the element's default cpu-threads = 0).
std::string engine_of_element_mode(const std::string &mode) { return mode == "cpu" ? "cpu-all" : mode; }

void section_c(Run &run, Grid &grid) {
  const std::vector<uint32_t> sizes = run.opt.quick ? std::vector<uint32_t>{64}
                                                    : std::vector<uint32_t>{64, 4096};
  std::vector<std::string> modes = kElementModes;
  if (run.opt.cpu_only) modes = {"cpu"};
  const char *profile = "64B";
  // C1: one batch at a time through a GstHarness.
  Table t;
  t.id = "C-element";
  t.title = "C. gpupacketproc in a GstHarness, 64-byte profile, one batch at a time: element stats "
            "p50/p99 us (engine-only p99 from B)";
  t.header = {"workload", "packets"};
  for (const auto &m : modes) t.header.push_back(m);
  for (const Workload &w : workloads()) {
    if (w.realistic) continue; // the element section keeps to the stress workloads (run time)
    // The element's own cost is measured on parse+rss, 64 packets, both ways.
    std::vector<std::pair<uint32_t, bool>> rows_of; // packets, low-latency
    for (uint32_t n : sizes) {
      rows_of.push_back({n, false});
      if (n == 64 && w.name == std::string("parse+rss")) rows_of.push_back({n, true});
    }
    for (const auto &[n, low_latency] : rows_of) {
      const bool overhead_point = n == 64 && w.name == std::string("parse+rss");
      const Ring *ring = grid.ring(profile, w.name, n);
      if (!ring) continue;
      std::vector<std::string> row = {std::string(w.name) + (low_latency ? ", low-latency" : ""),
                                      std::to_string(n)};
      for (const auto &mode : modes) {
        // The latency targets' points (persistent, 64 packets, the push task),
        // and the points of the element's own cost: measured at length.
        const bool target_point =
            mode == "persistent" && n == 64 && is_latency_target(w.name) && !low_latency;
        const bool key_point = target_point || overhead_point;
        GstBenchConfig cfg;
        cfg.device_id = run.opt.device;
        cfg.properties = proc_properties(w, *run.sets);
        if (low_latency) cfg.properties.push_back({"low-latency", "true"});
        cfg.warmup = key_point ? (run.opt.quick ? 200 : 500) : (run.opt.quick ? 10 : 50);
        cfg.measured = key_point ? 4096 : (run.opt.quick ? 100 : 1000);
        cfg.max_seconds = key_point ? 10 : (run.opt.quick ? 0.03 : 0.12);
        std::vector<GstModeResult> res;
        std::string error;
        const std::string where = mode + " " + w.name + " " + std::to_string(n);
        const bool ok = run_gst_latency(
            cfg, grid.batch_bytes(profile, n), ring->reference, {mode},
            [&](const std::string &) { run.phase("C: element " + where, 60); }, &res, &error);
        if (!ok || res.empty()) {
          run.report.add_error("C: " + error);
          run.gst_error = error;
          row.push_back("-");
          continue;
        }
        const GstModeResult &g = res[0];
        run.gst_ran = true;
        if (!g.error.empty()) {
          run.report.add_error("C " + where + ": " + g.error);
          row.push_back(short_error(g.error));
          continue;
        }
        if (!g.parity_ok) run.report.add_error("C " + where + ": results differ from the CPU reference");
        const GridPoint *pt = grid.point(engine_of_element_mode(mode), profile, w.name, n);
        const double eng_p99 = pt && pt->latency.stats.n ? pt->latency.stats.p99 : kNaN;
        row.push_back(fmt_us(g.stats_p50) + "/" + fmt_us(g.stats_p99) + " (" + fmt_us(eng_p99) + ")" +
                      (g.parity_ok ? "" : " MISMATCH"));
        auto c = [&](const std::string &metric, double v, const std::string &unit) {
          run.csv("C", low_latency ? "element-low-latency" : "element", mode, profile, w.name, n,
                  64, metric, v, unit);
        };
        c("stats_p50", g.stats_p50 / 1000.0, "us");
        c("stats_p99", g.stats_p99 / 1000.0, "us");
        c("stats_p99.9", g.stats_p999 / 1000.0, "us");
        c("push_pull_p50", g.external.p50 / 1000, "us");
        c("push_pull_p99", g.external.p99 / 1000, "us");
        c("batches", static_cast<double>(g.external.n), "");
        c("copied_batches", static_cast<double>(g.copied_batches), "");
        if (target_point) run.element_key[w.name] = g;
        if (overhead_point) {
          auto &o = run.element_overhead[mode];
          (low_latency ? o.low_latency : o.handoff) = g;
          o.engine_p99_us = eng_p99 / 1000;
        }
      }
      t.rows.push_back(row);
    }
  }
  t.notes.push_back("Each cell: a fresh GstHarness around gpupacketproc (mode, acl-rules / "
                    "dpi-patterns of the workload), batches written into memory from the "
                    "allocator the element offers in the ALLOCATION query, pushed one at a time and "
                    "pulled back (spinning on a counter that a probe on the element's src pad "
                    "bumps, then gst_harness_try_pull: polling the harness queue alone would "
                    "contend for the lock the element's push takes), results compared with the CPU "
                    "reference.  stats = the element's MODE-latency-pNN-ns (chain entry to result "
                    "push) over its last 4096 batches, warm-up included when fewer were pushed.");
  t.notes.push_back("The targets' points (parse+rss / 64 in every mode, both rows; persistent / "
                    "+acl1k / 64): 500 warm-up + 4096 measured batches, the stats window exactly "
                    "the measured ones; other cells 50 + up to 1000 batches or 0.12 s.  cpu = "
                    "cpu-threads 0 (all cores), compared with cpu-all.");
  t.notes.push_back("low-latency rows: the element's low-latency=true (the streaming thread waits "
                    "for each batch and pushes its results itself, no hand-off to the src pad "
                    "task; for cpu, the batch also runs on the streaming thread, not the engine's own).");
  run.report.add_table(t);

  // C2: free-running pipelines.
  Table p;
  p.id = "C-pipeline";
  p.title = "C. packettestsrc ! gpupacketproc ! fakesink, profile 64: Mpps (engine-only Mpps) | "
            "element p99 under load us";
  p.header = {"workload", "packets"};
  for (const auto &m : modes) p.header.push_back(m);
  for (const Workload &w : workloads()) {
    if (w.realistic || !grid.has(profile, w.name)) continue;
    for (uint32_t n : sizes) {
      std::vector<std::string> row = {w.name, std::to_string(n)};
      for (const auto &mode : modes) {
        const std::string where = mode + " " + w.name + " " + std::to_string(n);
        run.phase("C: pipeline " + where, 60);
        GstPipelineConfig cfg;
        cfg.device_id = run.opt.device;
        cfg.mode = mode;
        cfg.source = {{"profile", "64"},
                      {"batch-size", std::to_string(n)},
                      {"ring-batches", "8"},
                      {"acl-rules", run.sets->find_acl("acl10k")->path},
                      {"acl-rate", "0.5"},
                      {"dpi-patterns", run.sets->find_dpi("scan")->path},
                      {"dpi-rate", "0.5"}};
        cfg.proc = proc_properties(w, *run.sets);
        cfg.measure_s = run.opt.quick ? 0.05 : 0.2;
        cfg.warmup_s = run.opt.quick ? 0.02 : 0.05;
        GstPipelineResult r;
        if (!run_gst_pipeline(cfg, &r)) {
          run.report.add_error("C pipeline " + where + ": " + r.error);
          row.push_back(short_error(r.error));
          continue;
        }
        const GridPoint *pt = grid.point(engine_of_element_mode(mode), "64B", w.name, n);
        row.push_back(fmt(r.mpps(), 2) + " (" + (pt ? fmt(pt->throughput.mpps(), 2) : "-") + ") | " +
                      fmt_us(r.stats_p99));
        run.csv("C", "pipeline", mode, "64B", w.name, n, 64, "mpps", r.mpps(), "Mpps");
        run.csv("C", "pipeline", mode, "64B", w.name, n, 64, "gbps_wire",
                r.seconds > 0 ? r.packets * 64 * 8 / r.seconds / 1e9 : kNaN, "Gbit/s");
        run.csv("C", "pipeline", mode, "64B", w.name, n, 64, "stats_p50_loaded", r.stats_p50 / 1000.0, "us");
        run.csv("C", "pipeline", mode, "64B", w.name, n, 64, "stats_p99_loaded", r.stats_p99 / 1000.0, "us");
        run.csv("C", "pipeline", mode, "64B", w.name, n, 64, "stats_p99.9_loaded", r.stats_p999 / 1000.0, "us");
        run.pipeline_mpps[{mode, w.name, n}] = r.mpps();
      }
      p.rows.push_back(row);
    }
  }
  p.notes.push_back("packettestsrc profile=64, ring-batches=8, headers from the 10k set at acl-rate "
                    "0.5, dpi-rate 0.5 (its own generator: close to, not the same packets as, the "
                    "grid's traffic); fakesink sync=false.  Mpps from the element's stats (packets) "
                    "over " + fmt(run.opt.quick ? 0.05 : 0.2, 2) + " s after the first batch and " +
                    fmt(run.opt.quick ? 0.02 : 0.05, 2) + " s of warm-up; p99 = the element's "
                    "latency over its last 4096 batches with batches queued behind each other.");
  p.notes.push_back("Limited to the 64-byte profile and " + std::string(run.opt.quick ? "64" : "64 and 4096") +
                    "-packet batches (all modes, all workloads) to keep the run short; the "
                    "engine-only grid (B) has every point.");
  run.report.add_table(p);
}

// ---- targets --------------------------------------------------------------------------------

struct Target {
  std::string name, measured, target, ratio, status, gap;
};

// gpupacket-cpu-peers --csv output: profile,workload,item,threads,packets,mpps,differences.
// Per (profile, workload, item): the 1-core row and the row with the most
// threads (all cores).
struct PeerFigure {
  unsigned threads = 0;
  double mpps = kNaN, one_core = kNaN;
  size_t packets = 0;
  unsigned long differences = 0;
};
using PeerKey = std::tuple<std::string, std::string, std::string>;
struct PeerRows {
  std::vector<PeerKey> order; // as the file lists them
  std::map<PeerKey, PeerFigure> figures;
};
PeerRows read_peers_csv(const std::string &path, std::string *error) {
  PeerRows out;
  std::ifstream f(path);
  if (!f) {
    *error = path + ": cannot open";
    return out;
  }
  std::string line;
  std::getline(f, line); // header
  while (std::getline(f, line)) {
    std::vector<std::string> cells;
    std::string cell;
    std::istringstream is(line);
    while (std::getline(is, cell, ',')) cells.push_back(cell);
    if (cells.size() < 7) continue;
    const PeerKey key{cells[0], cells[1], cells[2]};
    const unsigned threads = static_cast<unsigned>(std::atoi(cells[3].c_str()));
    const double mpps = std::atof(cells[5].c_str());
    if (!out.figures.count(key)) out.order.push_back(key);
    PeerFigure &have = out.figures[key];
    if (threads == 1) have.one_core = mpps;
    if (threads >= have.threads) {
      have.threads = threads;
      have.mpps = mpps;
      have.packets = std::strtoul(cells[4].c_str(), nullptr, 10);
      have.differences = std::strtoul(cells[6].c_str(), nullptr, 10);
    }
  }
  if (out.figures.empty()) *error = path + ": no rows";
  return out;
}

// The peers' figures beside the GPU's: what --peers-csv holds, per item.
void peers_table(Run &run, const PeerRows &peers) {
  Table t;
  t.id = "peers";
  t.title = "CPU peers (gpupacket-cpu-peers --csv): Mpps on one core and on all, each worker pinned "
            "to its own core";
  t.header = {"profile", "workload", "item", "packets", "1-core Mpps", "all-core Mpps", "cores",
              "scaling", "differences"};
  for (const PeerKey &k : peers.order) {
    const PeerFigure &f = peers.figures.at(k);
    const bool all = f.threads > 1;
    t.rows.push_back({std::get<0>(k), std::get<1>(k), std::get<2>(k), std::to_string(f.packets),
                      fmt(f.one_core, 3), all ? fmt(f.mpps, 3) : "-", std::to_string(f.threads),
                      all ? fmt(f.mpps / f.one_core, 2) + "x" : "-", std::to_string(f.differences)});
  }
  const auto test_acl = peers.figures.find(PeerKey{"trace", "acl1k", "dpdk-test-acl"});
  const auto harness = peers.figures.find(PeerKey{"trace", "acl1k", "rte_acl"});
  if (test_acl != peers.figures.end() && harness != peers.figures.end()) {
    const double r = harness->second.one_core / test_acl->second.one_core;
    t.notes.push_back("rte_acl cross-check on the ClassBench acl1 1k rules and trace, one core each: the "
                      "harness " + fmt(harness->second.one_core, 2) + " Mpps, DPDK's own dpdk-test-acl " +
                      fmt(test_acl->second.one_core, 2) + " Mpps = " + fmt(r, 3) + " (" +
                      (std::fabs(r - 1) <= 0.1 ? "within" : "OUTSIDE") + " 10%); the rule of every trace "
                      "line compared: " + std::to_string(test_acl->second.differences) + " differences.");
    run.csv("peers", "test-acl", "", "trace", "acl1k", 0, 0, "harness_over_test_acl", r, "x");
  }
  t.notes.push_back("1-core = the median of one worker alone on three CPUs; all-core = the sum of the "
                    "per-worker rates with every worker busy; differences = packets whose answers differ "
                    "from gpupacket's (any fails the peers' run).  pipeline = gpupacket's parse + RSS, "
                    "rte_acl, Hyperscan per packet; rte_acl+hyperscan = 1 / (1/acl + 1/hs).");
  run.report.add_table(t);
}

std::string ratio_gap(double measured, double target, const std::string &unit) {
  if (measured >= target) return "headroom " + fmt(measured - target, 1) + " " + unit;
  return fmt(target - measured, 1) + " " + unit + " short (" + fmt(target / measured, 2) + "x needed)";
}

// What the PCIe traffic of a 64-packet job costs with no work at all (the
// payload ping-pong, host reading the records, with the cheapest answer of
// the rows), against the ping-pong's p99: the floor under the persistent
// latency target.
std::string job_floor(const Run &run) {
  for (const auto &probe : run.payload_probes)
    if (probe.read_bytes == kPayloadBatchBytes && probe.write_bytes == kPayloadRecordBytes &&
        probe.host_reads_records && probe.answer == AnswerStyle::FenceThenStore && probe.stats.n)
      return "; a 64-packet job's PCIe traffic alone, no parse (payload ping-pong): p50 " +
             fmt_us(probe.stats.p50) + " / p99 " + fmt_us(probe.stats.p99) + " us = " +
             fmt(probe.stats.p50 / run.pingpong.p99, 2) + "x / " +
             fmt(probe.stats.p99 / run.pingpong.p99, 2) + "x the ping-pong p99";
  return "";
}

void targets(Run &run, const Grid *grid) {
  std::vector<Target> ts;
  auto add = [&](Target t, const std::string &id, const std::string &mode,
                 const std::string &profile, const std::string &workload, uint32_t batch,
                 double value, const std::string &unit, const std::string &target) {
    run.csv("targets", id, mode, profile, workload, batch, 0, "value", value, unit, target, t.status,
            t.gap);
    ts.push_back(t);
  };
  auto not_measured = [&](const std::string &name, const std::string &target, const std::string &why) {
    ts.push_back({name, "", target, "", "NOT MEASURED", why});
  };
  // A mode's rate at 4096 packets as a share of pinned H2D at the batch's size
  // (`info`: shown, not a target).
  auto share_of_h2d = [&](const char *mode, const char *profile, const char *workload, double want,
                          bool info, const char *id) {
    const std::string name = std::string(mode) + ", 4096 x " + profile + ", " + workload + ", >= " +
                             fmt(want, 0) + "% of pinned H2D" + (info ? " (info)" : "");
    const std::string target = ">= " + fmt(want, 0) + "%";
    const GridPoint *pt = grid ? grid->point(mode, profile, workload, 4096) : nullptr;
    const Ring *ring = grid ? grid->ring(profile, workload, 4096) : nullptr;
    const double h2d = ring && run.bandwidth.count(ring->batches[0].bytes)
                           ? run.bandwidth[ring->batches[0].bytes].h2d
                           : kNaN;
    if (!pt || !pt->throughput.batches || std::isnan(h2d))
      return not_measured(name, target, run.opt.cpu_only ? "--cpu-only" : "not measured");
    const double pct = 100 * pt->throughput.batch_gBps() / h2d;
    Target t{name, fmt(pt->throughput.batch_gBps(), 1) + " GB/s of " + fmt(h2d, 1) + " GB/s = " +
                       fmt(pct, 1) + "%",
             target, fmt(pct / want, 2) + "x", pct >= want ? "PASS" : info ? "info" : "MISS",
             ratio_gap(pct, want, "points")};
    add(t, id, mode, profile, workload, 4096, pct, "%", ">=" + fmt(want, 0));
  };
  // 1-3 are the stress grid's targets: a --grid realistic run leaves them out.
  const bool stress = !grid || grid->has("64B", "+acl1k");
  if (stress) {
    // 1. persistent p99 per 64-packet batch of 64-byte packets, in the element:
    // parse+rss within 3x of the raw ping-pong (GPU modes); +acl1k within 10 us
    // and 3x (benchmarks).
    for (const char *workload : kLatencyTargetWorkloads) {
      const bool acl = std::string(workload) == "+acl1k";
      const std::string name1 = std::string("persistent p99 in the element, 64 x 64-byte, ") +
                                workload + ", <= 10 us";
      const std::string name2 = std::string("persistent p99 in the element, 64 x 64-byte, ") +
                                workload + ", <= 3x raw persistent ping-pong p99";
      const auto key = run.element_key.find(workload);
      if (key == run.element_key.end() || !key->second.stats_batches || !key->second.error.empty()) {
        const std::string failure = key != run.element_key.end() && !key->second.error.empty()
                                        ? key->second.error
                                        : run.gst_error;
        const std::string why = run.opt.cpu_only ? "--cpu-only"
                                : !run.opt.gst   ? "run with --gst"
                                                 : "element run failed: " + failure;
        if (acl) not_measured(name1, "<= 10 us", why);
        not_measured(name2, "<= 3.00x", why);
        continue;
      }
      const GstModeResult &g = key->second;
      const double us = g.stats_p99 / 1000.0;
      std::string engine;
      if (grid)
        if (const GridPoint *pt = grid->point("persistent", "64B", workload, 64)) {
          engine = "; engine-only p99 " + fmt_us(pt->latency.stats.p99) + " us";
          if (pt->latency.device.n) engine += ", GPU-side p99 " + fmt_us(pt->latency.device.p99) + " us";
        }
      if (acl) {
        Target t{name1, fmt_us(g.stats_p99) + " us", "<= 10 us", fmt(us / 10, 2) + "x",
                 us <= 10 ? "PASS" : "MISS", ""};
        t.gap = (us <= 10 ? "headroom " + fmt(10 - us, 2) + " us" : fmt(us - 10, 2) + " us over") +
                engine;
        add(t, "element-persistent-p99", "persistent", "64B", workload, 64, us, "us", "<=10");
      }
      if (!run.pingpong.n) {
        not_measured(name2, "<= 3.00x", "raw ping-pong failed: " + run.pingpong_error);
        continue;
      }
      const double ratio = g.stats_p99 / run.pingpong.p99;
      Target t2{name2, fmt_us(g.stats_p99) + " us vs " + fmt_us(run.pingpong.p99) + " us",
                "<= 3.00x", fmt(ratio, 2) + "x", ratio <= 3 ? "PASS" : "MISS", ""};
      const double budget = 3 * run.pingpong.p99;
      t2.gap = (ratio <= 3 ? "headroom " + fmt_us(budget - g.stats_p99) + " us"
                           : fmt_us(g.stats_p99 - budget) + " us over (" + fmt(ratio / 3, 2) +
                                 "x the budget of " + fmt_us(budget) + " us)") +
               (acl ? "" : engine + job_floor(run));
      add(t2, acl ? "element-persistent-p99-vs-pingpong" : "element-persistent-parse-p99-vs-pingpong",
          "persistent", "64B", workload, 64, ratio, "x", "<=3");
    }
    // 1b. The element's own cost (the element's issue): persistent, 64 x
    // 64-byte, parse+rss in <= 10 us p99, and element p99 - engine p99 <=
    // 1.5 us in every GPU mode; each with the push task and with low-latency.
    for (const char *mode : {"persistent", "streams", "zerocopy", "graph"}) {
      const auto found = run.element_overhead.find(mode);
      for (const bool low_latency : {false, true}) {
        const std::string how = low_latency ? " (low-latency)" : " (push task)";
        const std::string name = std::string(mode) +
                                 ": element p99 - engine p99, 64 x 64-byte, parse+rss" + how +
                                 ", <= 1.5 us";
        const std::string name10 =
            std::string("persistent p99 in the element, 64 x 64-byte, parse+rss") + how +
            ", <= 10 us";
        const GstModeResult *g = nullptr;
        if (found != run.element_overhead.end())
          g = low_latency ? &found->second.low_latency : &found->second.handoff;
        if (!g || !g->stats_batches || !g->error.empty() || !(found->second.engine_p99_us > 0)) {
          const std::string why = run.opt.cpu_only ? "--cpu-only"
                                  : !run.opt.gst   ? "run with --gst"
                                  : g && !g->error.empty() ? "element run failed: " + g->error
                                                           : "no engine-only p99 for " +
                                                                 std::string(mode);
          if (std::string(mode) == "persistent") not_measured(name10, "<= 10 us", why);
          not_measured(name, "<= 1.5 us", why);
          continue;
        }
        const double us = g->stats_p99 / 1000.0;
        const double over = us - found->second.engine_p99_us;
        const std::string id_how = low_latency ? "-low-latency" : "-push-task";
        if (std::string(mode) == "persistent") {
          Target t{name10, fmt_us(g->stats_p99) + " us", "<= 10 us", fmt(us / 10, 2) + "x",
                   us <= 10 ? "PASS" : "MISS",
                   (us <= 10 ? "headroom " + fmt(10 - us, 2) + " us" : fmt(us - 10, 2) + " us over") +
                       "; engine-only p99 " + fmt(found->second.engine_p99_us, 2) + " us"};
          add(t, "element-persistent-parse-p99" + id_how, mode, "64B", "parse+rss", 64, us, "us",
              "<=10");
        }
        Target t{name,
                 fmt(over, 2) + " us (" + fmt_us(g->stats_p99) + " - " +
                     fmt(found->second.engine_p99_us, 2) + ")",
                 "<= 1.5 us", fmt(over / 1.5, 2) + "x", over <= 1.5 ? "PASS" : "MISS",
                 (over <= 1.5 ? "headroom " + fmt(1.5 - over, 2) + " us"
                              : fmt(over - 1.5, 2) + " us over") +
                     "; element p50 " + fmt_us(g->stats_p50) + " us"};
        add(t, "element-overhead" + id_how, mode, "64B", "parse+rss", 64, over, "us", "<=1.5");
      }
    }
    // 2. streams / graph, 4096 x 64-byte, +acl1k: >= 150 Mpps.
    for (const char *mode : {"streams", "graph"}) {
      const std::string name = std::string(mode) + ", 4096 x 64-byte, +acl1k, >= 150 Mpps";
      const GridPoint *pt = grid ? grid->point(mode, "64B", "+acl1k", 4096) : nullptr;
      if (!pt || !pt->throughput.batches) {
        not_measured(name, ">= 150 Mpps",
                     run.opt.cpu_only ? "--cpu-only" : grid ? grid->engine_errors.count(mode) ? grid->engine_errors.at(mode) : "no 4096-packet point" : "no grid");
        continue;
      }
      const double m = pt->throughput.mpps();
      Target t{name, fmt(m, 1) + " Mpps", ">= 150 Mpps", fmt(m / 150, 2) + "x",
               m >= 150 ? "PASS" : "MISS", ratio_gap(m, 150, "Mpps")};
      t.gap += "; kernel " + fmt(grid->kernel_us("64B", "+acl1k", 4096), 1) + " us/batch = " +
               fmt(4096 / grid->kernel_us("64B", "+acl1k", 4096), 0) + " Mpps kernel-bound";
      add(t, "tput-64B-4096-acl1k", mode, "64B", "+acl1k", 4096, m, "Mpps", ">=150");
    }
    // 3. 1500-byte packets, 4096-packet batches: >= 80% of pinned H2D at the batch's size.
    for (const char *mode : {"streams", "graph", "zerocopy", "persistent"}) {
      const bool copy_mode = std::strcmp(mode, "streams") == 0 || std::strcmp(mode, "graph") == 0;
      share_of_h2d(mode, "1500B", "+acl1k", 80, !copy_mode, "tput-1500B-4096-pct-h2d");
    }
  }
  // 5-7: the realistic classification targets (ET Open 2024 fast patterns,
  // real ClassBench 10k sets), engine only.
  const bool realistic_grid = grid && grid->has("pcap-1500B", "+et2024");
  if (realistic_grid) {
    // 5. persistent, 1500-byte packets with DPI: 1 packet <= 20 us p99, 64 <= 40 us.
    for (const char *profile : {"pcap-1500B", "http-1500B", "dense-1500B"})
      for (const auto &[n, want] : {std::pair<uint32_t, double>{1, 20}, {64, 40}}) {
        const std::string name = std::string("persistent p99 in the engine, ") + std::to_string(n) +
                                 " x " + profile + ", +et2024, <= " + fmt(want, 0) + " us";
        const GridPoint *pt = grid->point("persistent", profile, "+et2024", n);
        if (!pt || !pt->has_latency || !pt->latency.stats.n) {
          not_measured(name, "<= " + fmt(want, 0) + " us", run.opt.cpu_only ? "--cpu-only" : "no point");
          continue;
        }
        const double us = pt->latency.stats.p99 / 1000.0;
        Target t{name, fmt_us(pt->latency.stats.p99) + " us", "<= " + fmt(want, 0) + " us",
                 fmt(us / want, 2) + "x", us <= want ? "PASS" : "MISS",
                 us <= want ? "headroom " + fmt(want - us, 1) + " us" : fmt(us - want, 1) + " us over"};
        if (pt->latency.device.n) t.gap += "; GPU-side p99 " + fmt_us(pt->latency.device.p99) + " us";
        add(t, "dpi-latency", "persistent", profile, "+et2024", n, us, "us", "<=" + fmt(want, 0));
      }
    // 6. streams / graph, 4096 x 1500-byte with DPI: >= 90% of pinned H2D at the batch's size.
    for (const char *mode : {"streams", "graph"})
      share_of_h2d(mode, "pcap-1500B", "+et2024", 90, false, "dpi-tput-pct-h2d");
    // 7. 64-byte parse+RSS+ACL with each real 10k set at 4096: >= 90% of parse+RSS, same mode.
    for (const char *workload : {"+acl1_10k", "+fw1_10k", "+ipc1_10k"}) {
      const std::string name = std::string("64-byte ") + workload +
                               " at 4096, best GPU mode: >= 90% of its parse+rss rate";
      double best_pct = -1;
      std::string at, figures;
      for (const auto &e : grid->engine_names()) {
        if (e.rfind("cpu", 0) == 0) continue;
        const GridPoint *acl = grid->point(e, "64B", workload, 4096);
        const GridPoint *base = grid->point(e, "64B", "parse+rss", 4096);
        if (!acl || !base || !acl->throughput.batches || !base->throughput.batches) continue;
        const double pct = 100 * acl->throughput.mpps() / base->throughput.mpps();
        if (pct > best_pct) {
          best_pct = pct;
          at = e;
          figures = fmt(acl->throughput.mpps(), 1) + " of " + fmt(base->throughput.mpps(), 1) + " Mpps";
        }
      }
      if (best_pct < 0) {
        not_measured(name, ">= 90%", run.opt.cpu_only ? "--cpu-only" : "no 4096-packet points");
        continue;
      }
      Target t{name, figures + " (" + at + ") = " + fmt(best_pct, 1) + "%", ">= 90%",
               fmt(best_pct / 90, 2) + "x", best_pct >= 90 ? "PASS" : "MISS",
               ratio_gap(best_pct, 90, "points")};
      add(t, "acl-vs-parse", at, "64B", workload, 4096, best_pct, "%", ">=90");
    }
  }
  // 4. Full workloads: best GPU mode vs the CPU peers on all cores and vs cpu-1.
  std::string peers_error;
  PeerRows peers;
  if (!run.opt.peers_csv.empty()) peers = read_peers_csv(run.opt.peers_csv, &peers_error);
  auto peer = [&](const std::string &profile, const std::string &workload,
                  const std::string &item) -> const PeerFigure * {
    auto it = peers.figures.find(PeerKey{profile, workload, item});
    return it == peers.figures.end() || !(it->second.mpps > 0) ? nullptr : &it->second;
  };
  auto peers_missing = [&]() -> std::string {
    if (run.opt.peers_csv.empty()) return "give --peers-csv FILE (gpupacket-cpu-peers --csv FILE)";
    return peers_error.empty() ? "no row for this cell in " + run.opt.peers_csv : peers_error;
  };
  // The best GPU throughput of a cell over every GPU mode and batch size with parity.
  auto best_gpu = [&](const std::string &profile, const std::string &workload, std::string *at) {
    double best = 0;
    if (grid)
      for (const auto &e : grid->engine_names())
        for (const auto *sizes : {&grid->options().sizes, &grid->options().realistic_sizes})
          for (uint32_t n : *sizes) {
            const GridPoint *pt = grid->point(e, profile, workload, n);
            if (!pt || !pt->throughput.batches || pt->throughput.parity_failed) continue;
            const double m = pt->throughput.mpps();
            if (e.rfind("cpu", 0) != 0 && m > best) best = m, *at = e + " @" + std::to_string(n);
          }
    return best;
  };
  auto versus = [&](const std::string &name, const std::string &id, const std::string &profile,
                    const std::string &workload, const PeerFigure *fig, const char *peer_name,
                    double want, const std::vector<uint32_t> &sizes) {
    std::string at;
    const double best = best_gpu(profile, workload, &at);
    const std::string target = ">= " + fmt(want, 2) + "x";
    if (!best) return not_measured(name, target, run.opt.cpu_only ? "--cpu-only" : "no GPU point");
    if (!fig) return not_measured(name, target, peers_missing());
    const double r = best / fig->mpps;
    Target t{name, fmt(best, 2) + " Mpps (" + at + ") vs " + fmt(fig->mpps, 2) + " Mpps (" +
                       peer_name + ", " + std::to_string(fig->threads) + " cores)",
             target, fmt(r, 2) + "x", r >= want ? "PASS" : "MISS",
             r >= want ? "headroom " + fmt(r / want, 2) + "x" : fmt(want / r, 2) + "x short"};
    if (fig->differences) t.gap += "; the peer's answers differed on " + std::to_string(fig->differences) + " packets";
    // The GPU's best rates come at the largest batches, which a quick run leaves out.
    if (r < want && run.opt.quick && !sizes.empty())
      t.gap += "; quick run: batches of at most " +
               std::to_string(*std::max_element(sizes.begin(), sizes.end())) + " packets";
    add(t, id, at, profile, workload, 0, r, "x", ">=" + fmt(want, 2));
  };
  // Realistic: the CPU pipeline (our parse + RSS, rte_acl, Hyperscan per
  // packet, every core pinned) is the reference.
  if (grid)
    for (const Cell &c : grid->options().cells) {
      const std::string profile = c.profile->name, workload = c.workload->name;
      if (realistic_full(*c.workload)) {
        const bool small = c.profile->traffic == gpp::TrafficProfile::Small;
        versus(workload + ", " + profile + ": best GPU vs the CPU pipeline on all cores",
               "realistic-vs-pipeline", profile, workload, peer(profile, workload, "pipeline"),
               "CPU pipeline", small ? 2 : 4, grid->sizes(c));
      } else if (c.workload->realistic && c.workload->acl && !c.workload->dpi) {
        versus(workload + ", " + profile + ": best GPU vs rte_acl alone on all cores",
               "realistic-acl-vs-rte_acl", profile, workload, peer(profile, workload, "rte_acl"),
               "rte_acl", 1, grid->sizes(c));
      }
    }
  // Stress: the original full workload against rte_acl + Hyperscan, and cpu-1.
  for (const Profile &p : profiles()) {
    if (p.realistic || (grid && !grid->has(p.name, "full"))) continue;
    versus(std::string("stress full workload, ") + p.name + ": best GPU vs the CPU pipeline on all cores",
           "full-vs-peers", p.name, "full", peer(p.name, "full", "pipeline"), "CPU pipeline", 2,
           grid ? grid->options().sizes : std::vector<uint32_t>{});
    std::string at, cpu1_at;
    const double best = best_gpu(p.name, "full", &at);
    double best_cpu1 = 0;
    if (grid)
      for (uint32_t n : grid->options().sizes) {
        const GridPoint *pt = grid->point("cpu-1", p.name, "full", n);
        if (pt && pt->throughput.batches && !pt->throughput.parity_failed &&
            pt->throughput.mpps() > best_cpu1)
          best_cpu1 = pt->throughput.mpps(), cpu1_at = std::to_string(n);
      }
    const std::string n2 = std::string("stress full workload, ") + p.name + ": best GPU >= 10x cpu mode on one core";
    if (!best || !best_cpu1) {
      not_measured(n2, ">= 10.00x", run.opt.cpu_only ? "--cpu-only" : !best ? "no GPU point" : "no cpu-1 point");
      continue;
    }
    const double r = best / best_cpu1;
    Target t{n2, fmt(best, 2) + " Mpps (" + at + ") vs " + fmt(best_cpu1, 3) + " Mpps (cpu-1 @" + cpu1_at + ")",
             ">= 10.00x", fmt(r, 2) + "x", r >= 10 ? "PASS" : "MISS",
             r >= 10 ? "headroom " + fmt(r / 10, 2) + "x" : fmt(10 / r, 2) + "x short"};
    add(t, "full-vs-cpu1", at, p.name, "full", 0, r, "x", ">=10");
  }
  if (!peers.figures.empty()) peers_table(run, peers);
  Table t;
  t.id = "targets";
  t.title = "Targets (issue)";
  t.header = {"target", "measured", "target", "ratio", "status", "gap"};
  for (const auto &x : ts) t.rows.push_back({x.name, x.measured, x.target, x.ratio, x.status, x.gap});
  t.notes.push_back("ratio = measured / target (latency: element p99 / ping-pong p99; full workload: "
                    "best GPU Mpps over all modes and batch sizes with parity / the reference).");
  t.notes.push_back("CPU pipeline and rte_acl: from --peers-csv (gpupacket-cpu-peers --csv): every "
                    "worker pinned to its own core, each over the same frames as the cell "
                    "(bench/workloads.h cell_traffic); the pipeline runs per packet gpupacket's "
                    "parse + RSS, then rte_acl, then Hyperscan (one hs_scan per payload), its "
                    "answers checked against gpupacket's on every packet.  Targets: realistic "
                    "full workloads >= 4x (imix, 1500-byte) and >= 2x (64-byte), each real 10k "
                    "set alone >= rte_acl on all cores; stress full workload >= 2x.");
  t.notes.push_back("Crossovers (CPU faster below): table B-crossover.  (info): no target for this mode.");
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
                                      (opt.cpu_only ? ", --cpu-only (no GPU rows)" : "") +
                                      (opt.records ? "" : ", --no-records (streams, zerocopy and "
                                                          "graph records left on the device, "
                                                          "unchecked; no targets)") +
                                      section_b_filters(opt));
  std::printf("gpupacket-bench: %s, CUDA driver %s, runtime %s, %s run\n", run.device_name.c_str(),
              version_text(driver).c_str(), version_text(runtime).c_str(), opt.quick ? "quick" : "full");

  run.phase("loading rules and patterns", 60);
  RuleSets sets;
  std::string error;
  const bool realistic = opt.grid != "stress";
  if (!load_rule_sets(opt.data, &sets, &error, realistic)) {
    std::fprintf(stderr, "gpupacket-bench: %s (use --data DIR for the rule and pattern files)\n",
                 error.c_str());
    return 2;
  }
  run.sets = &sets;
  {
    std::string rules;
    for (const auto &kv : sets.acl) rules += kv.first + ": " + kv.second.description + "; ";
    for (const auto &kv : sets.dpi)
      rules += kv.first + ": " + kv.second.description + ", loaded in " +
               fmt(kv.second.load_seconds, 2) + " s; ";
    run.report.add_meta("rules", rules);
  }
  run.report.add_meta("traffic", std::string(kTrafficDescription) +
                                     (realistic ? std::string("; realistic cells: ") +
                                                      kRealisticTrafficDescription
                                                : std::string()));

  GridOptions go;
  go.quick = opt.quick;
  go.cpu_only = opt.cpu_only;
  go.device = opt.device;
  go.streams = opt.streams;
  go.records = opt.records;
  if (opt.grid != "realistic") go.cells = stress_cells();
  if (realistic)
    for (const Cell &c : realistic_cells())
      if (std::none_of(go.cells.begin(), go.cells.end(), [&c](const Cell &have) {
            return have.profile == c.profile && have.workload == c.workload;
          }))
        go.cells.push_back(c);
  go.realistic_sizes = opt.quick ? std::vector<uint32_t>{1, 64, 4096}
                                 : std::vector<uint32_t>{1, 64, 4096, 16384};
  if (opt.quick) {
    go.sizes = {1, 64, 4096};
    go.tput_seconds = 0.03;
    go.latency_seconds = 0.02;
    go.latency_iters_small = 100;
    go.latency_iters_large = 20;
    go.min_samples = 3;
  } else {
    go.sizes = {1, 8, 32, 64, 256, 1024, 4096, 16384};
  }
  if (!opt.sizes.empty()) go.sizes = go.realistic_sizes = sorted_unique(opt.sizes);
  go.engines = opt.engines;
  if (!opt.cells.empty()) {
    std::vector<Cell> kept;
    for (const std::string &want : opt.cells) {
      const auto it = std::find_if(go.cells.begin(), go.cells.end(), [&want](const Cell &c) {
        return want == std::string(c.profile->name) + "/" + c.workload->name;
      });
      if (it == go.cells.end()) {
        std::fprintf(stderr, "gpupacket-bench: --cells: %s is not a cell of --grid %s\n",
                     want.c_str(), opt.grid.c_str());
        return 2;
      }
      if (std::find_if(kept.begin(), kept.end(), [&it](const Cell &c) {
            return c.profile == it->profile && c.workload == it->workload;
          }) == kept.end())
        kept.push_back(*it);
    }
    go.cells = kept;
  }
  Grid grid;
  const bool have_grid = grid.build(sets, go, [&run](const std::string &n, double s) { run.phase(n, s); },
                                    &error);
  if (!have_grid) run.report.add_error("B: " + error);
  std::vector<size_t> batch_sizes;
  if (have_grid)
    for (const char *profile : {"64B", "1500B"})
      if (const Ring *r = grid.ring(profile, "+acl1k", 4096)) batch_sizes.push_back(r->batches[0].bytes);
  if (const Ring *r = have_grid ? grid.ring("pcap-1500B", "+et2024", 4096) : nullptr)
    batch_sizes.push_back(r->batches[0].bytes);

  if (!opt.cpu_only) section_a(run, batch_sizes);
  if (have_grid) {
    section_b(run, grid);
    if (opt.gst) section_c(run, grid);
  }
  // Without records the GPU rows are not what a user gets: no targets.
  if (opt.records) targets(run, have_grid ? &grid : nullptr);
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
