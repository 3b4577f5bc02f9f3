// gpupacket-cpu-peers: the field's CPU libraries on the same rules and traffic
// as gpupacket's classification stages, on one core and on all cores, side by
// side: DPDK rte_acl against gpupacket's ACL, Hyperscan against its DPI.
// Checks that both give the same answers on every packet, then prints each
// item's 1-core and N-core packet rates and their ratio.  Needs no GPU; run
// on the GPU host for the report.
//
//   gpupacket-cpu-peers [--quick] [--threads N] [--min-ms MS] [--csv FILE]
//                       [--test-acl PATH] [--pcap FILE [--workload NAME]
//                       [--pcap-packets N]] DATA_DIR
//
// Workers are pinned one per CPU of the set the process was allowed before
// rte_eal_init (peer_workers.h says why); N defaults to all of them.  Every
// timed point runs each worker for at least MS milliseconds (250, --quick 10:
// on the H200 host's VM, 100 ms points of one core varied by up to 30%)
// after set-up, all starting together; N-core Mpps = the sum of per-worker
// rates.
//
// --test-acl PATH (dpdk-test-acl, DPDK's own benchmark) cross-checks the
// harness's rte_acl rate and answers against it (peer_test_acl.h).
//
// --cells (implied by --csv FILE) also measures gpupacket-bench's cells on the
// frames the bench's grid uses (bench/workloads.h cell_traffic): every full
// workload (ACL + DPI: the stress one and the realistic ones, real ClassBench
// 10k sets and ET Open 2024 fast patterns over real, HTTP and dense payloads)
// and each real 10k ACL set alone.  Per cell rte_acl, Hyperscan and the CPU
// pipeline (per packet gpupacket's parse + RSS, then rte_acl, then Hyperscan:
// what a user builds on the CPU from the best parts), each on 1 and N cores,
// the pipeline's answers checked against gpupacket's on every packet.  With
// --csv the figures go to FILE, one row per figure:
// profile,workload,item,threads,packets,mpps,differences, 1-core rows
// (threads=1) before N-core ones; gpupacket-bench --peers-csv reads them.
//
// --pcap FILE (bench/pipeline-bench.py): instead of all the above, rte_acl,
// Hyperscan and the CPU pipeline over the packets of a capture file (its
// IPv4 packets among its first --pcap-packets, default 1,000,000; Ethernet), with the rules of
// --workload (default acl1+et2024: ClassBench acl1 10k and ET Open 2024's
// fast patterns), the pipeline's answers checked against gpupacket's on the
// first 100,000 packets; the figures go to --csv as profile "pcap".
#include <hs/hs.h>
#include <pcap/pcap.h>
#include <rte_acl.h>
#include <rte_eal.h>
#include <rte_errno.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "acl_rules.h"
#include "cpu_engine.h"
#include "dpi_patterns.h"
#include "packet_core.h"
#include "peer_rte_acl.h"
#include "peer_test_acl.h"
#include "peer_workers.h"
#include "traffic_gen.h"
#include "workloads.h"

namespace {

using peers::Point;
using peers::Scaling;
using peers::Tuple;
using peers::Work;
using peers::WorkerPool;
using peers::WorkerSetup;

constexpr size_t kChunk = 64; // items per Work call: rte_acl's burst

struct Options {
  bool quick = false;
  bool cells = false; // the bench's cells (--cells, or --csv)
  unsigned threads = 0; // 0: every allowed CPU
  double min_seconds = 0;
  std::string data, csv, test_acl;
  std::string pcap, workload = "acl1+et2024"; // --pcap: the capture section alone
  size_t pcap_packets = 1000000;
};

bool parse_count(const char *text, unsigned long max, unsigned long *out) {
  char *end = nullptr;
  const unsigned long v = std::strtoul(text, &end, 10);
  if (!*text || *end || v == 0 || v > max) return false;
  *out = v;
  return true;
}

bool parse_options(int argc, char **argv, Options *opt) {
  unsigned long min_ms = 0, value = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool takes_value = a == "--csv" || a == "--test-acl" || a == "--threads" || a == "--min-ms" ||
                             a == "--pcap" || a == "--workload" || a == "--pcap-packets";
    if (takes_value && i + 1 >= argc) {
      std::fprintf(stderr, "%s needs a value\n", a.c_str());
      return false;
    }
    if (a == "--quick") {
      opt->quick = true;
    } else if (a == "--cells") {
      opt->cells = true;
    } else if (a == "--csv") {
      opt->csv = argv[++i];
    } else if (a == "--test-acl") {
      opt->test_acl = argv[++i];
    } else if (a == "--pcap") {
      opt->pcap = argv[++i];
    } else if (a == "--workload") {
      opt->workload = argv[++i];
    } else if (a == "--threads" || a == "--min-ms" || a == "--pcap-packets") {
      if (!parse_count(argv[++i], a == "--threads" ? 4096 : a == "--min-ms" ? 600000 : 1ul << 32, &value)) {
        std::fprintf(stderr, "%s: expected a positive whole number, got \"%s\"\n", a.c_str(), argv[i]);
        return false;
      }
      if (a == "--threads") opt->threads = static_cast<unsigned>(value);
      else if (a == "--pcap-packets") opt->pcap_packets = value;
      else min_ms = value;
    } else if (a.rfind("--", 0) != 0 && opt->data.empty()) {
      opt->data = a;
    } else {
      std::fprintf(stderr, "unknown argument: %s\n", a.c_str());
      return false;
    }
  }
  opt->cells = opt->pcap.empty() && (opt->cells || !opt->csv.empty());
  opt->min_seconds = (min_ms ? min_ms : opt->quick ? 10 : 250) / 1000.0;
  return !opt->data.empty();
}

