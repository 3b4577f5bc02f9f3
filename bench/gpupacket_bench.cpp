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
//
// The report's sections are in files of their own (bench_run.h).
#include <cuda_runtime_api.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_common.h"
#include "bench_run.h"
#include "grid.h"
#include "gst_bench.h"
#include "workloads.h"

using namespace gppbench;

namespace {

constexpr int kExitSkip = 77;

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
  run.report.add_meta("date", gppbench::now_utc_text());
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
