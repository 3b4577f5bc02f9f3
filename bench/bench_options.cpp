// gpupacket-bench's options (bench_run.h).
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "bench_engines.h"
#include "bench_run.h"
#include "workloads.h"

namespace gppbench {

namespace {

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

} // namespace

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
  // The engines of section B (engine_specs: the product's modes).
  std::vector<std::string> engines;
  for (const EngineSpec &e : engine_specs(false)) engines.push_back(e.name);
  const std::string rest = join({engines.begin() + 1, engines.end()}, ", ");
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
               "  --engines LIST  only these engines of section B (comma-separated: %s,\n"
               "               %s,\n"
               "               %s = the cpu-Nx1 column)\n"
               "  --sizes LIST only these batch sizes, packets (comma-separated, 1-%u)\n"
               "  --cells LIST only these cells of the grid (comma-separated PROFILE/WORKLOAD,\n"
               "               e.g. pcap-1500B/+et2024); targets without their points read\n"
               "               NOT MEASURED\n"
               "  --no-records streams, zerocopy and graph leave their records on the device\n"
               "               (EngineSettings::records_to_host=false): section B's cost of a\n"
               "               batch without the copy back; those points are not checked\n"
               "               against the CPU, and the targets are not evaluated\n"
               "  --list-modes the engine's modes (cpu, then the GPU modes), one a line, and exit\n"
               "exit: 0 ran, 1 a measurement failed, 2 usage, 3 watchdog, 77 no usable GPU\n",
               gpp::kDefaultNumStreams, engines.front().c_str(), rest.c_str(), kCpuParallelEngine,
               kMaxBenchBatch);
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
    } else if (a == "--list-modes") {
      print_modes(stdout);
      std::exit(0);
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

std::string short_error(const std::string &e) {
  const size_t kMax = 60;
  return "error: " + (e.size() <= kMax ? e : e.substr(0, kMax) + "... (see Errors)");
}

} // namespace gppbench
