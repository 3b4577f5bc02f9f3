// gpupacket-cpu-peers: the field's CPU libraries on the same rules and traffic
// as gpupacket's classification stages, on all host cores, side by side:
// DPDK rte_acl against gpupacket's ACL, Hyperscan against its DPI.  Checks
// that both give the same answers on every packet, then prints a table of
// packets per second.  Needs no GPU; run on the GPU host for the report.
//
//   gpupacket-cpu-peers [--quick] [--threads N] [--csv FILE] DATA_DIR
//
// --csv FILE also runs gpupacket-bench's full workload (the derived 10k ACL
// set and the ET Open scan patterns, bench/workloads.h) on the bench's own
// traffic for each profile and writes one row per figure:
// profile,workload,item,threads,packets,mpps,differences.  Both libraries run
// on every packet, so their combined rate is 1 / (1/acl_pps + 1/hs_pps).
#include <arpa/inet.h>
#include <hs/hs.h>
#include <rte_acl.h>
#include <rte_eal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "acl_rules.h"
#include "dpi_patterns.h"
#include "packet_core.h"
#include "traffic_gen.h"
#include "workloads.h"

namespace {

// The rte_acl input: the IPv4 5-tuple in network byte order, grouped in
// 4-byte words as rte_acl wants (proto alone in the first word).
struct Tuple {
  uint8_t proto;
  uint8_t pad[3];
  uint32_t src, dst;
  uint16_t sport, dport;
};

enum { PROTO, SRC, DST, SPORT, DPORT, FIELDS };
RTE_ACL_RULE_DEF(AclRule4, FIELDS);

rte_acl_field_def field_defs[FIELDS] = {
    {RTE_ACL_FIELD_TYPE_BITMASK, sizeof(uint8_t), PROTO, 0, offsetof(Tuple, proto)},
    {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), SRC, 1, offsetof(Tuple, src)},
    {RTE_ACL_FIELD_TYPE_MASK, sizeof(uint32_t), DST, 2, offsetof(Tuple, dst)},
    {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), SPORT, 3, offsetof(Tuple, sport)},
    {RTE_ACL_FIELD_TYPE_RANGE, sizeof(uint16_t), DPORT, 3, offsetof(Tuple, dport)},
};

uint32_t load32(const uint8_t *p) { return (p[0] << 24) | (p[1] << 16) | (p[2] << 8) | p[3]; }

// Runs work(first, last) over [0, n) on `threads` threads; returns seconds.
double parallel(unsigned threads, size_t n, const std::function<void(size_t, size_t)> &work) {
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < threads; ++t)
    pool.emplace_back([&, t] { work(n * t / threads, n * (t + 1) / threads); });
  for (auto &th : pool) th.join();
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Tuple tuple_of(const GppResult &r) {
  const bool ports = (r.l4_proto == 6 || r.l4_proto == 17) && (r.ip_flags & GPP_IP_L4_PARSED);
  return Tuple{r.l4_proto, {}, htonl(load32(r.src)), htonl(load32(r.dst)),
               htons(ports ? r.sport : 0), htons(ports ? r.dport : 0)};
}

// An rte_acl context with the IPv4 rules of `acl`; first match = highest priority.
rte_acl_ctx *build_rte_acl(const gpp::AclRuleSet &acl, const char *name) {
  rte_acl_param param{};
  param.name = name;
  param.socket_id = SOCKET_ID_ANY;
  param.rule_size = RTE_ACL_RULE_SZ(FIELDS);
  param.max_rule_num = static_cast<uint32_t>(acl.rules.size());
  rte_acl_ctx *ctx = rte_acl_create(&param);
  std::vector<AclRule4> rules;
  for (size_t i = 0; i < acl.rules.size(); ++i) {
    const gpp::ParsedAclRule &p = acl.rules[i];
    if (p.ip_version != 4) continue;
    AclRule4 r{};
    r.data.category_mask = 1;
    r.data.priority = RTE_ACL_MAX_PRIORITY - static_cast<int32_t>(i);
    r.data.userdata = static_cast<uint32_t>(i + 1);
    r.field[PROTO].value.u8 = p.proto;
    r.field[PROTO].mask_range.u8 = p.proto_mask;
    r.field[SRC].value.u32 = load32(p.src);
    r.field[SRC].mask_range.u32 = p.src_len;
    r.field[DST].value.u32 = load32(p.dst);
    r.field[DST].mask_range.u32 = p.dst_len;
    r.field[SPORT].value.u16 = p.sport_lo;
    r.field[SPORT].mask_range.u16 = p.sport_hi;
    r.field[DPORT].value.u16 = p.dport_lo;
    r.field[DPORT].mask_range.u16 = p.dport_hi;
    rules.push_back(r);
  }
  rte_acl_config build{};
  build.num_categories = 1;
  build.num_fields = FIELDS;
  std::memcpy(build.defs, field_defs, sizeof field_defs);
  if (!ctx || rte_acl_add_rules(ctx, reinterpret_cast<rte_acl_rule *>(rules.data()),
                                static_cast<uint32_t>(rules.size())) != 0 ||
      rte_acl_build(ctx, &build) != 0) {
    if (ctx) rte_acl_free(ctx);
    return nullptr;
  }
  return ctx;
}

