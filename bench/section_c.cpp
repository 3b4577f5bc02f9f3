// gpupacket-bench, section C (--gst): the gpupacketproc element in a
// GstHarness, one batch at a time, and in free-running pipelines.
#include <string>
#include <utility>
#include <vector>

#include "bench_run.h"
#include "workloads.h"

namespace gppbench {

namespace {

// Section C's columns: every mode of the product's table (gpp::kModes), the
// latency targets' mode first and cpu last.
constexpr gpp::Mode kElementModeOrder[] = {gpp::Mode::Persistent, gpp::Mode::Streams,
                                           gpp::Mode::Graph, gpp::Mode::ZeroCopy, gpp::Mode::Cpu};
constexpr bool is_mode_order(const gpp::Mode *order, int n) {
  if (n != gpp::kModeCount) return false;
  for (int i = 0; i < n; ++i)
    for (int j = 0; j < i; ++j)
      if (order[i] == order[j]) return false;
  return true;
}
static_assert(is_mode_order(kElementModeOrder, std::size(kElementModeOrder)),
              "section C shows every mode of gpp::kModes once");

std::vector<std::string> element_modes() {
  std::vector<std::string> out;
  for (gpp::Mode m : kElementModeOrder) out.push_back(gpp::mode_name(m));
  return out;
}

PropertyList proc_properties(const Workload &w, const RuleSets &sets) {
  PropertyList props;
  if (const AclSet *acl = sets.find_acl(w.acl)) props.push_back({"acl-rules", acl->path});
  if (const DpiSet *dpi = sets.find_dpi(w.dpi)) {
    props.push_back({"dpi-select", gpp::dpi_select_name(dpi->select)});
    props.push_back({"dpi-patterns", dpi->path});
  }
  return props;
}

// The engine-only figure of the element's mode (cpu: the element's default cpu-threads = 0).
std::string engine_of_element_mode(const std::string &mode) { return mode == "cpu" ? "cpu-all" : mode; }

// A table of section C: a row per workload and batch size, a column per mode.
Table mode_table(const char *id, const std::string &title, const std::vector<std::string> &modes) {
  Table t;
  t.id = id;
  t.title = title;
  t.header = {"workload", "packets"};
  for (const auto &m : modes) t.header.push_back(m);
  return t;
}

} // namespace

void section_c(Run &run, Grid &grid) {
  const std::vector<uint32_t> sizes = run.opt.quick ? std::vector<uint32_t>{64}
                                                    : std::vector<uint32_t>{64, 4096};
  std::vector<std::string> modes = element_modes();
  if (run.opt.cpu_only) modes = {"cpu"};
  const char *profile = "64B";
  // C1: one batch at a time through a GstHarness.
  Table t = mode_table("C-element",
                       "C. gpupacketproc in a GstHarness, 64-byte profile, one batch at a time: "
                       "element stats p50/p99 us (engine-only p99 from B)",
                       modes);
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
  Table p = mode_table("C-pipeline",
                       "C. packettestsrc ! gpupacketproc ! fakesink, profile 64: Mpps (engine-only "
                       "Mpps) | element p99 under load us",
                       modes);
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

} // namespace gppbench
