// gpupacket-read-bench: how fast the capture reader turns a file into
// batches, without GStreamer, beside libpcap reading the same file the way
// pcapsrc did before (pcap_next_ex and a staging copy).  Each batch is
// written into one reused buffer, as into a pinned pool that is never short.
//
//   gpupacket-read-bench [--batch N] [--threads LIST] [--repeat N] FILE...
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "capture_reader.h"
#include "worker_pool.h"

namespace {

struct Result {
  double seconds = 0;
  uint64_t packets = 0, bytes = 0;
  std::string error;
};

Result read_all(const std::string &path, uint32_t batch, unsigned threads, bool libpcap_only) {
  using gpp::capture::CaptureReader;
  Result res;
  std::string error;
  CaptureReader::OpenError kind;
  const auto start = std::chrono::steady_clock::now();
  auto reader = CaptureReader::open(path, "", &error, &kind);
  if (!reader) {
    res.error = error;
    return res;
  }
  if (libpcap_only) reader->use_libpcap_only();
  gpp::WorkerPool pool(threads);
  gpp::capture::BatchPlan plan;
  std::vector<uint8_t> out;
  for (;;) {
    const auto step = reader->plan(&plan, batch, size_t{256} << 20);
    if (step != CaptureReader::Step::Batch) {
      if (step == CaptureReader::Step::Error) res.error = reader->error();
      break;
    }
    if (out.size() < plan.size()) out.resize(plan.size() * 2);
    reader->write(plan, out.data(), &pool);
    res.packets += plan.count();
    res.bytes += plan.captured_bytes;
  }
  res.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return res;
}

int usage() {
  std::fprintf(stderr, "usage: gpupacket-read-bench [--batch N] [--threads LIST] [--repeat N] FILE...\n");
  return 2;
}

} // namespace

int main(int argc, char **argv) {
  uint32_t batch = 4096;
  unsigned repeat = 3;
  std::vector<unsigned> thread_counts{1, 2, 4};
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if ((a == "--batch" || a == "--repeat" || a == "--threads") && i + 1 < argc) {
      const std::string v = argv[++i];
      if (a == "--batch") batch = static_cast<uint32_t>(std::strtoul(v.c_str(), nullptr, 10));
      if (a == "--repeat") repeat = static_cast<unsigned>(std::strtoul(v.c_str(), nullptr, 10));
      if (a == "--threads") {
        thread_counts.clear();
        for (size_t at = 0; at < v.size();) {
          size_t end = v.find(',', at);
          if (end == std::string::npos) end = v.size();
          thread_counts.push_back(static_cast<unsigned>(std::strtoul(v.substr(at, end - at).c_str(), nullptr, 10)));
          at = end + 1;
        }
      }
    } else if (!a.empty() && a[0] == '-') {
      return usage();
    } else {
      files.push_back(a);
    }
  }
  if (files.empty() || batch == 0 || repeat == 0) return usage();

  std::printf("| file | reader | threads | Mpps | GB/s (captured bytes) |\n|---|---|---|---|---|\n");
  int status = 0;
  for (const auto &f : files) {
    auto report = [&](const char *name, unsigned threads, bool libpcap_only) {
      Result best;
      for (unsigned r = 0; r < repeat; ++r) {
        Result res = read_all(f, batch, threads, libpcap_only);
        if (!res.error.empty()) {
          std::fprintf(stderr, "%s: %s\n", f.c_str(), res.error.c_str());
          status = 1;
          return;
        }
        if (best.seconds == 0 || res.seconds < best.seconds) best = res;
      }
      std::printf("| %s | %s | %u | %.2f | %.2f |\n", f.c_str(), name, threads,
                  best.packets / best.seconds / 1e6, best.bytes / best.seconds / 1e9);
    };
    report("libpcap + staging copy", 1, true);
    for (unsigned t : thread_counts) report("in place", t, false);
  }
  return status;
}