// rte_acl over `tuples` on `threads` threads, 64 at a time; answers into `out`.
double time_rte_acl(rte_acl_ctx *ctx, const std::vector<Tuple> &tuples, unsigned threads,
                    std::vector<uint32_t> *out) {
  std::vector<const uint8_t *> inputs(tuples.size());
  for (size_t i = 0; i < tuples.size(); ++i) inputs[i] = reinterpret_cast<const uint8_t *>(&tuples[i]);
  out->assign(tuples.size(), 0);
  return parallel(threads, tuples.size(), [&](size_t a, size_t b) {
    for (size_t i = a; i < b; i += 64)
      rte_acl_classify(ctx, inputs.data() + i, out->data() + i,
                       static_cast<uint32_t>(std::min<size_t>(64, b - i)), 1);
  });
}

// Hyperscan over the L4 payloads on `threads` threads; occurrence counts into `hits`.
double time_hyperscan(const hs_database_t *db, const std::vector<std::vector<uint8_t>> &frames,
                      const std::vector<GppResult> &parsed, unsigned threads,
                      std::vector<uint32_t> *hits) {
  hits->assign(frames.size(), 0);
  return parallel(threads, frames.size(), [&](size_t a, size_t b) {
    hs_scratch_t *scratch = nullptr;
    hs_alloc_scratch(db, &scratch);
    for (size_t i = a; i < b; ++i) {
      const GppResult &r = parsed[i];
      uint32_t count = 0;
      hs_scan(db, reinterpret_cast<const char *>(frames[i].data()) + r.payload_offset,
              r.payload_length, 0, scratch,
              [](unsigned, unsigned long long, unsigned long long, unsigned, void *c) {
                ++*static_cast<uint32_t *>(c);
                return 0;
              },
              &count);
      (*hits)[i] = count;
    }
    hs_free_scratch(scratch);
  });
}

// The ACL rule numbers rte_acl reports (1-based, 0 = none) from ours.
uint32_t as_userdata(uint32_t ours) { return ours == gpp::kAclNoRule ? 0 : ours + 1; }

