// gpupacket-flow-bench: what flow metering costs, side by side with parse +
// RSS alone, in one run on one machine; and how many flows a GPU table holds.
//
//   gpupacket-flow-bench [--quick] [--flows-only] [--flows N] [--capacity N]
//                        [--seconds S] [--device D] [--streams N] [--report FILE.md]
//
// --streams: EngineSettings::num_streams of every GPU engine (default 4, the
// element's num-streams): how many batches are in flight.
//
// Traffic: 64-byte frames of N flows (default 1,048,576) in turn, so that
// each pass over the ring holds every flow once and, after the first pass,
// N flows are open at once; 4096-packet batches.  For each GPU mode:
// parse + RSS, then the same with the flow table in device memory, counted
// by the batch kernel itself (records still copied back), then in `streams`,
// `zerocopy` and `graph` with the records left on the device (flows only),
// at 4096- and 16384-packet batches (--flows-only: these rows alone).  On the host: cpu mode on every core, without and
// with its flow table.  Each point is measured three times, alternating,
// and the median kept; the ratios compare medians of the same run.  Then
// the table capacity: --capacity distinct flows (default 16,777,216)
// counted into one device table, every one tracked, none lost.  Exit 77
// where no GPU is usable.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <cuda_runtime_api.h>

#include "batch_builder.h"
#include "bench_common.h"
#include "device_flow_store.h"
#include "engine.h"
#include "flow_meter.h"
#include "traffic_gen.h"

namespace {

using gppbench::now_ns;

struct Options {
  bool quick = false;
  bool flows_only = false; // only the flows-only rows
  uint32_t flows = 1u << 20;
  uint32_t capacity = 1u << 24;
  double seconds = 1.0;
  int device = 0;
  unsigned streams = gpp::EngineSettings{}.num_streams; // the element's num-streams
  std::string report;
};

struct Ring {
  std::unique_ptr<gpp::HostArena> arena;
  std::vector<const uint8_t *> batches;
  std::vector<size_t> sizes;
  std::vector<uint32_t> counts;
  std::vector<uint64_t> latest_ns;
  uint64_t packets = 0;
};

constexpr uint32_t kBatch = 4096;
// Flows only is also measured at this batch size: the copies in then reach
// the link's large-copy rate (DESIGN.md: 46-48 GB/s from 1 MB up).
constexpr uint32_t kLargeBatch = 16384;

bool build_ring(const Options &o, uint32_t batch_packets, Ring &ring, std::string *error) {
  gpp::TrafficSpec spec;
  spec.profile = gpp::TrafficProfile::Small;
  spec.flows = o.flows;
  spec.seed = 7;
  spec.round_robin = true;
  gpp::TrafficGenerator gen(spec);
  const size_t batches = (o.flows + batch_packets - 1) / batch_packets;
  const size_t batch_bytes = gpp_batch_data_start(batch_packets) + batch_packets * 80;
  ring.arena = gpp::make_host_arena(o.device, batches * (batch_bytes + 4096), gpp::HostMemoryKind::Default,
                                    error);
  if (!ring.arena) return false;
  uint64_t number = 1;
  for (size_t b = 0; b < batches; ++b) {
    gpp::BatchBuilder bb;
    bb.reset(GPP_LINKTYPE_ETHERNET);
    const uint32_t n =
        static_cast<uint32_t>(std::min<uint64_t>(batch_packets, o.flows - b * batch_packets));
    for (uint32_t i = 0; i < n; ++i, ++number) {
      const std::vector<uint8_t> &f = gen.next();
      // 1 us apart: no flow times out during the run.
      bb.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()),
             1000000000ull + number * 1000ull, number);
    }
    const std::vector<uint8_t> bytes = bb.finish();
    auto *dst = static_cast<uint8_t *>(ring.arena->allocate(bytes.size()));
    if (!dst) {
      *error = "pinned ring too small";
      return false;
    }
    std::memcpy(dst, bytes.data(), bytes.size());
    ring.batches.push_back(dst);
    ring.sizes.push_back(bytes.size());
    ring.counts.push_back(n);
    ring.latest_ns.push_back(1000000000ull + (number - 1) * 1000ull);
    ring.packets += n;
  }
  return true;
}

