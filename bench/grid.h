// Section B of gpupacket-bench: every engine x batch size x profile x
// workload, engine-only (no GStreamer): latency one batch at a time,
// throughput with every slot busy, CPU time per batch, the kernel's own GPU
// time per batch, parity of every checked result with the CPU engine.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "bench_engines.h"
#include "workloads.h"

namespace gppbench {

// GridOptions::engines' name for the host's all-core ceiling (cpu-Nx1 in the tables).
constexpr const char *kCpuParallelEngine = "cpu-parallel";

struct GridOptions {
  bool quick = false, cpu_only = false;
  int device = 0;
  unsigned streams = gpp::kDefaultNumStreams;
  bool records = true; // false: EngineSettings::records_to_host off (--no-records)
  std::vector<uint32_t> sizes;     // batch sizes, packets, of the stress cells
  std::vector<uint32_t> realistic_sizes; // of the realistic cells
  std::vector<Cell> cells;         // what to measure (stress_cells(), realistic_cells())
  std::vector<std::string> engines; // engine_specs() names to run, and kCpuParallelEngine; empty: all
  double tput_seconds = 0.12;      // per throughput point
  double latency_seconds = 0.06;   // per latency point, once min_samples are in
  unsigned latency_iters_small = 300, latency_iters_large = 100; // <= / > 256 packets
  unsigned min_samples = 5;
};

// (engine, profile, workload, batch packets)
using PointKey = std::tuple<std::string, std::string, std::string, uint32_t>;

struct GridPoint {
  LatencyResult latency;
  ThroughputResult throughput;
  bool has_latency = false;
};

// What the traffic made the classifiers do, from the CPU references.
struct TrafficShare {
  double acl_matched = kNaN, dpi_hit = kNaN; // shares of packets
  double dpi_hits_per_kb = kNaN;             // occurrences per KiB of scanned payload
  double mean_wire_bytes = kNaN;
};

class Grid {
public:
  using Phase = std::function<void(const std::string &name, double budget_s)>;

  // Builds the batches of every profile and size in one input arena and the
  // CPU references of every workload.
  bool build(const RuleSets &sets, const GridOptions &opt, const Phase &phase, std::string *error);
  // GPU time of the process kernel alone, batch already in device memory
  // (CUDA events, median); skipped with cpu_only.
  void measure_kernel_time(const Phase &phase, std::vector<std::string> *errors);
  // Every engine over every point; errors are collected, the run goes on.
  void run(const Phase &phase, std::vector<std::string> *errors);

  const Ring *ring(const std::string &profile, const std::string &workload, uint32_t batch) const;
  // The batches of a profile and size as separate byte vectors (for --gst).
  std::vector<std::vector<uint8_t>> batch_bytes(const std::string &profile, uint32_t batch) const;

  const GridOptions &options() const { return opt_; }
  const std::vector<uint32_t> &sizes(const Cell &c) const {
    return c.workload->realistic ? opt_.realistic_sizes : opt_.sizes;
  }
  bool has(const std::string &profile, const std::string &workload) const;
  std::vector<std::string> engine_names() const; // of specs()
  std::vector<EngineSpec> specs() const;        // engine_specs() less those left out (GridOptions::engines)
  bool selected(const std::string &engine) const; // kept by GridOptions::engines
  std::string parallel_name() const; // "cpu-Nx1"
  const GridPoint *point(const std::string &engine, const std::string &profile,
                         const std::string &workload, uint32_t batch) const;
  double kernel_us(const std::string &profile, const std::string &workload, uint32_t batch) const;
  TrafficShare share(const std::string &profile, const std::string &workload) const;
  std::map<std::string, std::string> engine_errors;

private:
  GridOptions opt_;
  std::unique_ptr<gpp::HostArena> inputs_, outputs_;
  std::vector<GppResult *> results_;
  std::map<std::tuple<std::string, std::string, uint32_t>, Ring> rings_; // profile, workload, size
  std::map<PointKey, GridPoint> points_;
  std::map<std::tuple<std::string, std::string, uint32_t>, double> kernel_us_;
  std::map<std::pair<std::string, std::string>, TrafficShare> shares_;
};

} // namespace gppbench
