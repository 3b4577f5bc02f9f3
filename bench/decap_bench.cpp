// gpupacket-decap-bench: what decap=inner costs.  The engine in every mode
// over the same batches of 100% tunnelled traffic (by default VXLAN: 64-byte
// inner frames, 114 on the wire), with the tunnel walk off (decap=none: the
// outer packet) and on
// (decap=inner: the inner packet and its GppTunnelInfo plane), measured side
// by side in alternating rounds; prints a table and writes a report.
//
//   gpupacket-decap-bench [--quick] [--cpu-only] [--device N] [--batch N]
//                         [--seconds S] [--rounds R] [--traffic LIST] [--no-records]
//                         [--out DIR]
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include <gpupacket/packet-batch.h>

#include "batch_builder.h"
#include "bench_engines.h"
#include "cpu_engine.h"
#include "traffic_gen.h"

namespace {

using gppbench::Batch;
using gppbench::EngineSpec;
using gppbench::Ring;

struct Options {
  bool quick = false;
  bool cpu_only = false;
  bool records = true; // false: the GPU engines leave records and tunnel plane on the device
  int device = 0;
  uint32_t batch = 4096;
  double seconds = 1.0; // per engine, decap setting and round
  unsigned rounds = 3;
  std::string traffic = "vxlan";
  std::vector<gpp::TrafficTunnel> tunnels{gpp::TrafficTunnel::Vxlan};
  std::string out;
  std::string command_line;
};

void usage(FILE *f) {
  std::fprintf(f,
               "usage: gpupacket-decap-bench [--quick] [--cpu-only] [--device N] [--batch N]\n"
               "                             [--seconds S] [--rounds R] [--traffic LIST]\n"
               "                             [--no-records] [--out DIR]\n"
               "  --quick     0.2 s a measurement, 2 rounds\n"
               "  --cpu-only  the cpu engines only (no GPU needed)\n"
               "  --batch N   packets a batch (default 4096)\n"
               "  --seconds S each measurement (default 1)\n"
               "  --rounds R  rounds of every engine with decap=none and =inner, alternating\n"
               "              which goes first (default 3); the table shows their medians\n"
               "  --traffic LIST  the tunnels around every frame, outermost first (vxlan,\n"
               "              geneve, gre, gtpu, ipip; comma-separated nests; default vxlan)\n"
               "  --no-records  streams, zerocopy and graph leave the records (and the tunnel\n"
               "              plane) on the device: what the walk costs without the copy back;\n"
               "              those rows are not checked, nor held to the target\n"
               "  --out DIR   write DIR/report.md and DIR/report.csv\n");
}

bool parse(int argc, char **argv, Options *o) {
  for (int i = 0; i < argc; ++i) o->command_line += (i ? " " : "") + std::string(argv[i]);
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> const char * { return i + 1 < argc ? argv[++i] : nullptr; };
    if (a == "--quick") {
      o->quick = true;
      o->seconds = 0.2;
      o->rounds = 2;
    } else if (a == "--cpu-only") {
      o->cpu_only = true;
    } else if (a == "--no-records") {
      o->records = false;
    } else if (a == "--help" || a == "-h") {
      usage(stdout);
      std::exit(0);
    } else if (a == "--device" || a == "--batch" || a == "--rounds" || a == "--seconds" ||
               a == "--out" || a == "--traffic") {
      const char *v = value();
      if (!v) {
        std::fprintf(stderr, "gpupacket-decap-bench: %s needs a value\n", a.c_str());
        return false;
      }
      char *end = nullptr;
      if (a == "--out") {
        o->out = v;
      } else if (a == "--traffic") {
        o->traffic = v;
        if (!gpp::parse_traffic_tunnels(v, &o->tunnels) || o->tunnels.empty()) {
          std::fprintf(stderr, "gpupacket-decap-bench: --traffic: \"%s\" is not a list of "
                       "tunnels (vxlan, geneve, gre, gtpu, ipip)\n", v);
          return false;
        }
      } else if (a == "--seconds") {
        o->seconds = std::strtod(v, &end);
        if (*end || !(o->seconds > 0) || o->seconds > 60) {
          std::fprintf(stderr, "gpupacket-decap-bench: --seconds is 0-60, not %s\n", v);
          return false;
        }
      } else {
        const long n = std::strtol(v, &end, 10);
        const long most = a == "--batch" ? 16384 : a == "--rounds" ? 20 : 64;
        if (*end || n < (a == "--device" ? 0 : 1) || n > most) {
          std::fprintf(stderr, "gpupacket-decap-bench: %s is at most %ld, not %s\n", a.c_str(),
                       most, v);
          return false;
        }
        if (a == "--device") o->device = static_cast<int>(n);
        else if (a == "--batch") o->batch = static_cast<uint32_t>(n);
        else o->rounds = static_cast<unsigned>(n);
      }
    } else {
      std::fprintf(stderr, "gpupacket-decap-bench: unknown option %s\n", a.c_str());
      usage(stderr);
      return false;
    }
  }
  return true;
}

