// gpupacket-soak: a long run at full rate, memory sampled as it goes.  A
// benchmark, not a test: it prints a table and a curve, and a report with
// --report, and asserts nothing.
//
//   gpupacket-soak [--minutes N] [--interval S] [--mode M] [--profile P]
//                  [--batch-size B] [--acl-rules FILE] [--dpi-patterns FILE]
//                  [--report FILE]
//
// Runs  packettestsrc profile=P batch-size=B ! gpupacketproc mode=M ... ! fakesink
// in this process for N minutes (default 10) and every S seconds (default 10)
// samples the packets done, the rate of the interval, the process's resident
// memory (VmRSS) and pinned bytes (gpupacketproc's stats).  Growth is read
// from the first sample on (the first interval holds the set-up).  The
// plugin is found through GST_PLUGIN_PATH_1_0 as for gst-launch-1.0.
#include <gst/gst.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Options {
  double minutes = 10, interval_s = 10;
  std::string mode = "cpu", profile = "imix", acl, dpi, report;
  unsigned batch_size = 4096;
};

struct Sample {
  double t_s;
  uint64_t packets;
  double mpps;
  double rss_mib;
  double pinned_mib;
};

double rss_mib() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::atof(line.c_str() + 6) / 1024.0;
  return 0;
}

uint64_t stat_u64(GstElement *proc, const char *field) {
  GstStructure *stats = nullptr;
  g_object_get(proc, "stats", &stats, nullptr);
  guint64 v = 0;
  if (stats) gst_structure_get_uint64(stats, field, &v);
  if (stats) gst_structure_free(stats);
  return v;
}

void usage(const char *argv0) {
  std::fprintf(stderr,
               "usage: %s [--minutes N] [--interval S] [--mode M] [--profile P] "
               "[--batch-size B] [--acl-rules FILE] [--dpi-patterns FILE] [--report FILE]\n",
               argv0);
  std::exit(2);
}

Options parse(int argc, char **argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (i + 1 >= argc) usage(argv[0]);
    const char *v = argv[++i];
    if (a == "--minutes") o.minutes = std::atof(v);
    else if (a == "--interval") o.interval_s = std::atof(v);
    else if (a == "--mode") o.mode = v;
    else if (a == "--profile") o.profile = v;
    else if (a == "--batch-size") o.batch_size = static_cast<unsigned>(std::atoi(v));
    else if (a == "--acl-rules") o.acl = v;
    else if (a == "--dpi-patterns") o.dpi = v;
    else if (a == "--report") o.report = v;
    else usage(argv[0]);
  }
  if (o.minutes <= 0 || o.interval_s <= 0) usage(argv[0]);
  return o;
}

// The RSS curve: one row per sample, a bar scaled between the smallest and
// largest sample (so a flat curve shows as flat, and any growth is visible).
std::string curve(const std::vector<Sample> &samples) {
  double lo = samples.front().rss_mib, hi = lo;
  for (const Sample &s : samples) lo = std::min(lo, s.rss_mib), hi = std::max(hi, s.rss_mib);
  std::ostringstream out;
  char line[160];
  for (const Sample &s : samples) {
    const int width = hi > lo ? static_cast<int>(1 + 49 * (s.rss_mib - lo) / (hi - lo)) : 1;
    std::snprintf(line, sizeof line, "%7.0f s %9.1f MiB |%s\n", s.t_s, s.rss_mib,
                  std::string(width, '#').c_str());
    out << line;
  }
  return out.str();
}

// An error message's text, or `otherwise` (no message, or not an error);
// unrefs `msg`.
std::string take_reason(GstMessage *msg, const char *otherwise) {
  std::string text = otherwise;
  if (msg && GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *err = nullptr;
    gst_message_parse_error(msg, &err, nullptr);
    if (err) text = err->message;
    g_clear_error(&err);
  }
  if (msg) gst_message_unref(msg);
  return text;
}

} // namespace

