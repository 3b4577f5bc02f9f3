// gpupacket-pcap-engines: the engine alone on a capture file's packets, the
// figure a pipeline's rate is set against (bench/pipeline-bench.py).
//
//   gpupacket-pcap-engines [--engines LIST] [--seconds S] [--batch-size N] [--device D]
//                          [--acl-rules FILE] [--dpi-patterns PATH] [--dpi-select all|fast-pattern] FILE
//
// Loads every packet of FILE (pcap or pcapng, through libpcap) into batches
// of N packets (default 4096, pcapsrc's batch-size in the benchmark's
// pipelines) in one host arena (pinned where a GPU is usable), untimed; then
// runs each engine of LIST (gpupacket-bench's names; default cpu-1,cpu-all,
// streams,zerocopy,graph,persistent) over the batches in file order, every slot busy, pass after
// pass until S seconds (default 1) have gone, at least one whole pass.  Core
// settings: the element's defaults (default RSS key, symmetric-rss and
// verify-l4-checksum off, no ACL or DPI); an engine named NAME+rules (e.g.
// graph+rules) also runs the ACL and DPI stages with --acl-rules and
// --dpi-patterns, loaded as gpupacketproc's properties of those names load
// them (default action allow).  After the timed passes the first and the last
// batch run once more and their records are compared with the cpu engine's.
// GPU modes are skipped, with the reason, where no GPU is usable.
//
// Output, CSV on stdout: a line `# capture packets=P ip_packets=I file_bytes=B
// batches=N` (I: packets with an IP header, by gpupacket's parser), then
// `engine,status,packets,seconds,mpps,file_gbytes_per_s,note` rows; status is
// ok, skipped or failed.  GB/s counts the capture file's bytes (record
// headers included), as dd and the pipelines are counted.  Exit 0 when every
// engine ran or was skipped, 1 when one failed, 2 bad usage.
#include <pcap/pcap.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

#include "acl_rules.h"
#include "batch_builder.h"
#include "bench_engines.h"
#include "dpi_patterns.h"
#include "engine.h"