// One engine (and its flow table, if any) with results buffers for its slots.
struct Rig {
  // Before the engine: the engine (a resident kernel using the table) goes first.
  std::unique_ptr<gpp::FlowMeter> meter; // flows: the table, on the device or the host
  std::unique_ptr<gpp::Engine> engine;
  std::unique_ptr<gpp::HostArena> results_arena;
  std::vector<GppResult *> results;
  bool host_flows = false;
};

bool make_rig(const Options &o, gpp::Mode mode, bool flows, bool records_to_host, Rig &rig,
              std::string *error) {
  gpp::EngineSettings s;
  s.device_id = o.device;
  s.wait = gpp::WaitStrategy::Spin;
  s.records_to_host = records_to_host;
  s.num_streams = o.streams;
  rig.engine = gpp::make_engine(mode, s, error);
  if (!rig.engine) return false;
  const unsigned slots = rig.engine->slots();
  rig.results_arena = gpp::make_host_arena(o.device, slots * (kLargeBatch * sizeof(GppResult) + 4096),
                                           gpp::HostMemoryKind::Default, error);
  if (!rig.results_arena) return false;
  for (unsigned i = 0; i < slots; ++i)
    rig.results.push_back(
        static_cast<GppResult *>(rig.results_arena->allocate(kLargeBatch * sizeof(GppResult))));
  if (!flows) return true;
  gpp::FlowSettings fs;
  fs.max_flows = 2 * o.flows; // no eviction: every flow stays open
  fs.threads = std::thread::hardware_concurrency();
  if (rig.engine->flow_device() >= 0) {
    auto store = gpp::make_device_flow_store(o.device, gpp::flow_table_slots(fs.max_flows), error);
    if (!store) return false;
    rig.meter.reset(new gpp::FlowMeter(fs, std::move(store)));
    if (!rig.engine->attach_flows(&rig.meter->store())) {
      *error = "the engine refused the flow table";
      return false;
    }
  } else {
    rig.meter.reset(new gpp::FlowMeter(fs));
    rig.host_flows = true;
  }
  return true;
}

// Batches through `rig` for about `seconds` (whole ring passes when
// `passes` > 0 instead); packets per second.
double run(Rig &rig, const Ring &ring, double seconds, unsigned passes, std::string *error) {
  const unsigned slots = rig.engine->slots();
  const size_t n = ring.batches.size();
  uint64_t submitted = 0, completed = 0, packets = 0;
  const uint64_t t0 = now_ns();
  const uint64_t end = t0 + static_cast<uint64_t>(seconds * 1e9);
  const uint64_t limit = passes ? passes * n : UINT64_MAX;
  gpp::CoreConfig cfg{};
  std::vector<GppFlowRecord> ended;
  bool submitting = true;
  for (;;) {
    while (submitting && submitted - completed < slots && submitted < limit) {
      const size_t b = submitted % n;
      if (!rig.engine->submit(ring.batches[b], ring.sizes[b], ring.counts[b], cfg,
                              rig.results[submitted % slots], error))
        return -1;
      if (rig.meter && !rig.host_flows) {
        rig.meter->added(ring.counts[b], ring.latest_ns[b]);
        if (!rig.meter->sweep(ended, error)) return -1;
      }
      ++submitted;
    }
    if (submitted == completed) break;
    if (!rig.engine->wait_oldest(error)) return -1;
    const size_t b = completed % n;
    if (rig.host_flows) {
      rig.meter->add(rig.results[completed % slots], ring.counts[b]);
      if (!rig.meter->sweep(ended, error)) return -1;
    }
    packets += ring.counts[b];
    ++completed;
    if (submitted >= limit || (!passes && now_ns() >= end)) submitting = false;
  }
  return packets / ((now_ns() - t0) / 1e9);
}

struct Row {
  std::string name;
  double base = 0, flows = 0; // Mpps, medians
  bool on_device = false;     // where the table was
  std::string note;
};

