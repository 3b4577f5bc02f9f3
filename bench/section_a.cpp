// gpupacket-bench, section A: the GPU host's limits (pinned copy bandwidth,
// launch and round-trip floors, the persistent ping-pong, host memory kinds).
#include <cuda_runtime_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "bench_cuda.h"
#include "bench_run.h"
#include "cuda_util.h"
#include "memory_kinds.h"

namespace gppbench {

namespace {

uint32_t load_acquire(const uint32_t *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
void store_release(uint32_t *p, uint32_t v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

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
  // Both ways at once (a copy mode moves batches in while records go out):
  // a second pair of buffers and a stream of its own for the D2H copies.
  gpp::PinnedMemory host_back(max_size, cudaHostAllocPortable);
  gpp::DeviceMemory device_back(max_size);
  GPP_CUDA_TRY(cudaMemset(device_back.get(), 0, max_size));
  gpp::Stream back_stream;
  gpp::Event back_stop(cudaEventDefault);

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

  // COPIES back-to-back copies of SIZE each way, both streams released by one
  // event: each direction's GB/s from that event to its last copy.
  auto time_both_ways = [&](size_t size, int copies) {
    GPP_CUDA_TRY(cudaEventRecord(start.get(), stream.get()));
    GPP_CUDA_TRY(cudaStreamWaitEvent(back_stream.get(), start.get(), 0));
    for (int c = 0; c < copies; ++c) {
      GPP_CUDA_TRY(cudaMemcpyAsync(device.get(), host.get(), size, cudaMemcpyHostToDevice,
                                   stream.get()));
      GPP_CUDA_TRY(cudaMemcpyAsync(host_back.get(), device_back.get(), size,
                                   cudaMemcpyDeviceToHost, back_stream.get()));
    }
    GPP_CUDA_TRY(cudaEventRecord(stop.get(), stream.get()));
    GPP_CUDA_TRY(cudaEventRecord(back_stop.get(), back_stream.get()));
    wait_event_bounded(stop.get(), 30, "pinned copy both ways");
    wait_event_bounded(back_stop.get(), 30, "pinned copy both ways");
    float in_ms = 0, out_ms = 0;
    GPP_CUDA_TRY(cudaEventElapsedTime(&in_ms, start.get(), stop.get()));
    GPP_CUDA_TRY(cudaEventElapsedTime(&out_ms, start.get(), back_stop.get()));
    const double bytes = static_cast<double>(size) * copies;
    return std::pair<double, double>{in_ms > 0 ? bytes / (in_ms * 1e-3) / 1e9 : kNaN,
                                     out_ms > 0 ? bytes / (out_ms * 1e-3) / 1e9 : kNaN};
  };

  for (size_t size : sizes) {
    if (size >= (16u << 20)) {
      const int copies = std::max<int>(4, static_cast<int>((1024u << 20) / size));
      time_both_ways(size, 2);
      std::vector<double> in, out;
      for (int r = 0; r < (run.opt.quick ? 3 : 7); ++r) {
        const auto both = time_both_ways(size, copies);
        in.push_back(both.first);
        out.push_back(both.second);
      }
      run.bandwidth[size].h2d_both = median(in);
      run.bandwidth[size].d2h_both = median(out);
    }
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
              "H2D back-to-back GB/s", "both ways at once: H2D / D2H GB/s"};
  for (size_t size : sizes) {
    const Bandwidth &b = run.bandwidth[size];
    const double ref = design_h2d(size);
    const bool extra = std::find(kCopySizes.begin(), kCopySizes.end(), size) == kCopySizes.end();
    auto sustained = run.h2d_sustained.find(size);
    t.rows.push_back({fmt_bytes(size) + (extra ? " (batch)" : ""), fmt(b.h2d, 1), fmt(ref, 1),
                      std::isnan(ref) ? "-" : fmt(b.h2d / ref, 2) + "x", fmt(b.d2h, 1),
                      fmt(design_d2h(size), 1),
                      sustained == run.h2d_sustained.end() ? "-" : fmt(sustained->second, 1),
                      std::isnan(b.h2d_both) ? "-" : fmt(b.h2d_both, 1) + " / " + fmt(b.d2h_both, 1)});
    if (!std::isnan(b.h2d_both)) {
      run.csv("A", "pinned-copy", "", "", "", 0, 0, "h2d_both_ways_gbps@" + std::to_string(size),
              b.h2d_both, "GB/s");
      run.csv("A", "pinned-copy", "", "", "", 0, 0, "d2h_both_ways_gbps@" + std::to_string(size),
              b.d2h_both, "GB/s");
    }
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
  t.notes.push_back("Both ways at once (16 MiB and up): back-to-back H2D copies on one stream and "
                    "D2H copies on another, released together, each direction's GB/s over its own "
                    "span: what a copy mode's batches in and records out share.");
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


} // namespace

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

} // namespace gppbench