namespace {

// One engine a mode of the product's table (gpupacket-bench's names,
// engine_specs): cpu-1, cpu-all, then the GPU modes.
std::vector<std::string> mode_engines() {
  std::vector<std::string> out;
  for (const gppbench::EngineSpec &e : gppbench::engine_specs(false))
    if (!e.persistent_blocks) out.push_back(e.name);
  return out;
}

struct Options {
  std::vector<std::string> engines = mode_engines();
  double seconds = 1.0;
  uint32_t batch_size = 4096;
  int device = 0;
  std::string acl_rules, dpi_patterns;
  gpp::DpiSelect dpi_select = gpp::DpiSelect::All;
  std::string file;
};

// The engines by gpupacket-bench's names (bench_engines.h), and NAME+rules:
// the same engine with --acl-rules / --dpi-patterns.
constexpr char kRulesSuffix[] = "+rules";

bool has_rules_suffix(const std::string &name) {
  const size_t n = sizeof kRulesSuffix - 1;
  return name.size() > n && name.compare(name.size() - n, n, kRulesSuffix) == 0;
}

const gppbench::EngineSpec *find_engine(const std::string &name) {
  static const std::vector<gppbench::EngineSpec> specs = gppbench::engine_specs(false);
  const std::string base = has_rules_suffix(name) ? name.substr(0, name.size() - (sizeof kRulesSuffix - 1)) : name;
  for (const gppbench::EngineSpec &e : specs)
    if (base == e.name) return &e;
  return nullptr;
}

using gppbench::Batch;

struct Capture {
  std::unique_ptr<gpp::HostArena> arena;
  std::vector<Batch> batches;
  uint64_t packets = 0, file_bytes = 0;
};

// Reads the file through libpcap and hands each full batch (and the last) to
// done(bytes, packets, builder); with `build` false only the sizes are
// worked out (builder nullptr).  False with a message on a read error.
template <typename Done>
bool read_batches(const Options &o, bool build, Done done, std::string *error) {
  char errbuf[PCAP_ERRBUF_SIZE] = "";
  pcap_t *p = pcap_open_offline_with_tstamp_precision(o.file.c_str(), PCAP_TSTAMP_PRECISION_NANO, errbuf);
  if (!p) {
    *error = o.file + ": " + errbuf;
    return false;
  }
  const auto linktype = static_cast<uint32_t>(pcap_datalink(p));
  gpp::BatchBuilder builder;
  builder.reset(linktype);
  uint32_t count = 0;
  size_t data_bytes = 0; // each caplen rounded up to GPP_PACKET_ALIGN
  auto flush = [&]() {
    const bool ok = done(gpp_batch_size(count, data_bytes), count, build ? &builder : nullptr);
    builder.reset(linktype);
    count = 0;
    data_bytes = 0;
    return ok;
  };
  pcap_pkthdr *hdr = nullptr;
  const u_char *data = nullptr;
  uint64_t number = 0;
  int rc;
  bool ok = true;
  while (ok && (rc = pcap_next_ex(p, &hdr, &data)) == 1) {
    // Nanosecond precision: tv_usec holds nanoseconds.
    const uint64_t ts = uint64_t(hdr->ts.tv_sec) * 1000000000u + uint64_t(hdr->ts.tv_usec);
    if (build) builder.add(data, hdr->caplen, hdr->len, ts, number + 1);
    ++number;
    data_bytes += gpp_align_up(hdr->caplen, GPP_PACKET_ALIGN);
    if (++count == o.batch_size) ok = flush();
  }
  if (ok && rc == -1) {
    *error = o.file + ": " + pcap_geterr(p);
    ok = false;
  }
  pcap_close(p);
  return ok && (count == 0 || flush());
}

// Two passes over the file: the batches' sizes (to size one arena), then the
// batches written straight into it.
bool load_capture(const Options &o, bool gpu, size_t results_bytes, Capture *cap, std::string *error) {
  // Engines read up to the next 16-byte boundary past a batch.
  auto slot = [](size_t bytes) { return gpp_align_up(bytes + 16, gpp::HostArena::kAlign); };
  size_t total = results_bytes + gpp::HostArena::kAlign;
  if (!read_batches(o, false, [&](size_t bytes, uint32_t count, const gpp::BatchBuilder *) {
        total += slot(bytes);
        cap->packets += count;
        return true;
      }, error))
    return false;
  if (!cap->packets) {
    *error = o.file + ": no packets";
    return false;
  }
  // Pinned where a GPU is usable; the cpu engine needs no pinning.
  cap->arena = gppbench::make_arena(!gpu, o.device, total, error);
  if (!cap->arena) return false;
  if (!read_batches(o, true, [&](size_t bytes, uint32_t count, const gpp::BatchBuilder *b) {
        auto *dst = static_cast<uint8_t *>(cap->arena->allocate(bytes + 16));
        if (!dst) {
          *error = "out of memory for the batches";
          return false;
        }
        b->write(dst);
        cap->batches.push_back({dst, bytes, count, 0});
        return true;
      }, error))
    return false;
  struct stat st{};
  if (stat(o.file.c_str(), &st) == 0) cap->file_bytes = static_cast<uint64_t>(st.st_size);
  return true;
}

// The cpu engine's records of the first and the last batch.
struct References {
  std::vector<GppResult> first, last;
};

struct Row {
  std::string status = "ok", note;
  uint64_t packets = 0;
  double seconds = 0;
};

using Clock = std::chrono::steady_clock;

// Every batch in order, every slot busy, until `seconds` have gone at the end
// of a pass; then the first and the last batch against the cpu engine's records.
Row run_engine(const gppbench::EngineSpec &e, const Options &o, const Capture &cap, GppResult *results,
               const gpp::CoreConfig &cfg, const References &refs) {
  Row row;
  std::string error;
  auto engine = gppbench::make_runner(e, o.device, gpp::kDefaultNumStreams, true, &error);
  if (!engine) {
    row.status = "failed";
    row.note = error;
    return row;
  }
  const unsigned slots = std::min<unsigned>(engine->slots(), gpp::kMaxNumStreams);
  unsigned in_flight = 0;
  uint64_t submitted = 0;
  auto submit = [&](const Batch &b) {
    if (in_flight == slots) {
      if (!engine->wait_oldest(&error)) return false;
      --in_flight;
    }
    GppResult *out = results + size_t(submitted % slots) * o.batch_size;
    if (!engine->submit(b, cfg, out, &error)) return false;
    ++in_flight;
    ++submitted;
    return true;
  };
  auto drain = [&]() {
    for (; in_flight; --in_flight)
      if (!engine->wait_oldest(&error)) return false;
    return true;
  };
  bool ok = true;
  // Warm-up: a few batches (first launches, the persistent kernel's start).
  for (size_t i = 0; ok && i < std::min<size_t>(cap.batches.size(), 2 * slots); ++i) ok = submit(cap.batches[i]);
  ok = ok && drain();
  const auto start = Clock::now();
  double elapsed = 0;
  while (ok) {
    for (const Batch &b : cap.batches) {
      if (!(ok = submit(b))) break;
      row.packets += b.count;
    }
    ok = ok && drain();
    elapsed = std::chrono::duration<double>(Clock::now() - start).count();
    if (elapsed >= o.seconds) break;
  }
  row.seconds = elapsed;
  // The records of the first and the last batch against the cpu engine's.
  auto check = [&](const Batch &b, const std::vector<GppResult> &ref) {
    GppResult *out = results + size_t(submitted % slots) * o.batch_size;
    if (!submit(b) || !drain()) return false;
    if (!engine->writes_records() || std::memcmp(out, ref.data(), ref.size() * sizeof(GppResult)) == 0)
      return true;
    error = "records differ from the cpu engine's";
    return false;
  };
  ok = ok && check(cap.batches.front(), refs.first) && check(cap.batches.back(), refs.last);
  if (!ok) {
    row.status = "failed";
    row.note = error;
  }
  return row;
}

std::vector<std::string> split(const std::string &s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(item);
  return out;
}

} // namespace

