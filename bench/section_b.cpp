// gpupacket-bench, section B: the grid, engine-only (every engine, profile,
// workload and batch size), the persistent kernel's own split of a batch's
// latency and the CPU/GPU crossover.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

#include "bench_run.h"
#include "device_timing.h"
#include "workloads.h"

namespace gppbench {

namespace {

// report.csv's packet_bytes of a profile: its frame size, 0 for a mix.
uint32_t csv_frame_bytes(const Profile &p) {
  return p.traffic == gpp::TrafficProfile::Small   ? 64
         : p.traffic == gpp::TrafficProfile::Large ? 1500
                                                   : 0;
}

} // namespace

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
          // persistent: the GPU-side p50 by phase (latest block; DeviceTiming::last_device_phases)
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
                      "and the system-scope fence; a batch of at most 768 bytes comes with the "
                      "job, before the clock starts); host - GPU: the doorbell reaching the "
                      "polling warp, the answer reaching the host, and the host's own work.");
    t.notes.push_back("GPU phases (DeviceTiming::last_device_phases), each the latest block's end of it "
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

} // namespace gppbench