gpp::CoreConfig config(bool decap) {
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
  cfg.verify_l4_checksum = 1; // the element's default
  cfg.decap = decap;
  cfg.vxlan_ports[0] = gpp::kVxlanPort;
  return cfg;
}

double median(std::vector<double> v) {
  if (v.empty()) return gppbench::kNaN;
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

} // namespace

int main(int argc, char **argv) {
  Options o;
  if (!parse(argc, argv, &o)) return 2;
  if (!o.cpu_only) {
    const std::string why = gpp::gpu_unavailable_reason(o.device);
    if (!why.empty()) {
      std::printf("SKIP: %s (--cpu-only measures the cpu engines alone)\n", why.c_str());
      return 77;
    }
  }
  // Traffic: 64-byte inner frames over 1024 flows, every one tunnelled.
  gpp::TrafficSpec spec;
  spec.profile = gpp::TrafficProfile::Small;
  spec.tunnels = o.tunnels;
  gpp::TrafficGenerator gen(spec);
  constexpr unsigned kRingBatches = 8; // distinct batches a ring cycles through
  std::vector<std::vector<uint8_t>> built;
  uint64_t number = 0;
  for (unsigned k = 0; k < kRingBatches; ++k) {
    gpp::BatchBuilder builder;
    builder.reset(GPP_LINKTYPE_ETHERNET);
    for (uint32_t i = 0; i < o.batch; ++i, ++number) {
      const std::vector<uint8_t> &f = gen.next();
      builder.add(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()),
                  1700000000000000000ull + 1000ull * number, number + 1);
    }
    built.push_back(builder.finish());
  }
  const gpp::CoreConfig configs[2] = {config(false), config(true)};
  size_t input_bytes = 0;
  for (const auto &b : built) input_bytes += gpp_align_up(b.size(), gpp::HostArena::kAlign);
  const unsigned result_slots = 16;
  const size_t per_result =
      gpp_align_up(gpp::results_bytes(o.batch, configs[1]), gpp::HostArena::kAlign);
  std::string error;
  auto inputs = gppbench::make_arena(o.cpu_only, o.device, input_bytes + (1u << 20), &error);
  auto outputs = inputs ? gppbench::make_arena(o.cpu_only, o.device,
                                               per_result * result_slots + (1u << 20), &error)
                        : nullptr;
  if (!inputs || !outputs) {
    std::fprintf(stderr, "gpupacket-decap-bench: %s\n", error.c_str());
    return 1;
  }
  std::vector<GppResult *> results;
  for (unsigned i = 0; i < result_slots; ++i)
    results.push_back(static_cast<GppResult *>(outputs->allocate(per_result)));
  // Both rings hold the same batches; each its own settings and references
  // (the records: the tunnel plane is the tests' to check).
  Ring rings[2];
  uint64_t wire = 0, tunnelled = 0;
  for (int d = 0; d < 2; ++d) {
    rings[d].count = o.batch;
    rings[d].cfg = configs[d];
  }
  for (const auto &bytes : built) {
    auto *dst = static_cast<uint8_t *>(inputs->allocate(bytes.size()));
    std::memcpy(dst, bytes.data(), bytes.size());
    Batch b{dst, bytes.size(), o.batch, 0};
    for (uint32_t i = 0; i < o.batch; ++i) b.wire_bytes += gpp_batch_descs(dst)[i].wirelen;
    wire += b.wire_bytes;
    for (int d = 0; d < 2; ++d) {
      rings[d].batches.push_back(b);
      std::vector<uint8_t> out(gpp::results_bytes(o.batch, configs[d]));
      auto *records = reinterpret_cast<GppResult *>(out.data());
      gpp::process_batch_range(dst, configs[d], records, 0, o.batch);
      rings[d].reference.emplace_back(records, records + o.batch);
      if (d == 1)
        for (uint32_t i = 0; i < o.batch; ++i)
          tunnelled += gpp::tunnel_plane(records, o.batch)[i].tunnel_count == o.tunnels.size();
    }
  }
  const double mean_wire = double(wire) / (double(kRingBatches) * o.batch);
  const double tunnel_share = double(tunnelled) / (double(kRingBatches) * o.batch);

  struct Row {
    std::string engine;
    bool checks = true; // its records come back to be checked (not with --no-records)
    std::vector<double> mpps[2];
    uint64_t checked = 0, failed = 0;
    std::string error;
  };
  std::vector<Row> rows;
  std::vector<EngineSpec> specs;
  for (const EngineSpec &s : gppbench::engine_specs(o.cpu_only))
    if (s.name != "persistent-1blk") specs.push_back(s);
  for (const EngineSpec &s : specs) {
    Row row;
    row.engine = s.name;
    auto runner = gppbench::make_runner(s, o.device, gpp::kDefaultNumStreams, o.records, &error);
    if (!runner) {
      row.error = error;
      rows.push_back(row);
      continue;
    }
    row.checks = runner->writes_records();
    for (unsigned round = 0; round < o.rounds && row.error.empty(); ++round)
      for (int k = 0; k < 2; ++k) {
        const int d = (round + k) % 2; // none first in even rounds, inner first in odd ones
        const gppbench::ThroughputResult t =
            gppbench::run_throughput(*runner, rings[d], results, o.seconds);
        if (!t.error.empty()) {
          row.error = t.error;
          break;
        }
        row.mpps[d].push_back(t.mpps());
        row.checked += t.parity_checked;
        row.failed += t.parity_failed;
      }
    rows.push_back(row);
  }

  // The table: medians, the ratio and the target (GPU modes 0.90, cpu 0.80).
  std::string table = "| engine | decap=none Mpps | decap=inner Mpps | inner / none | target | records checked |\n"
                      "|---|---|---|---|---|---|\n";
  std::string csv = "engine,decap_none_mpps,decap_inner_mpps,ratio,target,checked,failed,error\n";
  for (const Row &r : rows) {
    const double none = median(r.mpps[0]), inner = median(r.mpps[1]);
    const double ratio = inner / none;
    const double target = r.engine.rfind("cpu", 0) == 0 ? 0.80 : 0.90;
    const bool met = r.error.empty() && r.failed == 0 && ratio >= target;
    char line[512];
    if (!r.error.empty()) {
      std::snprintf(line, sizeof line, "| %s | failed: %s | | | | |\n", r.engine.c_str(),
                    r.error.c_str());
    } else if (!r.checks) {
      std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.3f | not evaluated | records on the device |\n",
                    r.engine.c_str(), none, inner, ratio);
    } else {
      std::snprintf(line, sizeof line, "| %s | %.2f | %.2f | %.3f | %.2f %s | %llu (%llu differ) |\n",
                    r.engine.c_str(), none, inner, ratio, target, met ? "met" : "**missed**",
                    static_cast<unsigned long long>(r.checked),
                    static_cast<unsigned long long>(r.failed));
    }
    table += line;
    std::snprintf(line, sizeof line, "%s,%.4f,%.4f,%.4f,%.2f,%llu,%llu,\"%s\"\n", r.engine.c_str(),
                  none, inner, ratio, target, static_cast<unsigned long long>(r.checked),
                  static_cast<unsigned long long>(r.failed), r.error.c_str());
    csv += line;
  }
  char head[2048];
  std::snprintf(head, sizeof head,
                "# decap=inner against decap=none\n\n"
                "%s, `%s`, %u cores.\n\n"
                "Batches of %u packets of 100%% tunnelled traffic (%s around 64-byte inner frames "
                "over 1024 flows, %.1f bytes a packet on the wire, %.1f%% walked every level), the "
                "same %u batches for both settings; parse + RSS with L4 checksums verified; "
                "every slot busy, %.1f s a measurement, %u rounds alternating which setting "
                "goes first, medians shown.  Records checked against the CPU core after each "
                "measurement%s.\n\n",
                gppbench::now_utc_text().c_str(), o.command_line.c_str(), std::thread::hardware_concurrency(),
                o.batch, o.traffic.c_str(), mean_wire, 100 * tunnel_share, kRingBatches, o.seconds,
                o.rounds,
                o.records ? "" : " (--no-records: streams, zerocopy and graph leave the records "
                                 "and the tunnel plane on the device; their rows are not checked "
                                 "and not held to the target)");
  const std::string report = std::string(head) + table;
  std::fputs(report.c_str(), stdout);
  if (!o.out.empty()) {
    std::string cmd = "mkdir -p '" + o.out + "'";
    if (std::system(cmd.c_str()) != 0 ||
        !(std::ofstream(o.out + "/report.md") << report) ||
        !(std::ofstream(o.out + "/report.csv") << csv)) {
      std::fprintf(stderr, "gpupacket-decap-bench: cannot write %s/report.{md,csv}\n",
                   o.out.c_str());
      return 1;
    }
  }
  // Failures (an engine that did not run, records that differ) fail the run;
  // a missed target is a figure, not a failure.
  for (const Row &r : rows)
    if (!r.error.empty() || r.failed) return 1;
  return 0;
}