int main(int argc, char **argv) {
  setvbuf(stdout, nullptr, _IOLBF, 0);
  Options o;
  bool usage_ok = true;
  for (int i = 1; usage_ok && i < argc; ++i) {
    const std::string a = argv[i];
    const bool takes_value = a == "--engines" || a == "--seconds" || a == "--batch-size" ||
                             a == "--device" || a == "--acl-rules" || a == "--dpi-patterns" ||
                             a == "--dpi-select";
    if (takes_value && i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      return 2;
    }
    if (a == "--engines") o.engines = split(argv[++i]);
    else if (a == "--seconds") o.seconds = std::strtod(argv[++i], nullptr);
    else if (a == "--batch-size") o.batch_size = static_cast<uint32_t>(std::strtoul(argv[++i], nullptr, 10));
    else if (a == "--device") o.device = std::atoi(argv[++i]);
    else if (a == "--acl-rules") o.acl_rules = argv[++i];
    else if (a == "--dpi-patterns") o.dpi_patterns = argv[++i];
    else if (a == "--dpi-select") usage_ok = gpp::dpi_select_from_name(argv[++i], &o.dpi_select);
    else if (a == "--list-modes") {
      gppbench::print_modes(stdout);
      return 0;
    } else if (a.rfind("--", 0) != 0 && o.file.empty()) o.file = a;
    else usage_ok = false;
  }
  bool known = usage_ok && !o.engines.empty();
  for (const std::string &e : o.engines)
    known = known && find_engine(e) && (!has_rules_suffix(e) || !o.acl_rules.empty() || !o.dpi_patterns.empty());
  if (o.file.empty() || !known || o.batch_size < 1 || o.batch_size > 65536 || !(o.seconds >= 0)) {
    std::string engines;
    for (const std::string &e : mode_engines()) engines += (engines.empty() ? "" : ",") + e;
    std::fprintf(stderr,
                 "usage: %s [--engines %s] [--seconds S] "
                 "[--batch-size N] [--device D] [--acl-rules FILE] [--dpi-patterns PATH] "
                 "[--dpi-select all|fast-pattern] FILE\n"
                 "       %s --list-modes   (the engine's modes, one a line)\n",
                 argv[0], engines.c_str(), argv[0]);
    return 2;
  }
  const std::string gpu_why = gpp::gpu_unavailable_reason(o.device);
  const bool gpu = gpu_why.empty();
  const size_t results_count = size_t(gpp::kMaxNumStreams) * o.batch_size;
  Capture cap;
  std::string error;
  if (!load_capture(o, gpu, results_count * sizeof(GppResult), &cap, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  auto *results = static_cast<GppResult *>(cap.arena->allocate(results_count * sizeof(GppResult)));
  if (!results) {
    std::fprintf(stderr, "out of memory for the records\n");
    return 1;
  }

  gpp::CoreConfig plain{};
  std::memcpy(plain.rss_key, gpp::kDefaultRssKey, sizeof plain.rss_key);
  std::shared_ptr<const gpp::AclRuleSet> acl;
  std::shared_ptr<const gpp::DpiPatternSet> dpi;
  if (!o.acl_rules.empty() && !(acl = gpp::load_acl_rules(o.acl_rules, &error))) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  if (!o.dpi_patterns.empty() && !(dpi = gpp::load_dpi_patterns(o.dpi_patterns, &error, o.dpi_select))) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  gpp::CoreConfig rules = plain;
  rules.acl = acl ? acl->blob.data() : nullptr;
  rules.acl_default_action = acl ? GPP_ACL_ALLOW : GPP_ACL_NONE;
  rules.dpi = dpi ? dpi->blob.data() : nullptr;

  // The packets with an IP header (what flow meters count), then each
  // configuration's records of the first and the last batch.
  uint64_t ip_packets = 0;
  std::vector<GppResult> records(o.batch_size);
  auto reference = gpp::make_cpu_engine(0);
  auto run_reference = [&](const Batch &b, const gpp::CoreConfig &cfg) {
    if (reference->submit(b.data, b.bytes, b.count, cfg, records.data(), &error) &&
        reference->wait_oldest(&error))
      return true;
    std::fprintf(stderr, "cpu engine: %s\n", error.c_str());
    return false;
  };
  for (const Batch &b : cap.batches) {
    if (!run_reference(b, plain)) return 1;
    for (uint32_t k = 0; k < b.count; ++k) ip_packets += records[k].ip_version != 0;
  }
  References refs[2];
  for (int r = 0; r < 2; ++r) {
    const gpp::CoreConfig &cfg = r ? rules : plain;
    if (!run_reference(cap.batches.front(), cfg)) return 1;
    refs[r].first.assign(records.begin(), records.begin() + cap.batches.front().count);
    if (!run_reference(cap.batches.back(), cfg)) return 1;
    refs[r].last.assign(records.begin(), records.begin() + cap.batches.back().count);
  }
  reference.reset();

  std::printf("# capture packets=%llu ip_packets=%llu file_bytes=%llu batches=%zu\n",
              static_cast<unsigned long long>(cap.packets), static_cast<unsigned long long>(ip_packets),
              static_cast<unsigned long long>(cap.file_bytes), cap.batches.size());
  std::printf("engine,status,packets,seconds,mpps,file_gbytes_per_s,note\n");
  const double bytes_per_packet = cap.packets ? double(cap.file_bytes) / double(cap.packets) : 0;
  // A note is the row's last field: no commas or line breaks in it.
  auto field = [](std::string text) {
    std::replace(text.begin(), text.end(), ',', ';');
    std::replace(text.begin(), text.end(), '\n', ' ');
    return text;
  };
  bool ok = true;
  for (const std::string &name : o.engines) {
    const bool with_rules = has_rules_suffix(name);
    const gppbench::EngineSpec &e = *find_engine(name);
    if (gpp::is_gpu_mode(e.mode) && !gpu) {
      std::printf("%s,skipped,0,0,,,%s\n", name.c_str(), field(gpu_why).c_str());
      continue;
    }
    const Row r = run_engine(e, o, cap, results, with_rules ? rules : plain, refs[with_rules]);
    ok = ok && r.status == "ok";
    const std::string note = field(r.note);
    if (r.status != "ok") {
      std::printf("%s,%s,0,0,,,%s\n", name.c_str(), r.status.c_str(), note.c_str());
      continue;
    }
    const double pps = r.seconds > 0 ? r.packets / r.seconds : 0;
    std::printf("%s,ok,%llu,%.4f,%.4f,%.4f,%s\n", name.c_str(), static_cast<unsigned long long>(r.packets),
                r.seconds, pps / 1e6, pps * bytes_per_packet / 1e9, note.c_str());
  }
  return ok ? 0 : 1;
}