// ---- the libraries, owned -------------------------------------------------------------------

struct HsDatabaseFree {
  void operator()(hs_database_t *db) const { hs_free_database(db); }
};
using HsDatabase = std::unique_ptr<hs_database_t, HsDatabaseFree>;

// The DPI patterns for Hyperscan, pattern i as id i, each as a regex of \xHH
// escapes (the same bytes; HS_FLAG_CASELESS folds ASCII letters as nocase
// does).  Not the literal API: Hyperscan 5.4.0's hs_compile_lit_multi database
// aborts some scans with HS_UNKNOWN_ERROR, e.g. on the ET Open base64 MZ header
// (sids 2029538, 2051681) among other patterns, and so undercounts
// (tests/unit/test_hyperscan.cpp).
HsDatabase compile_hyperscan(const gpp::DpiPatternSet &dpi, std::string *error) {
  std::vector<std::string> regex(dpi.patterns.size());
  std::vector<const char *> exprs;
  std::vector<unsigned> flags, ids;
  for (size_t i = 0; i < dpi.patterns.size(); ++i) {
    for (unsigned char c : dpi.patterns[i].bytes) {
      char hex[5];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      regex[i] += hex;
    }
    exprs.push_back(regex[i].c_str());
    flags.push_back(dpi.patterns[i].nocase ? HS_FLAG_CASELESS : 0);
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_database_t *db = nullptr;
  hs_compile_error_t *compile_error = nullptr;
  if (hs_compile_multi(exprs.data(), flags.data(), ids.data(), static_cast<unsigned>(exprs.size()),
                       HS_MODE_BLOCK, nullptr, &db, &compile_error) != HS_SUCCESS) {
    *error = std::string("hyperscan: ") + (compile_error ? compile_error->message : "compile failed");
    hs_free_compile_error(compile_error);
    return nullptr;
  }
  return HsDatabase(db);
}

// Per-thread Hyperscan scratch (one per worker: scratch is not shareable).
std::shared_ptr<hs_scratch_t> hyperscan_scratch(const hs_database_t *db, std::string *error) {
  hs_scratch_t *scratch = nullptr;
  if (hs_alloc_scratch(db, &scratch) != HS_SUCCESS) {
    *error = "hs_alloc_scratch failed";
    return nullptr;
  }
  return std::shared_ptr<hs_scratch_t>(scratch, hs_free_scratch);
}

// What Hyperscan reports for one payload, as gpupacket's dpi_hits (every
// occurrence) and dpi_pattern (the smallest id, -1 for none).
struct HsTally {
  uint32_t hits = 0;
  int32_t first = -1;
};

int on_match(unsigned id, unsigned long long, unsigned long long, unsigned, void *ctx) {
  auto *t = static_cast<HsTally *>(ctx);
  ++t->hits;
  if (t->first < 0 || static_cast<int32_t>(id) < t->first) t->first = static_cast<int32_t>(id);
  return 0;
}

HsTally hyperscan_scan(const hs_database_t *db, hs_scratch_t *scratch, const uint8_t *frame,
                       const GppResult &r, hs_error_t *rc = nullptr) {
  HsTally t;
  const hs_error_t e = r.payload_length == 0 ? HS_SUCCESS
                                             : hs_scan(db, reinterpret_cast<const char *>(frame) + r.payload_offset,
                                                       r.payload_length, 0, scratch, on_match, &t);
  if (rc) *rc = e;
  return t;
}

// Occurrences of all patterns in one payload (what gpupacket's dpi_hits counts);
// hs_scan's return into *rc where given (after an error the count is short).
uint32_t hyperscan_hits(const hs_database_t *db, hs_scratch_t *scratch, const uint8_t *frame,
                        const GppResult &r, hs_error_t *rc = nullptr) {
  return hyperscan_scan(db, scratch, frame, r, rc).hits;
}

uint32_t our_hits(const uint8_t *dpi_blob, const uint8_t *frame, GppResult r) {
  gpp::dpi_scan(dpi_blob, frame + r.payload_offset, r.payload_length, r);
  return r.dpi_hits;
}

// ---- measured items: per-worker set-up, then the work on [first, first + count) ---------------
// Each worker writes its answers into a buffer of its own, so the work cannot
// be optimised away and workers share no written cache lines.

using Frames = std::vector<std::vector<uint8_t>>;

// Sized for kChunk: every item here is measured with that chunk.
std::shared_ptr<std::vector<uint32_t>> answer_buffer() {
  return std::make_shared<std::vector<uint32_t>>(kChunk);
}

WorkerSetup rte_acl_item(const rte_acl_ctx *ctx, const std::vector<Tuple> &tuples) {
  return [ctx, base = tuples.data()](unsigned, std::string *) -> Work {
    auto out = answer_buffer();
    return [=](size_t first, size_t count) { peers::classify(ctx, base, first, count, out->data()); };
  };
}

WorkerSetup our_acl_item(const uint8_t *blob, const std::vector<GppResult> &parsed) {
  return [blob, base = parsed.data()](unsigned, std::string *) -> Work {
    auto out = answer_buffer();
    return [=](size_t first, size_t count) {
      for (size_t i = 0; i < count; ++i) (*out)[i] = gpp::acl_classify(blob, base[first + i]);
    };
  };
}

WorkerSetup hyperscan_item(const hs_database_t *db, const Frames &frames,
                           const std::vector<GppResult> &parsed) {
  return [db, &frames, &parsed](unsigned, std::string *error) -> Work {
    auto scratch = hyperscan_scratch(db, error);
    if (!scratch) return nullptr;
    auto out = answer_buffer();
    return [=, &frames, &parsed](size_t first, size_t count) {
      for (size_t i = 0; i < count; ++i)
        (*out)[i] = hyperscan_hits(db, scratch.get(), frames[first + i].data(), parsed[first + i]);
    };
  };
}

WorkerSetup our_dpi_item(const uint8_t *blob, const Frames &frames, const std::vector<GppResult> &parsed) {
  return [blob, &frames, &parsed](unsigned, std::string *) -> Work {
    auto out = answer_buffer();
    return [=, &frames, &parsed](size_t first, size_t count) {
      for (size_t i = 0; i < count; ++i) (*out)[i] = our_hits(blob, frames[first + i].data(), parsed[first + i]);
    };
  };
}

// ---- answers, once and untimed ------------------------------------------------------------------

struct AclAnswers {
  size_t differences = 0, matched = 0;
};

AclAnswers compare_acl(const rte_acl_ctx *ctx, const gpp::AclRuleSet &acl, const std::vector<Tuple> &tuples,
                       const std::vector<GppResult> &parsed) {
  std::vector<uint32_t> theirs(tuples.size());
  peers::classify(ctx, tuples.data(), 0, tuples.size(), theirs.data());
  AclAnswers a;
  for (size_t i = 0; i < tuples.size(); ++i) {
    const uint32_t ours = gpp::acl_classify(acl.blob.data(), parsed[i]);
    a.differences += ours != peers::rule_of(theirs[i]);
    a.matched += ours != gpp::kAclNoRule;
  }
  return a;
}

struct DpiAnswers {
  size_t differences = 0, with_hits = 0;
};

bool compare_dpi(const hs_database_t *db, const gpp::DpiPatternSet &dpi, const Frames &frames,
                 const std::vector<GppResult> &parsed, DpiAnswers *a, std::string *error) {
  auto scratch = hyperscan_scratch(db, error);
  if (!scratch) return false;
  for (size_t i = 0; i < frames.size(); ++i) {
    hs_error_t rc = HS_SUCCESS;
    const uint32_t theirs = hyperscan_hits(db, scratch.get(), frames[i].data(), parsed[i], &rc);
    if (rc != HS_SUCCESS) { // the timed runs scan the same payloads: this check covers them
      *error = "hs_scan failed (" + std::to_string(rc) + ") on payload " + std::to_string(i);
      return false;
    }
    a->differences += theirs != our_hits(dpi.blob.data(), frames[i].data(), parsed[i]);
    a->with_hits += theirs > 0;
  }
  return true;
}

// ---- reporting ----------------------------------------------------------------------------------

// Every worker of every timed point stayed on its own CPU.
class PinCheck {
public:
  explicit PinCheck(const WorkerPool &pool) : cpus_(pool.cpus()), seen_(pool.size()) {}
  void add(const Point &p) {
    if (!p.error.empty()) return;
    ok_ = ok_ && p.pinned_ok();
    for (size_t w = 0; w < p.workers.size(); ++w)
      for (int c : p.workers[w].seen)
        if (std::find(seen_[w].begin(), seen_[w].end(), c) == seen_[w].end()) seen_[w].push_back(c);
  }
  void add(const Scaling &s) {
    add(s.one);
    add(s.all);
  }
  // One line per worker: its CPU and where sched_getcpu() found it.
  bool report() const {
    std::printf("\nWorkers (pinned with pthread_setaffinity_np, sched_getcpu() sampled after every %zu items):\n",
                kChunk);
    for (size_t w = 0; w < cpus_.size(); ++w) {
      auto seen = seen_[w];
      std::sort(seen.begin(), seen.end());
      std::printf("  worker %zu: CPU %d, ran on CPU %s\n", w, cpus_[w], peers::cpu_list(seen).c_str());
    }
    std::printf("  pinning: %s\n", ok_ ? "OK, every worker only on its own CPU, CPUs distinct"
                                       : "FAIL, a worker ran on another CPU than its own");
    return ok_;
  }

private:
  std::vector<int> cpus_;
  std::vector<std::vector<int>> seen_;
  bool ok_ = true;
};

void print_header(unsigned n) {
  std::printf("%-34s %9s %12s %12s %8s  %s\n", "item", "packets", "1-core Mpps",
              (std::to_string(n) + "-core Mpps").c_str(), "scaling", "agreement");
}

bool print_row(const Scaling &s, const std::string &agreement) {
  if (!s.ok()) {
    std::printf("%-34s FAILED: %s\n", s.name.c_str(), (s.one.error.empty() ? s.all.error : s.one.error).c_str());
    return false;
  }
  std::printf("%-34s %9zu %12.3f %12.3f %7.2fx  %s\n", s.name.c_str(), s.items, s.one.mpps(), s.all.mpps(),
              s.scaling(), agreement.c_str());
  return true;
}

// ---- the CPU pipeline: what a user builds on the CPU from the best parts ----------------------
// Per packet gpupacket's parse + RSS (the core without its ACL and DPI, RSS by
// the key's byte table as the cpu engine hashes: a NIC would give it free), then
// rte_acl on the 5-tuple (bursts of 64, as DPDK applications classify), then
// Hyperscan over the TCP/UDP payload (one hs_scan per payload, as an IDS
// scans a packet).  Its answers are checked against gpupacket's full
// workload on every packet; any difference fails the run.

struct PipelineInput {
  const Frames *frames;
  gpp::CoreConfig parse; // parse + RSS only
  const rte_acl_ctx *acl;
  const hs_database_t *dpi;
};

// One chunk through the pipeline: records and answers into the caller's buffers.
hs_error_t pipeline_chunk(const PipelineInput &in, size_t first, size_t count, GppResult *records,
                          Tuple *tuples, uint32_t *rules, HsTally *tallies, hs_scratch_t *scratch) {
  const gpp::detail::RssTable &rss = gpp::host_rss_table(in.parse.rss_key);
  for (size_t i = 0; i < count; ++i) {
    const std::vector<uint8_t> &f = (*in.frames)[first + i];
    const auto len = static_cast<uint32_t>(f.size());
    gpp::process_packet(f.data(), len, len, GPP_LINKTYPE_ETHERNET, first + i + 1, 0, in.parse, records[i],
                        gpp::ClassifyStages::kInline, &rss);
    tuples[i] = peers::tuple_of(records[i]);
  }
  if (in.acl) peers::classify(in.acl, tuples, 0, count, rules);
  hs_error_t status = HS_SUCCESS;
  if (in.dpi)
    for (size_t i = 0; i < count; ++i) {
      hs_error_t rc = HS_SUCCESS;
      tallies[i] = hyperscan_scan(in.dpi, scratch, (*in.frames)[first + i].data(), records[i], &rc);
      if (rc != HS_SUCCESS) status = rc;
    }
  return status;
}

WorkerSetup pipeline_item(const PipelineInput &in) {
  return [in](unsigned, std::string *error) -> Work {
    std::shared_ptr<hs_scratch_t> scratch;
    if (in.dpi && !(scratch = hyperscan_scratch(in.dpi, error))) return nullptr;
    struct Buffers {
      GppResult records[kChunk];
      Tuple tuples[kChunk];
      uint32_t rules[kChunk];
      HsTally tallies[kChunk];
    };
    auto b = std::make_shared<Buffers>();
    return [in, b, scratch](size_t first, size_t count) {
      pipeline_chunk(in, first, count, b->records, b->tuples, b->rules, b->tallies, scratch.get());
    };
  };
}

// What gpupacket's own records of a cell show: packets whose answers the
// pipeline's differ from, and the DPI density (occurrences over payload bytes).
struct CellCheck {
  size_t differences = 0;
  uint64_t dpi_hits = 0, payload_bytes = 0;
};

// The pipeline's answers against gpupacket's records of the full workload.
bool compare_pipeline(const PipelineInput &in, const gpp::CoreConfig &full, CellCheck *check,
                      std::string *error) {
  std::shared_ptr<hs_scratch_t> scratch;
  if (in.dpi && !(scratch = hyperscan_scratch(in.dpi, error))) return false;
  const Frames &frames = *in.frames;
  GppResult records[kChunk];
  Tuple tuples[kChunk];
  uint32_t rules[kChunk];
  HsTally tallies[kChunk];
  *check = CellCheck{};
  for (size_t first = 0; first < frames.size(); first += kChunk) {
    const size_t count = std::min(kChunk, frames.size() - first);
    const hs_error_t rc = pipeline_chunk(in, first, count, records, tuples, rules, tallies, scratch.get());
    if (rc != HS_SUCCESS) {
      *error = "hs_scan failed (" + std::to_string(rc) + ") in packets " + std::to_string(first) + "..";
      return false;
    }
    for (size_t i = 0; i < count; ++i) {
      const std::vector<uint8_t> &f = frames[first + i];
      const auto len = static_cast<uint32_t>(f.size());
      GppResult ours{};
      gpp::process_packet(f.data(), len, len, GPP_LINKTYPE_ETHERNET, first + i + 1, 0, full, ours);
      bool same = ours.rss_hash == records[i].rss_hash;
      if (in.acl) same = same && static_cast<uint32_t>(ours.acl_rule) == peers::rule_of(rules[i]);
      if (in.dpi) same = same && ours.dpi_hits == tallies[i].hits && ours.dpi_pattern == tallies[i].first;
      check->differences += !same;
      if (ours.dpi_scanned && ours.payload_length) {
        check->dpi_hits += ours.dpi_hits;
        check->payload_bytes += ours.payload_length;
      }
    }
  }
  return true;
}

// ---- the cells of gpupacket-bench's grids ------------------------------------------------------
// Every full workload (ACL + DPI) and every realistic cell, on the frames the
// bench's grid uses for it (gppbench::cell_traffic), one row per figure into
// the CSV: profile,workload,item,threads,packets,mpps,differences.

size_t cell_packets(const Options &opt, const gppbench::Cell &c) {
  if (opt.quick) return 2000;
  switch (c.profile->traffic) {
  case gpp::TrafficProfile::Small: return 200000;
  case gpp::TrafficProfile::Large: return 50000;
  default: return 100000;
  }
}

class CsvOut {
public:
  explicit CsvOut(const std::string &path) : f_(path.empty() ? nullptr : std::fopen(path.c_str(), "w")) {
    if (f_) std::fprintf(f_, "profile,workload,item,threads,packets,mpps,differences\n");
  }
  ~CsvOut() {
    if (f_) std::fclose(f_);
  }
  bool ok() const { return f_ != nullptr; }
  void row(const char *profile, const char *workload, const char *item, unsigned threads, size_t packets,
           double mpps, size_t differences) {
    if (f_)
      std::fprintf(f_, "%s,%s,%s,%u,%zu,%.6g,%zu\n", profile, workload, item, threads, packets, mpps, differences);
  }
  // The 1-core row, then the all-core one (gpupacket-bench keeps both).
  void add(const char *profile, const char *workload, const char *item, const Scaling &s, unsigned n,
           size_t differences) {
    row(profile, workload, item, 1, s.items, s.one.mpps(), differences);
    if (n > 1) row(profile, workload, item, n, s.items, s.all.mpps(), differences);
  }
  void add_combined(const gppbench::Cell &c, const Scaling &a, const Scaling &h, unsigned n, size_t differences) {
    auto combined = [](const Point &x, const Point &y) { return 1 / (1 / x.mpps() + 1 / y.mpps()); };
    row(c.profile->name, c.workload->name, "rte_acl+hyperscan", 1, a.items, combined(a.one, h.one), differences);
    if (n > 1)
      row(c.profile->name, c.workload->name, "rte_acl+hyperscan", n, a.items, combined(a.all, h.all), differences);
  }
  bool close() {
    FILE *f = f_;
    f_ = nullptr;
    return f && std::fclose(f) == 0;
  }

private:
  FILE *f_;
};

bool cells_section(const Options &opt, WorkerPool &pool, PinCheck &pins, CsvOut &csv) {
  gppbench::RuleSets sets;
  std::string error;
  const auto t0 = std::chrono::steady_clock::now();
  if (!gppbench::load_rule_sets(opt.data, &sets, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return false;
  }
  std::printf("\nRule sets (loaded in %.2f s):\n",
              std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  for (const auto &kv : sets.acl) std::printf("  ACL %-9s %s\n", kv.first.c_str(), kv.second.description.c_str());
  // Hyperscan is built from the same patterns: its compile time beside ours.
  std::map<std::string, HsDatabase> hs;
  for (const auto &kv : sets.dpi) {
    const auto t = std::chrono::steady_clock::now();
    HsDatabase db = compile_hyperscan(*kv.second.patterns, &error);
    if (!db) {
      std::fprintf(stderr, "%s: %s\n", kv.first.c_str(), error.c_str());
      return false;
    }
    std::printf("  DPI %-9s %s; gpupacket automata %.2f s, Hyperscan compile %.2f s\n", kv.first.c_str(),
                kv.second.description.c_str(), kv.second.load_seconds,
                std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count());
    hs[kv.first] = std::move(db);
  }
  std::map<std::string, peers::RteAcl> acl_ctx;
  for (const auto &kv : sets.acl) {
    acl_ctx[kv.first] = peers::build_rte_acl(*kv.second.rules, ("peers-" + kv.first).c_str(), &error);
    if (!acl_ctx[kv.first]) {
      std::fprintf(stderr, "%s: %s\n", kv.first.c_str(), error.c_str());
      return false;
    }
  }
  std::vector<gppbench::Cell> cells;
  for (const gppbench::Cell &c : gppbench::stress_cells())
    if (c.workload->acl && c.workload->dpi) cells.push_back(c);
  for (const gppbench::Cell &c : gppbench::realistic_cells())
    if (c.workload->acl || c.workload->dpi) cells.push_back(c); // parse+rss has no peer

  const unsigned n = pool.size();
  std::printf("\nThe bench's cells on their own frames, Mpps on 1 / %u cores (scaling); pipeline = "
              "gpupacket parse + RSS, rte_acl, Hyperscan per packet\n", n);
  std::printf("%-12s %-12s %8s %8s %26s %26s %26s  %s\n", "profile", "workload", "packets", "hits/KiB",
              "rte_acl 1c / Nc", "Hyperscan 1c / Nc", "pipeline 1c / Nc", "differences");
  bool ok = true;
  for (const gppbench::Cell &c : cells) {
    const gppbench::Workload &w = *c.workload;
    const size_t packets = cell_packets(opt, c);
    const Frames frames = gppbench::cell_traffic(sets, c, packets);
    const gpp::CoreConfig full = gppbench::workload_config(w, sets);
    gpp::CoreConfig parse = full;
    parse.acl = nullptr;
    parse.dpi = nullptr;
    parse.acl_default_action = GPP_ACL_NONE;
    std::vector<GppResult> parsed(packets);
    std::vector<Tuple> tuples(packets);
    for (size_t i = 0; i < packets; ++i) {
      const auto len = static_cast<uint32_t>(frames[i].size());
      gpp::process_packet(frames[i].data(), len, len, GPP_LINKTYPE_ETHERNET, i + 1, 0, parse, parsed[i]);
      tuples[i] = peers::tuple_of(parsed[i]);
    }
    PipelineInput in{&frames, parse, w.acl ? acl_ctx.at(w.acl).get() : nullptr, w.dpi ? hs.at(w.dpi).get() : nullptr};
    CellCheck check;
    if (!compare_pipeline(in, full, &check, &error)) {
      std::fprintf(stderr, "%s %s: %s\n", c.profile->name, w.name, error.c_str());
      return false;
    }
    const size_t differences = check.differences;
    ok = ok && differences == 0;
    std::vector<Scaling> rows;
    if (w.acl) rows.push_back(pool.scaling("rte_acl", packets, kChunk, rte_acl_item(in.acl, tuples), opt.min_seconds));
    if (w.dpi)
      rows.push_back(pool.scaling("hyperscan", packets, kChunk, hyperscan_item(in.dpi, frames, parsed), opt.min_seconds));
    if (w.acl && w.dpi) rows.push_back(pool.scaling("pipeline", packets, kChunk, pipeline_item(in), opt.min_seconds));
    std::string cols[3] = {"-", "-", "-"};
    for (const Scaling &s : rows) {
      pins.add(s);
      if (!s.ok()) {
        std::fprintf(stderr, "%s %s %s: %s\n", c.profile->name, w.name, s.name.c_str(),
                     (s.one.error.empty() ? s.all.error : s.one.error).c_str());
        return false;
      }
      char cell[64];
      std::snprintf(cell, sizeof cell, "%8.3f / %8.3f (%5.2fx)", s.one.mpps(), s.all.mpps(), s.scaling());
      cols[s.name == "rte_acl" ? 0 : s.name == "hyperscan" ? 1 : 2] = cell;
      csv.add(c.profile->name, w.name, s.name.c_str(), s, n, differences);
    }
    if (w.acl && w.dpi) csv.add_combined(c, rows[0], rows[1], n, differences);
    const std::string density = check.payload_bytes
                                    ? std::to_string(static_cast<int>(check.dpi_hits * 1024.0 / check.payload_bytes + 0.5))
                                    : "-";
    std::printf("%-12s %-12s %8zu %8s %26s %26s %26s  %zu\n", c.profile->name, w.name, packets, density.c_str(),
                cols[0].c_str(), cols[1].c_str(), cols[2].c_str(), differences);
  }
  return ok;
}

// ---- a capture file's packets -------------------------------------------------------------------
// rte_acl, Hyperscan and the CPU pipeline over the first packets of a capture,
// with a workload's rules: the DPI comparison of bench/pipeline-bench.py.

bool load_frames(const Options &opt, Frames *frames, std::string *error) {
  char errbuf[PCAP_ERRBUF_SIZE] = "";
  pcap_t *p = pcap_open_offline(opt.pcap.c_str(), errbuf);
  if (!p) {
    *error = opt.pcap + ": " + errbuf;
    return false;
  }
  if (pcap_datalink(p) != DLT_EN10MB) {
    pcap_close(p);
    *error = opt.pcap + ": not an Ethernet capture";
    return false;
  }
  pcap_pkthdr *hdr = nullptr;
  const u_char *data = nullptr;
  int rc;
  while (frames->size() < opt.pcap_packets && (rc = pcap_next_ex(p, &hdr, &data)) == 1)
    frames->emplace_back(data, data + hdr->caplen);
  if (rc == -1) *error = opt.pcap + ": " + pcap_geterr(p);
  pcap_close(p);
  if (rc != -1 && frames->empty()) *error = opt.pcap + ": no packets";
  return error->empty();
}

bool capture_section(const Options &opt, WorkerPool &pool, PinCheck &pins, CsvOut &csv) {
  const gppbench::Workload *w = gppbench::find_workload(opt.workload);
  if (!w || !w->acl || !w->dpi) {
    std::fprintf(stderr, "--workload %s: not a workload with ACL and DPI (e.g. acl1+et2024)\n",
                 opt.workload.c_str());
    return false;
  }
  std::string error;
  Frames frames;
  gppbench::RuleSets sets;
  if (!load_frames(opt, &frames, &error) || !gppbench::load_rule_sets(opt.data, &sets, &error, w->realistic)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return false;
  }
  peers::RteAcl acl = peers::build_rte_acl(*sets.find_acl(w->acl)->rules, "peers-pcap", &error);
  HsDatabase hs = acl ? compile_hyperscan(*sets.find_dpi(w->dpi)->patterns, &error) : nullptr;
  if (!acl || !hs) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return false;
  }
  const gpp::CoreConfig full = gppbench::workload_config(*w, sets);
  gpp::CoreConfig parse = full;
  parse.acl = nullptr;
  parse.dpi = nullptr;
  parse.acl_default_action = GPP_ACL_NONE;
  // The IPv4 packets alone: the harness's rte_acl context holds the IPv4
  // rules and classifies IPv4 5-tuples (an application would run a second
  // context for IPv6 and skip what is not IP).
  const size_t read = frames.size();
  std::vector<GppResult> parsed;
  std::vector<Tuple> tuples;
  size_t kept = 0;
  for (size_t i = 0; i < read; ++i) {
    const auto len = static_cast<uint32_t>(frames[i].size());
    GppResult r;
    gpp::process_packet(frames[i].data(), len, len, GPP_LINKTYPE_ETHERNET, i + 1, 0, parse, r);
    if (r.ip_version != 4 || !(r.ip_flags & GPP_IP_HEADER_PARSED)) continue;
    frames[kept++].swap(frames[i]);
    parsed.push_back(r);
    tuples.push_back(peers::tuple_of(r));
  }
  frames.resize(kept);
  const size_t packets = kept;
  if (!packets) {
    std::fprintf(stderr, "%s: no IPv4 packets\n", opt.pcap.c_str());
    return false;
  }
  // The answers on the first packets, untimed (the whole capture would take
  // longer than the measurement).
  const Frames checked(frames.begin(), frames.begin() + std::min<size_t>(packets, 100000));
  CellCheck check;
  if (!compare_pipeline({&checked, parse, acl.get(), hs.get()}, full, &check, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return false;
  }
  const PipelineInput in{&frames, parse, acl.get(), hs.get()};
  const unsigned n = pool.size();
  std::printf("\n%s: %zu IPv4 packets of the first %zu, workload %s; Mpps on 1 / %u cores (scaling); "
              "%zu differences from gpupacket's answers on the first %zu\n",
              opt.pcap.c_str(), packets, read, w->name, n, check.differences, checked.size());
  const Scaling rows[] = {
      pool.scaling("rte_acl", packets, kChunk, rte_acl_item(in.acl, tuples), opt.min_seconds),
      pool.scaling("hyperscan", packets, kChunk, hyperscan_item(in.dpi, frames, parsed), opt.min_seconds),
      pool.scaling("pipeline", packets, kChunk, pipeline_item(in), opt.min_seconds),
  };
  bool ok = check.differences == 0;
  for (const Scaling &s : rows) {
    pins.add(s);
    ok = print_row(s, s.name == "pipeline" ? "parse + RSS, rte_acl, Hyperscan" : "") && ok;
    csv.add("pcap", w->name, s.name.c_str(), s, n, check.differences);
  }
  return ok;
}

// ---- the run ----------------------------------------------------------------------------------------

int run(const Options &opt, const std::vector<int> &allowed) {
  unsigned n = opt.threads ? opt.threads : static_cast<unsigned>(allowed.size());
  if (n > allowed.size()) {
    // One worker per CPU or the figures mean nothing: measure what the machine has.
    std::printf("WARNING: --threads %u but only %zu CPUs allowed (%s): measuring on %zu workers\n", n,
                allowed.size(), peers::cpu_list(allowed).c_str(), allowed.size());
    n = static_cast<unsigned>(allowed.size());
  }
  WorkerPool pool(std::vector<int>(allowed.begin(), allowed.begin() + n));
  if (!pool.ok()) {
    std::fprintf(stderr, "worker pool: %s\n", pool.error().c_str());
    return 1;
  }
  PinCheck pins(pool);
  CsvOut csv(opt.csv);
  if (!opt.csv.empty() && !csv.ok()) {
    std::fprintf(stderr, "%s: cannot write: %s\n", opt.csv.c_str(), std::strerror(errno));
    return 1;
  }

  // The CSV written, the pinning checked, the verdict.
  auto finish = [&](bool ok) {
    if (!opt.csv.empty() && !csv.close()) {
      std::fprintf(stderr, "%s: write failed\n", opt.csv.c_str());
      ok = false;
    }
    ok = pins.report() && ok;
    std::printf("\n%s\n", ok ? "PASS" : "FAIL");
    return ok ? 0 : 1;
  };
  if (!opt.pcap.empty()) return finish(capture_section(opt, pool, pins, csv));

  std::string error;
  auto acl = gpp::load_acl_rules(opt.data + "/acl/classbench_acl1_1k.rules", &error);
  auto dpi = acl ? gpp::load_dpi_patterns(opt.data + "/dpi/et_open_emerging-scan.rules", &error) : nullptr;
  if (!acl || !dpi) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }

  // Traffic: 64-byte IPv4 headers, half drawn from the rules; 1500-byte
  // payloads, half carrying a pattern.
  const size_t packets = opt.quick ? 20000 : 1000000;
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
  std::vector<GppResult> parsed(packets);
  std::vector<Tuple> tuples(packets);
  {
    gpp::TrafficSpec spec;
    spec.profile = gpp::TrafficProfile::Small;
    spec.flows = 4096;
    spec.acl = acl.get();
    spec.acl_rate = 0.5;
    gpp::TrafficGenerator gen(spec);
    for (size_t i = 0; i < packets; ++i) {
      const auto &f = gen.next();
      const auto len = static_cast<uint32_t>(f.size());
      gpp::process_packet(f.data(), len, len, GPP_LINKTYPE_ETHERNET, i + 1, 0, cfg, parsed[i]);
      tuples[i] = peers::tuple_of(parsed[i]);
    }
  }
  Frames frames;
  std::vector<GppResult> payload_parsed(opt.quick ? 2000 : 100000);
  {
    gpp::TrafficSpec spec;
    spec.profile = gpp::TrafficProfile::Large;
    spec.dpi = dpi.get();
    spec.dpi_rate = 0.5;
    gpp::TrafficGenerator gen(spec);
    for (size_t i = 0; i < payload_parsed.size(); ++i) {
      frames.push_back(gen.next());
      const auto len = static_cast<uint32_t>(frames[i].size());
      gpp::process_packet(frames[i].data(), len, len, GPP_LINKTYPE_ETHERNET, i + 1, 0, cfg, payload_parsed[i]);
    }
  }
  peers::RteAcl ctx = peers::build_rte_acl(*acl, "gpupacket-peers", &error);
  HsDatabase db = ctx ? compile_hyperscan(*dpi, &error) : nullptr;
  if (!ctx || !db) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }

  // Answers first, untimed: both classifiers agree on every header, both scanners on every payload.
  const AclAnswers acl_answers = compare_acl(ctx.get(), *acl, tuples, parsed);
  DpiAnswers dpi_answers;
  if (!compare_dpi(db.get(), *dpi, frames, payload_parsed, &dpi_answers, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }

  std::printf("\nCPU peers: ClassBench acl1 (%zu rules) on 64-byte headers, ET Open scan (%zu patterns) on "
              "1500-byte payloads\n1-core = the median of one worker alone on the first, middle and last CPU; "
              "%u-core = workers on CPUs %s; each worker >= %.0f ms per point; N-core Mpps = sum of "
              "per-worker rates\n",
              acl->rules.size(), dpi->patterns.size(), n, peers::cpu_list(pool.cpus()).c_str(),
              opt.min_seconds * 1e3);
  print_header(n);
  const std::vector<std::pair<Scaling, std::string>> rows = {
      {pool.scaling("DPDK rte_acl (5-tuple, burst 64)", packets, kChunk, rte_acl_item(ctx.get(), tuples),
                    opt.min_seconds),
       "reference"},
      {pool.scaling("gpupacket ACL (tuple space)", packets, kChunk, our_acl_item(acl->blob.data(), parsed),
                    opt.min_seconds),
       std::to_string(acl_answers.differences) + " differences, " + std::to_string(acl_answers.matched) +
           " matched"},
      {pool.scaling("Hyperscan (1500-byte payloads)", frames.size(), kChunk,
                    hyperscan_item(db.get(), frames, payload_parsed), opt.min_seconds),
       "reference"},
      {pool.scaling("gpupacket DPI (Aho-Corasick)", frames.size(), kChunk,
                    our_dpi_item(dpi->blob.data(), frames, payload_parsed), opt.min_seconds),
       std::to_string(dpi_answers.differences) + " differences, " + std::to_string(dpi_answers.with_hits) +
           " with hits"},
  };
  bool ok = acl_answers.differences == 0 && dpi_answers.differences == 0;
  const char *const csv_items[][3] = {{"64B-basic", "acl1k", "rte_acl"},
                                      {"64B-basic", "acl1k", "gpupacket-acl"},
                                      {"1500B-basic", "scan", "hyperscan"},
                                      {"1500B-basic", "scan", "gpupacket-dpi"}};
  for (size_t i = 0; i < rows.size(); ++i) {
    ok = print_row(rows[i].first, rows[i].second) && ok;
    pins.add(rows[i].first);
    csv.add(csv_items[i][0], csv_items[i][1], csv_items[i][2], rows[i].first, n,
            i < 2 ? acl_answers.differences : dpi_answers.differences);
  }
  std::printf("per worker at %u cores, Mpps (worker: CPU):\n", n);
  for (const auto &row : rows) {
    std::string line;
    char cell[48];
    for (size_t w = 0; w < row.first.all.workers.size(); ++w) {
      const peers::WorkerRun &r = row.first.all.workers[w];
      std::snprintf(cell, sizeof cell, "  %zu:%d %.3f", w, r.cpu, r.rate() / 1e6);
      line += cell;
    }
    std::printf("  %-34s%s\n", row.first.name.c_str(), line.c_str());
  }

  if (opt.test_acl.empty()) {
    std::printf("\ndpdk-test-acl cross-check: skipped (no --test-acl PATH)\n");
  } else {
    peers::TestAclOptions t;
    t.binary = opt.test_acl;
    t.data_dir = opt.data;
    t.min_seconds = opt.min_seconds;
    peers::TestAclResult r;
    ok = peers::test_acl_cross_check(pool, *acl, t, &r) && ok;
    // The trace's figures: rte_acl on one core, by dpdk-test-acl and by the harness.
    if (r.test_acl_mpps > 0) {
      csv.row("trace", "acl1k", "dpdk-test-acl", 1, r.lines, r.test_acl_mpps, r.differences);
      csv.row("trace", "acl1k", "rte_acl", 1, r.lines, r.harness_mpps, r.differences);
    }
  }
  if (opt.cells) ok = cells_section(opt, pool, pins, csv) && ok;
  return finish(ok);
}

} // namespace

int main(int argc, char **argv) {
  Options opt;
  if (!parse_options(argc, argv, &opt)) {
    std::fprintf(stderr,
                 "usage: %s [--quick] [--threads N] [--min-ms MS] [--cells] [--csv FILE] [--test-acl PATH]\n"
                 "       [--pcap FILE [--workload NAME] [--pcap-packets N]] DATA_DIR\n",
                 argv[0]);
    return 2;
  }
  // Before rte_eal_init, which narrows the calling thread to its main lcore.
  const std::vector<int> allowed = peers::allowed_cpus();
  if (allowed.empty()) {
    std::fprintf(stderr, "sched_getaffinity failed: %s\n", std::strerror(errno));
    return 1;
  }
  // EAL without hugepages, PCI or shared files: rte_acl only needs its
  // memory.  One lcore: the work runs on the pool's threads, not EAL's.
  const std::string main_lcore = std::to_string(allowed[0]);
  const char *eal_args[] = {argv[0], "-l", main_lcore.c_str(), "--no-huge", "--no-pci", "--no-shconf",
                            "-m", "512", "--log-level=error", "--no-telemetry"};
  if (rte_eal_init(sizeof eal_args / sizeof *eal_args, const_cast<char **>(eal_args)) < 0) {
    std::fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
    return 1;
  }
  int rc = 1;
  try {
    // The evidence for pinning each worker: what EAL left the main thread,
    // and what a thread started now inherits.
    std::vector<int> inherited;
    std::thread([&inherited] { inherited = peers::allowed_cpus(); }).join();
    std::printf("CPUs allowed before rte_eal_init: %s (%zu); main thread after it: %s; "
                "a std::thread started after it inherits: %s\n",
                peers::cpu_list(allowed).c_str(), allowed.size(), peers::cpu_list(peers::allowed_cpus()).c_str(),
                peers::cpu_list(inherited).c_str());
    // The main thread only coordinates and starts dpdk-test-acl, which
    // inherits its mask: give it the whole set back.
    if (!peers::set_allowed_cpus(allowed))
      std::printf("WARNING: cannot restore the main thread's CPUs: %s\n", std::strerror(errno));
    rc = run(opt, allowed);
  } catch (const std::exception &e) {
    std::fprintf(stderr, "gpupacket-cpu-peers: %s\n", e.what());
  }
  rte_eal_cleanup();
  return rc;
}