// gpupacket-bench's full workload on its traffic, per profile, into `csv`.
bool full_workload_csv(const std::string &data, const hs_database_t *db, unsigned threads,
                       bool quick, const std::string &path) {
  gppbench::RuleSets sets;
  std::string error;
  if (!gppbench::load_rule_sets(data, &sets, &error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return false;
  }
  rte_acl_ctx *ctx = build_rte_acl(*sets.acl10k, "gpupacket-peers-10k");
  if (!ctx) {
    std::fprintf(stderr, "rte_acl setup (10k rules) failed\n");
    return false;
  }
  FILE *csv = std::fopen(path.c_str(), "w");
  if (!csv) {
    std::fprintf(stderr, "%s: cannot write\n", path.c_str());
    rte_acl_free(ctx);
    return false;
  }
  std::fprintf(csv, "profile,workload,item,threads,packets,mpps,differences\n");
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
  bool agree = true;
  std::printf("\nFull workload (derived 10k ACL + ET Open scan), gpupacket-bench traffic, %u threads\n",
              threads);
  std::printf("%-8s %10s %14s %14s %16s %s\n", "profile", "packets", "rte_acl Mpps",
              "Hyperscan Mpps", "combined Mpps", "differences (acl / dpi)");
  uint32_t seed = 1;
  for (const gppbench::Profile &p : gppbench::profiles()) {
    const size_t packets = quick ? 4000 : p.traffic == gpp::TrafficProfile::Small ? 400000 : 100000;
    const auto frames = gppbench::make_traffic(sets, p.traffic, packets, seed++);
    std::vector<GppResult> parsed(packets);
    std::vector<Tuple> tuples(packets);
    for (size_t i = 0; i < packets; ++i) {
      gpp::process_packet(frames[i].data(), static_cast<uint32_t>(frames[i].size()),
                          static_cast<uint32_t>(frames[i].size()), GPP_LINKTYPE_ETHERNET, i + 1, 0,
                          cfg, parsed[i]);
      tuples[i] = tuple_of(parsed[i]);
    }
    std::vector<uint32_t> acl_answers, hs_hits;
    const double t_acl = time_rte_acl(ctx, tuples, threads, &acl_answers);
    const double t_hs = time_hyperscan(db, frames, parsed, threads, &hs_hits);
    size_t acl_diff = 0, dpi_diff = 0;
    for (size_t i = 0; i < packets; ++i) {
      acl_diff += as_userdata(gpp::acl_classify(sets.acl10k->blob.data(), parsed[i])) != acl_answers[i];
      GppResult r = parsed[i];
      gpp::dpi_scan(sets.dpi->blob.data(), frames[i].data() + r.payload_offset, r.payload_length, r);
      dpi_diff += r.dpi_hits != hs_hits[i];
    }
    agree = agree && acl_diff == 0 && dpi_diff == 0;
    const double acl_mpps = packets / t_acl / 1e6, hs_mpps = packets / t_hs / 1e6;
    const double combined = 1 / (1 / acl_mpps + 1 / hs_mpps);
    std::fprintf(csv, "%s,full,rte_acl,%u,%zu,%.6g,%zu\n", p.name, threads, packets, acl_mpps, acl_diff);
    std::fprintf(csv, "%s,full,hyperscan,%u,%zu,%.6g,%zu\n", p.name, threads, packets, hs_mpps, dpi_diff);
    std::fprintf(csv, "%s,full,rte_acl+hyperscan,%u,%zu,%.6g,%zu\n", p.name, threads, packets,
                 combined, acl_diff + dpi_diff);
    std::printf("%-8s %10zu %14.2f %14.2f %16.2f %zu / %zu\n", p.name, packets, acl_mpps, hs_mpps,
                combined, acl_diff, dpi_diff);
  }
  const bool written = std::fclose(csv) == 0;
  rte_acl_free(ctx);
  if (!written) std::fprintf(stderr, "%s: write failed\n", path.c_str());
  return written && agree;
}

} // namespace

