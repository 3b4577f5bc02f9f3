// How gpupacket-bench drives the engines: batches in a host arena, one
// Runner interface over the GPU engines and the CPU engine, and the latency
// (one batch at a time) and throughput (every slot busy) loops, which also
// check every result they can against the CPU reference.
#pragma once

#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <gpupacket/packet-result.h>

#include "bench_common.h"
#include "device_timing.h"
#include "engine.h"

namespace gppbench {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Batch {
  const uint8_t *data = nullptr;
  size_t bytes = 0;
  uint32_t count = 0;
  uint64_t wire_bytes = 0;
};

// Distinct batches of one shape in the input arena, the core settings they
// run with and the CPU engine's results of each (the reference every engine
// must reproduce byte for byte).
struct Ring {
  uint32_t count = 0;
  gpp::CoreConfig cfg{};
  std::vector<Batch> batches;
  std::vector<std::vector<GppResult>> reference;
};

// Pinned arena from the engine, or with --cpu-only plain heap memory.
std::unique_ptr<gpp::HostArena> make_arena(bool cpu_only, int device, size_t bytes,
                                           std::string *error);

// One way of running batches: a GPU engine or the CPU engine.
class Runner {
public:
  virtual ~Runner() = default;
  virtual unsigned slots() const = 0;
  virtual bool submit(const Batch &b, const gpp::CoreConfig &cfg, GppResult *results,
                      std::string *error) = 0;
  virtual bool wait_oldest(std::string *error) = 0;
  // DeviceTiming::last_device_ns of the batch wait_oldest() last returned
  // (0 where the engine keeps no DeviceTiming).
  virtual uint32_t last_device_ns() const { return 0; }
  // DeviceTiming::last_device_phases of that batch.
  virtual gpp::DevicePhases last_device_phases() const { return {}; }
  // Engine::writes_records: whether results are there to check.
  virtual bool writes_records() const { return true; }
};

struct EngineSpec {
  std::string name;
  gpp::Mode mode;
  unsigned cpu_threads = 0;       // cpu: 0 = all cores
  unsigned persistent_blocks = 0; // persistent: 0 = one per SM
};

// One engine a mode of the product's table (gpp::kModes), in its order, with
// cpu as cpu-1 and cpu-all and persistent also as persistent-1blk: cpu-1,
// cpu-all, streams, zerocopy, graph, persistent, persistent-1blk (only the
// cpu ones with cpu_only).
std::vector<EngineSpec> engine_specs(bool cpu_only);

// The modes of gpp::kModes, one name a line (--list-modes: for scripts).
void print_modes(FILE *f);

// records: EngineSettings::records_to_host.
std::unique_ptr<Runner> make_runner(const EngineSpec &spec, int device, unsigned num_streams,
                                    bool records, std::string *error);

struct ThroughputResult {
  std::string error;
  uint64_t batches = 0, packets = 0, batch_bytes = 0, wire_bytes = 0;
  double seconds = 0;
  double cpu_seconds = 0; // process CPU time over the measured interval, all threads
  uint64_t parity_checked = 0, parity_failed = 0;
  double mpps() const { return seconds > 0 ? packets / seconds / 1e6 : kNaN; }
  double gbps() const { return seconds > 0 ? wire_bytes * 8.0 / seconds / 1e9 : kNaN; }
  double batch_gBps() const { return seconds > 0 ? batch_bytes / seconds / 1e9 : kNaN; }
  double cpu_us_per_batch() const { return batches ? cpu_seconds * 1e6 / batches : kNaN; }
};

struct LatencyResult {
  LatencyStats stats;
  LatencyStats device; // GPU-side part (DeviceTiming::last_device_ns), persistent only; n = 0 elsewhere
  LatencyStats phases[std::tuple_size<gpp::DevicePhases>::value]; // DeviceTiming::last_device_phases, persistent only
  uint64_t parity_checked = 0, parity_failed = 0;
  std::string error;
};

// One batch at a time, submit() to wait_oldest() on the host clock; stops
// after `iters` samples, or after `max_seconds` once it has `min_samples`.
// Every sample's results are compared with the reference (outside the timing).
LatencyResult run_latency(Runner &r, const Ring &ring, const std::vector<GppResult *> &results,
                          unsigned warmup, unsigned iters, unsigned min_samples,
                          double max_seconds);

// Keeps every slot busy for `seconds` after two rounds of warm-up; afterwards
// the last results of every slot are compared with their references.
ThroughputResult run_throughput(Runner &r, const Ring &ring,
                                const std::vector<GppResult *> &results, double seconds);

// The host's ceiling: `threads` threads, each running the core over batches
// of its own (no engine).
ThroughputResult run_cpu_parallel(const Ring &ring, unsigned threads, double seconds);

// Process CPU time (all threads), seconds.
double process_cpu_seconds();

} // namespace gppbench