int main(int argc, char **argv) {
  gst_init(&argc, &argv);
  const Options o = parse(argc, argv);
  std::string desc = "packettestsrc profile=" + o.profile +
                     " batch-size=" + std::to_string(o.batch_size) +
                     " ! gpupacketproc name=proc mode=" + o.mode;
  if (!o.acl.empty()) desc += " acl-rules=\"" + o.acl + "\"";
  if (!o.dpi.empty()) desc += " dpi-patterns=\"" + o.dpi + "\"";
  desc += " ! fakesink name=sink sync=false";
  GError *error = nullptr;
  GstElement *pipeline = gst_parse_launch(desc.c_str(), &error);
  if (!pipeline || error) {
    std::fprintf(stderr, "gpupacket-soak: %s\n", error ? error->message : "no pipeline");
    return 1;
  }
  GstElement *proc = gst_bin_get_by_name(GST_BIN(pipeline), "proc");
  GstBus *bus = gst_element_get_bus(pipeline);
  if (gst_element_set_state(pipeline, GST_STATE_PLAYING) == GST_STATE_CHANGE_FAILURE) {
    // The element that refused says why on the bus (e.g. no GPU for the mode).
    std::fprintf(stderr, "gpupacket-soak: the pipeline did not start: %s\n  %s\n", desc.c_str(),
                 take_reason(gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR),
                             "(no element said why)").c_str());
    return 1;
  }
  std::printf("gpupacket-soak: %s\n%.1f minutes, a sample every %.0f s\n\n", desc.c_str(),
              o.minutes, o.interval_s);
  std::printf("%8s %14s %9s %10s %11s\n", "time s", "packets", "Mpps", "RSS MiB", "pinned MiB");

  std::vector<Sample> samples;
  const auto start = std::chrono::steady_clock::now();
  uint64_t last_packets = 0;
  double last_t = 0;
  int rc = 0;
  for (int n = 1; last_t < o.minutes * 60 - 1e-9; ++n) {
    const double due = std::min(n * o.interval_s, o.minutes * 60);
    GstMessage *msg = gst_bus_timed_pop_filtered(
        bus, static_cast<GstClockTime>(std::max(0.0, due - last_t) * GST_SECOND), // a late sample waits 0
        static_cast<GstMessageType>(GST_MESSAGE_ERROR | GST_MESSAGE_EOS));
    if (msg) {
      std::fprintf(stderr, "gpupacket-soak: stopped early: %s\n",
                   take_reason(msg, "end of stream").c_str());
      rc = 1;
      break;
    }
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const uint64_t packets = stat_u64(proc, "packets");
    Sample s{t, packets, (packets - last_packets) / (t - last_t) / 1e6, rss_mib(),
             stat_u64(proc, "pool-bytes-pinned") / 1048576.0};
    samples.push_back(s);
    std::printf("%8.0f %14llu %9.2f %10.1f %11.1f\n", s.t_s, static_cast<unsigned long long>(packets),
                s.mpps, s.rss_mib, s.pinned_mib);
    std::fflush(stdout);
    last_packets = packets;
    last_t = t;
  }
  gst_element_set_state(pipeline, GST_STATE_NULL);
  gst_object_unref(bus);
  gst_object_unref(proc);
  gst_object_unref(pipeline);
  if (samples.size() < 2) return rc ? rc : 1;

  const Sample &first = samples.front(), &last = samples.back();
  char summary[256];
  std::snprintf(summary, sizeof summary,
                "RSS from the first sample to the last: %+.1f MiB (%.1f -> %.1f MiB) over %.0f s; "
                "%.2f Mpps on average",
                last.rss_mib - first.rss_mib, first.rss_mib, last.rss_mib, last.t_s - first.t_s,
                (last.packets - first.packets) / (last.t_s - first.t_s) / 1e6);
  const std::string rss_curve = curve(samples);
  std::printf("\nRSS curve:\n%s\n%s\n", rss_curve.c_str(), summary);
  if (!o.report.empty()) {
    std::ofstream r(o.report);
    r << "# gpupacket-soak\n\n`" << desc << "`, " << o.minutes << " minutes, a sample every "
      << o.interval_s << " s.\n\n| time s | packets | Mpps | RSS MiB | pinned MiB |\n|---|---|---|---|---|\n";
    for (const Sample &s : samples)
      r << "| " << static_cast<long>(s.t_s) << " | " << s.packets << " | " << s.mpps << " | "
        << s.rss_mib << " | " << s.pinned_mib << " |\n";
    r << "\n```\n" << rss_curve << "```\n\n" << summary << "\n";
  }
  return rc;
}