std::string fmt2(double v) { return gppbench::fmt(v, 2); }

} // namespace

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char * {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--quick") o.quick = true;
    else if (a == "--flows-only") o.flows_only = true;
    else if (a == "--flows") o.flows = static_cast<uint32_t>(std::strtoul(next(), nullptr, 10));
    else if (a == "--capacity") o.capacity = static_cast<uint32_t>(std::strtoul(next(), nullptr, 10));
    else if (a == "--seconds") o.seconds = std::strtod(next(), nullptr);
    else if (a == "--device") o.device = std::atoi(next());
    else if (a == "--streams") o.streams = static_cast<unsigned>(std::strtoul(next(), nullptr, 10));
    else if (a == "--report") o.report = next();
    else {
      std::fprintf(stderr, "usage: %s [--quick] [--flows-only] [--flows N] [--capacity N] [--seconds S] "
                           "[--device D] [--streams N] [--report FILE.md]\n", argv[0]);
      return 2;
    }
  }
  if (o.streams < 1 || o.streams > gpp::kMaxNumStreams) {
    std::fprintf(stderr, "--streams wants 1 to %u\n", gpp::kMaxNumStreams);
    return 2;
  }
  if (o.quick) {
    o.seconds = 0.3;
    o.flows = std::min<uint32_t>(o.flows, 1u << 18);
    o.capacity = std::min<uint32_t>(o.capacity, 1u << 20);
  }
  const std::string why = gpp::gpu_unavailable_reason(o.device);
  if (!why.empty()) {
    std::printf("SKIP: %s\n", why.c_str());
    return 77;
  }
  cudaDeviceProp prop{};
  cudaGetDeviceProperties(&prop, o.device);
  std::string error;
  Ring ring;
  if (!build_ring(o, kBatch, ring, &error)) {
    std::fprintf(stderr, "ring: %s\n", error.c_str());
    return 1;
  }
  std::ostringstream md;
  md << "# Flow metering, " << prop.name << ", " << std::thread::hardware_concurrency()
     << " host threads\n\n`gpupacket-flow-bench" << (o.quick ? " --quick" : "") << "`: 64-byte frames of "
     << o.flows << " flows in turn (all open at once after the first pass), " << kBatch
     << "-packet batches, " << o.streams
     << " streams (batches in flight), median of 3 alternating " << o.seconds << "-s runs.\n\n";
  std::printf("%s", md.str().c_str());

  struct Point {
    const char *name;
    gpp::Mode mode;
  };
  // The GPU modes of the product's table (gpp::kModes) in its order, then cpu.
  std::vector<Point> points;
  for (const gpp::ModeInfo &m : gpp::kModes)
    if (gpp::is_gpu_mode(m.mode)) points.push_back({m.name, m.mode});
  points.push_back({"cpu (cpu-threads=0)", gpp::Mode::Cpu});
  std::vector<Row> rows;
  bool failed = false;
  for (const Point &p : points) {
    if (o.flows_only) break;
    Rig base, flows;
    if (!make_rig(o, p.mode, false, true, base, &error) ||
        !make_rig(o, p.mode, true, true, flows, &error)) {
      std::fprintf(stderr, "%s: %s\n", p.name, error.c_str());
      failed = true;
      continue;
    }
    // One pass opens every flow; then the table holds them all.
    if (run(flows, ring, 0, 1, &error) < 0 || !flows.engine->idle(&error)) {
      std::fprintf(stderr, "%s: %s\n", p.name, error.c_str());
      failed = true;
      continue;
    }
    std::vector<double> b, f;
    const double secs = p.mode == gpp::Mode::Cpu ? o.seconds * 2 : o.seconds;
    // Each engine idles after its turn: a resident persistent kernel keeps
    // the GPU, and the other engine's could never start beside it.
    for (int rep = 0; rep < 3 && !failed; ++rep) {
      b.push_back(run(base, ring, secs, 0, &error) / 1e6);
      failed = failed || b.back() < 0 || !base.engine->idle(&error);
      f.push_back(run(flows, ring, secs, 0, &error) / 1e6);
      failed = failed || f.back() < 0 || !flows.engine->idle(&error);
    }
    if (failed) {
      std::fprintf(stderr, "%s: %s\n", p.name, error.c_str());
      break;
    }
    std::vector<GppFlowRecord> out;
    if (!flows.meter->flush(out, &error)) {
      std::fprintf(stderr, "%s: %s\n", p.name, error.c_str());
      failed = true;
      break;
    }
    const gpp::FlowCounters &c = flows.meter->counters();
    Row row{p.name, gppbench::median(b), gppbench::median(f), !flows.host_flows, ""};
    uint64_t counted = 0;
    for (const GppFlowRecord &r : out) counted += r.packets[0] + r.packets[1];
    row.note = std::to_string(out.size()) + " flows, " + std::to_string(c.packets_untracked) +
               " untracked";
    if (out.size() != o.flows || c.packets_untracked != 0 || counted != c.packets) {
      row.note += " (WRONG: want " + std::to_string(o.flows) + " flows holding every packet)";
      failed = true;
    }
    rows.push_back(row);
    std::printf("%-16s parse+RSS %8.2f Mpps   +flows %8.2f Mpps   %5.1f%%   table in %s memory, %s\n",
                p.name, row.base, row.flows, 100 * row.flows / row.base,
                row.on_device ? "device" : "host", row.note.c_str());
  }
  // Flows only: streams, zerocopy and graph with the records left on the
  // device (zerocopy: not written at all), at 4096- and 16384-packet batches.
  struct OnlyRow {
    const char *mode;
    uint32_t batch;
    double base = 0, flows = 0;
    std::string note;
  };
  std::vector<OnlyRow> only_rows;
  Ring large;
  if (!build_ring(o, kLargeBatch, large, &error)) {
    std::fprintf(stderr, "flows only: %s\n", error.c_str());
    failed = true;
  }
  for (const Point &p : points) {
    if (!gpp::mode_can_keep_records(p.mode)) continue;
    for (const uint32_t batch : {kBatch, kLargeBatch}) {
      const Ring &r = batch == kBatch ? ring : large;
      if (r.batches.empty()) continue;
      Rig base, flows;
      // One pass each first: every flow open, graphs instantiated.
      if (!make_rig(o, p.mode, false, false, base, &error) ||
          !make_rig(o, p.mode, true, false, flows, &error) || run(base, r, 0, 1, &error) < 0 ||
          run(flows, r, 0, 1, &error) < 0) {
        std::fprintf(stderr, "flows only: %s\n", error.c_str());
        failed = true;
        continue;
      }
      std::vector<double> b, f;
      for (int rep = 0; rep < 3 && !failed; ++rep) {
        b.push_back(run(base, r, o.seconds, 0, &error) / 1e6);
        f.push_back(run(flows, r, o.seconds, 0, &error) / 1e6);
        failed = b.back() < 0 || f.back() < 0;
      }
      if (failed) {
        std::fprintf(stderr, "flows only: %s\n", error.c_str());
        break;
      }
      OnlyRow row{p.name, batch, gppbench::median(b), gppbench::median(f), ""};
      std::vector<GppFlowRecord> out;
      if (!flows.meter->flush(out, &error)) {
        std::fprintf(stderr, "flows only: %s\n", error.c_str());
        failed = true;
        continue;
      }
      uint64_t counted = 0;
      for (const GppFlowRecord &rec : out) counted += rec.packets[0] + rec.packets[1];
      row.note = std::to_string(out.size()) + " flows, " +
                 std::to_string(flows.meter->counters().packets_untracked) + " untracked";
      if (out.size() != o.flows || counted != flows.meter->counters().packets) {
        row.note += " (WRONG: want " + std::to_string(o.flows) + " flows holding every packet)";
        failed = true;
      }
      only_rows.push_back(row);
      std::printf("%s, flows only, %u-packet batches: parse+RSS %8.2f Mpps   +flows %8.2f Mpps"
                  "   (records not copied back), %s\n",
                  p.name, batch, row.base, row.flows, row.note.c_str());
    }
  }
  // Capacity: distinct flows into one table, counted and checked.
  double insert_mps = 0;
  uint64_t created = 0, untracked = 0;
  size_t table_bytes = 0;
  if (!o.flows_only) {
    gpp::FlowSettings fs;
    fs.max_flows = o.capacity;
    auto store = gpp::make_device_flow_store(o.device, gpp::flow_table_slots(fs.max_flows), &error);
    if (!store) {
      std::fprintf(stderr, "capacity: %s\n", error.c_str());
      failed = true;
    } else {
      auto *device_store = dynamic_cast<gpp::DeviceFlowStore *>(store.get());
      gpp::FlowMeter meter(fs, std::move(store));
      table_bytes = meter.table_bytes();
      const uint32_t chunk = 1u << 20;
      std::vector<GppResult> recs(chunk);
      GppResult *d = nullptr;
      cudaStream_t st;
      cudaStreamCreate(&st);
      cudaMalloc(reinterpret_cast<void **>(&d), chunk * sizeof(GppResult));
      double seconds = 0;
      for (uint32_t first = 0; first < o.capacity; first += chunk) {
        const uint32_t n = std::min(chunk, o.capacity - first);
        for (uint32_t i = 0; i < n; ++i) {
          GppResult &r = recs[i];
          r = GppResult{};
          const uint32_t id = first + i;
          r.packet_number = id + 1ull;
          r.timestamp_ns = 1000000000ull + id;
          r.ip_version = 4;
          r.ip_flags = GPP_IP_HEADER_PARSED | GPP_IP_L4_PARSED;
          r.l4_proto = 17;
          r.src[0] = 10;
          r.src[1] = static_cast<uint8_t>(id >> 16);
          r.src[2] = static_cast<uint8_t>(id >> 8);
          r.src[3] = static_cast<uint8_t>(id);
          r.dst[0] = 192;
          r.dst[3] = 1;
          r.sport = static_cast<uint16_t>(1024 + id % 50000);
          r.dport = 53;
          r.ip_length = 46;
          r.acl_rule = -1;
          r.dpi_pattern = -1;
        }
        cudaMemcpyAsync(d, recs.data(), n * sizeof(GppResult), cudaMemcpyHostToDevice, st);
        cudaStreamSynchronize(st);
        const uint64_t t0 = now_ns();
        if (device_store->update_on(st, d, n) != cudaSuccess) failed = true;
        cudaStreamSynchronize(st);
        seconds += (now_ns() - t0) / 1e9;
        meter.added(n, 1000000000ull + first + n);
      }
      std::vector<GppFlowRecord> out;
      if (!meter.flush(out, &error)) {
        std::fprintf(stderr, "capacity: %s\n", error.c_str());
        failed = true;
      }
      created = meter.counters().flows_created;
      untracked = meter.counters().packets_untracked;
      insert_mps = o.capacity / seconds / 1e6;
      cudaFree(d);
      cudaStreamDestroy(st);
      if (created != o.capacity || untracked != 0 || out.size() != o.capacity) failed = true;
      std::printf("capacity: %u flows into a table of %s (%zu bytes a flow): %llu tracked, %llu "
                  "untracked, %zu records at the end; %.1f M new flows/s\n",
                  o.capacity, gppbench::fmt_bytes(table_bytes).c_str(), table_bytes / o.capacity,
                  static_cast<unsigned long long>(created),
                  static_cast<unsigned long long>(untracked), out.size(), insert_mps);
    }
  }

  md << "| mode | parse + RSS (Mpps) | + flow table (Mpps) | ratio | target | flows at the end |\n"
        "|---|---|---|---|---|---|\n";
  for (const Row &r : rows) {
    const double ratio = r.flows / r.base;
    md << "| " << r.name << " | " << fmt2(r.base) << " | " << fmt2(r.flows) << " | "
       << gppbench::fmt(100 * ratio, 1) << " % | "
       << (r.on_device ? (ratio >= 0.9 ? "≥ 90 %: met" : "≥ 90 %: **missed**")
                       : "(table in host memory)")
       << " | " << r.note << " |\n";
  }
  for (const OnlyRow &r : only_rows)
    md << "| " << r.mode << ", records left on the device (flows only), " << r.batch
       << "-packet batches | " << fmt2(r.base) << " | " << fmt2(r.flows) << " | "
       << gppbench::fmt(r.base > 0 ? 100 * r.flows / r.base : 0, 1)
       << " % | ≥ 400 Mpps: " << (r.flows >= 400 ? "met" : "**missed**") << " | " << r.note
       << " |\n";
  md << "\n";
  md << "Capacity: " << o.capacity << " distinct flows counted into one device table of "
     << gppbench::fmt_bytes(table_bytes) << " (" << table_bytes / std::max<uint32_t>(o.capacity, 1)
     << " bytes a flow: two 128-byte slots each): " << created << " tracked, " << untracked
     << " untracked; " << gppbench::fmt(insert_mps, 1) << " M new flows/s. Target ≥ 16M flows: "
     << (created >= (1u << 24) && untracked == 0 ? "met"
         : o.quick || o.flows_only            ? "not measured"
                                              : "**missed**")
     << ".\n";
  if (!o.report.empty()) {
    std::ofstream f(o.report);
    f << md.str();
  }
  std::printf("%s", failed ? "FAILED\n" : "done\n");
  return failed ? 1 : 0;
}
