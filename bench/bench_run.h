// gpupacket-bench's run: its options, what it learns and shares between the
// report's sections, and the sections, each in a file of its own
// (section_a.cpp: the GPU host's limits; section_b.cpp: the engine-only grid;
// section_c.cpp: the element; targets.cpp: the targets and the CPU peers).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include <gpupacket/packet-result.h>

#include "bench_common.h"
#include "bench_kernels.h"
#include "engine.h"
#include "grid.h"
#include "gst_bench.h"

namespace gppbench {

constexpr uint32_t kMaxBenchBatch = 16384; // the largest batch the grid is built and checked for

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

// Fills *o from the command line; false on a usage error (said on stderr).
// --help prints the usage and --list-modes the modes, then exit 0.
bool parse_options(int argc, char **argv, Options *o);
void usage(FILE *f);

std::vector<uint32_t> sorted_unique(std::vector<uint32_t> v);
std::string join(const std::vector<std::string> &items, const char *separator);
// The report's note of the section B filters in force ("" when none).
std::string section_b_filters(const Options &o);
// A table cell for a failure; the whole message is in the report's Errors list.
std::string short_error(const std::string &e);

// ---- what the run learns, shared between sections ---------------------------------

struct Bandwidth {
  double h2d = kNaN, d2h = kNaN; // GB/s (1e9 bytes/s), median of single copies
  double h2d_both = kNaN, d2h_both = kNaN; // each way while the other runs (16 MiB and up)
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

// The floor under one persistent job of 64 64-byte packets, without the
// work (section A's payload ping-pong; the targets compare with it).
constexpr uint32_t kPayloadBatchBytes = 6208; // header + 64 descriptors + 64 frames, 16-byte rounded
constexpr uint32_t kPayloadRecordBytes = 64 * sizeof(GppResult);

// The workloads whose persistent 64-packet element latency has a target.
inline constexpr const char *kLatencyTargetWorkloads[] = {"parse+rss", "+acl1k"};
inline bool is_latency_target(const std::string &workload) {
  for (const char *w : kLatencyTargetWorkloads)
    if (workload == w) return true;
  return false;
}

// The report's sections, in the order main() runs them.
void section_a(Run &run, const std::vector<size_t> &batch_sizes); // limits (needs a GPU)
void section_b(Run &run, Grid &grid);                               // the grid, engine-only
void section_c(Run &run, Grid &grid);                               // the element (--gst)
void targets(Run &run, const Grid *grid);                           // the targets

} // namespace gppbench