int main(int argc, char **argv) {
  bool quick = false;
  unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  std::string data, csv_path;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--quick") quick = true;
    else if (a == "--csv" && i + 1 < argc) csv_path = argv[++i];
    else if (a == "--threads" && i + 1 < argc) threads = std::max(1, std::atoi(argv[++i]));
    else data = a;
  }
  if (data.empty()) {
    std::fprintf(stderr, "usage: %s [--quick] [--threads N] [--csv FILE] DATA_DIR\n", argv[0]);
    return 2;
  }
  // EAL without hugepages, PCI or shared files: rte_acl only needs its memory.
  const char *eal_args[] = {argv[0], "--no-huge", "--no-pci", "--no-shconf", "-m", "512",
                            "--log-level=error", "--no-telemetry"};
  if (rte_eal_init(sizeof eal_args / sizeof *eal_args, const_cast<char **>(eal_args)) < 0) {
    std::fprintf(stderr, "rte_eal_init failed: %s\n", rte_strerror(rte_errno));
    return 1;
  }

  std::string error;
  auto acl = gpp::load_acl_rules(data + "/acl/classbench_acl1_1k.rules", &error);
  auto dpi = gpp::load_dpi_patterns(data + "/dpi/et_open_emerging-scan.rules", &error);
  if (!acl || !dpi) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }

  // Traffic: 64-byte IPv4 headers, half drawn from the rules; 1500-byte
  // payloads, half carrying a pattern.
  const size_t packets = quick ? 20000 : 1000000;
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
      gpp::process_packet(f.data(), static_cast<uint32_t>(f.size()), static_cast<uint32_t>(f.size()),
                          GPP_LINKTYPE_ETHERNET, i + 1, 0, cfg, parsed[i]);
      tuples[i] = tuple_of(parsed[i]);
    }
  }

  rte_acl_ctx *ctx = build_rte_acl(*acl, "gpupacket-peers");
  if (!ctx) {
    std::fprintf(stderr, "rte_acl setup failed\n");
    return 1;
  }

  // Answers first: both classifiers agree on every header.
  std::vector<uint32_t> theirs, ours(packets);
  const double t_rte = time_rte_acl(ctx, tuples, threads, &theirs);
  const double t_ours = parallel(threads, packets, [&](size_t a, size_t b) {
    for (size_t i = a; i < b; ++i) ours[i] = gpp::acl_classify(acl->blob.data(), parsed[i]);
  });
  size_t acl_diff = 0, matched = 0;
  for (size_t i = 0; i < packets; ++i) {
    const uint32_t mine = as_userdata(ours[i]);
    acl_diff += mine != theirs[i];
    matched += mine != 0;
  }

  // Hyperscan against the DPI automata on 1500-byte payloads.
  std::vector<std::vector<uint8_t>> frames;
  std::vector<GppResult> payload_parsed(quick ? 2000 : 100000);
  {
    gpp::TrafficSpec spec;
    spec.profile = gpp::TrafficProfile::Large;
    spec.dpi = dpi.get();
    spec.dpi_rate = 0.5;
    gpp::TrafficGenerator gen(spec);
    for (size_t i = 0; i < payload_parsed.size(); ++i) {
      frames.push_back(gen.next());
      gpp::process_packet(frames[i].data(), static_cast<uint32_t>(frames[i].size()),
                          static_cast<uint32_t>(frames[i].size()), GPP_LINKTYPE_ETHERNET, i + 1,
                          0, cfg, payload_parsed[i]);
    }
  }
  std::vector<const char *> exprs;
  std::vector<size_t> lens;
  std::vector<unsigned> flags, ids;
  for (size_t i = 0; i < dpi->patterns.size(); ++i) {
    exprs.push_back(dpi->patterns[i].bytes.data());
    lens.push_back(dpi->patterns[i].bytes.size());
    flags.push_back(dpi->patterns[i].nocase ? HS_FLAG_CASELESS : 0);
    ids.push_back(static_cast<unsigned>(i));
  }
  hs_database_t *db = nullptr;
  hs_compile_error_t *compile_error = nullptr;
  if (hs_compile_lit_multi(exprs.data(), flags.data(), ids.data(), lens.data(),
                           static_cast<unsigned>(exprs.size()), HS_MODE_BLOCK, nullptr, &db,
                           &compile_error) != HS_SUCCESS) {
    std::fprintf(stderr, "hyperscan: %s\n", compile_error->message);
    return 1;
  }
  std::vector<uint32_t> hs_hits, our_hits(frames.size());
  const double t_hs = time_hyperscan(db, frames, payload_parsed, threads, &hs_hits);
  const double t_dpi = parallel(threads, frames.size(), [&](size_t a, size_t b) {
    for (size_t i = a; i < b; ++i) {
      GppResult r = payload_parsed[i];
      gpp::dpi_scan(dpi->blob.data(), frames[i].data() + r.payload_offset, r.payload_length, r);
      our_hits[i] = r.dpi_hits;
    }
  });
  size_t dpi_diff = 0, with_hits = 0;
  for (size_t i = 0; i < frames.size(); ++i) {
    dpi_diff += hs_hits[i] != our_hits[i];
    with_hits += hs_hits[i] > 0;
  }

  std::printf("CPU peers, %u threads, ClassBench acl1 (%zu rules), ET Open scan (%zu patterns)\n",
              threads, acl->rules.size(), dpi->patterns.size());
  std::printf("%-34s %10s %12s %s\n", "classifier", "packets", "Mpps", "agreement");
  std::printf("%-34s %10zu %12.2f %s\n", "DPDK rte_acl (5-tuple, 64-wide)", packets,
              packets / t_rte / 1e6, "-");
  std::printf("%-34s %10zu %12.2f %zu differences, %zu matched\n", "gpupacket ACL (tuple space)",
              packets, packets / t_ours / 1e6, acl_diff, matched);
  std::printf("%-34s %10zu %12.2f %s\n", "Hyperscan (1500-byte payloads)", frames.size(),
              frames.size() / t_hs / 1e6, "-");
  std::printf("%-34s %10zu %12.2f %zu differences, %zu with hits\n", "gpupacket DPI (Aho-Corasick)",
              frames.size(), frames.size() / t_dpi / 1e6, dpi_diff, with_hits);
  const bool full_ok = csv_path.empty() || full_workload_csv(data, db, threads, quick, csv_path);
  hs_free_database(db);
  rte_acl_free(ctx);
  rte_eal_cleanup();
  return acl_diff == 0 && dpi_diff == 0 && full_ok ? 0 : 1;
}
