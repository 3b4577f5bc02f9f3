// GPU suite: the packet core compiled by nvcc must produce records
// byte-identical to the CPU build, packet for packet, on every real capture
// and on generated hostile traffic, at several batch sizes and settings.
// Exits 77 (skipped) when no CUDA device is usable.
#include <cuda_runtime_api.h>
#include <arpa/inet.h>
#include <pcap/pcap.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "pcap_linktype.h"
#include "acl_rules.h"
#include "dpi_patterns.h"
#include "batch_builder.h"
#include "cpu_engine.h"
#include "device_flow_store.h"
#include "engine.h"
#include "flow_kernels.h"
#include "flow_meter.h"
#include "packet_kernels.h"
#include "traffic_gen.h"
#include "../unit/capture_file.h"
#include "../unit/random_patterns.h"

namespace {

constexpr int kSkip = 77;

using Packet = gpptest::CapturedPacket;

struct Capture {
  std::string name;
  uint32_t linktype;
  std::vector<Packet> packets;
};

#define CUDA_CHECK(call)                                                                       \
  do {                                                                                         \
    cudaError_t e_ = (call);                                                                   \
    if (e_ != cudaSuccess) {                                                                   \
      std::fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                      \
                   cudaGetErrorString(e_));                                                    \
      std::exit(1);                                                                            \
    }                                                                                          \
  } while (0)

template <typename T> struct DeviceBuffer {
  T *ptr = nullptr;
  explicit DeviceBuffer(size_t n) { CUDA_CHECK(cudaMalloc(reinterpret_cast<void **>(&ptr), n * sizeof(T) + 1)); }
  // A device copy of `host` (a rule or pattern blob).
  explicit DeviceBuffer(const std::vector<T> &host) : DeviceBuffer(host.size()) {
    CUDA_CHECK(cudaMemcpy(ptr, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice));
  }
  ~DeviceBuffer() { cudaFree(ptr); }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;
};

bool read_capture(const std::string &path, Capture &cap) {
  std::string error;
  if (!gpptest::read_pcap(path, &cap.linktype, &cap.packets, &error)) {
    std::fprintf(stderr, "%s: %s\n", path.c_str(), error.c_str());
    return false;
  }
  return true;
}

// Random traffic: plausible Ethernet / VLAN / IPv4 / IPv6 / L4 headers with
// random lengths, fields and payloads, then a share of it cut short or
// corrupted, so every parser path and error path runs on both builds.
std::vector<Packet> generate_traffic(size_t count, uint32_t seed) {
  std::mt19937 rng(seed);
  auto rnd = [&](uint32_t n) { return static_cast<uint32_t>(rng() % n); };
  std::vector<Packet> out;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t size = 1 + rnd(9000);
    std::vector<uint8_t> b(size);
    for (auto &x : b) x = static_cast<uint8_t>(rng());
    size_t off = 12;
    auto put16 = [&](size_t at, uint16_t v) {
      if (at + 1 < b.size()) {
        b[at] = v >> 8;
        b[at + 1] = v & 0xff;
      }
    };
    for (uint32_t tags = rnd(4); tags > 0; --tags, off += 4) put16(off, rnd(2) ? 0x8100 : 0x88a8);
    const bool v6 = rnd(2);
    put16(off, v6 ? 0x86dd : 0x0800);
    off += 2;
    const uint8_t protos[] = {6, 17, 1, 58, 0, 44, 43, 60, 51, 47};
    const uint8_t proto = protos[rnd(sizeof protos)];
    if (off + 40 < b.size()) {
      if (v6) {
        b[off] = 0x60;
        put16(off + 4, rnd(4) ? static_cast<uint16_t>(size - off - 40) : rnd(65536));
        b[off + 6] = proto;
        for (size_t e = off + 40; e + 8 < b.size() && e < off + 200; e += 8) b[e + 1] = 0;
      } else {
        b[off] = static_cast<uint8_t>(0x40 | (rnd(8) ? 5 : rnd(16)));
        put16(off + 2, rnd(4) ? static_cast<uint16_t>(size - off) : rnd(65536));
        put16(off + 6, rnd(3) ? 0 : rnd(65536));
        b[off + 9] = proto;
      }
    }
    uint32_t caplen = size;
    if (rnd(5) == 0) caplen = rnd(size + 1); // cut by a snap length
    b.resize(caplen);
    out.push_back({b, size});
  }
  return out;
}

gpp::CoreConfig make_config(bool verify, bool symmetric) {
  gpp::CoreConfig cfg{};
  std::memcpy(cfg.rss_key, gpp::kDefaultRssKey, sizeof cfg.rss_key);
  cfg.verify_l4_checksum = verify;
  cfg.symmetric_rss = symmetric;
  return cfg;
}

std::vector<uint8_t> build_batch(const Capture &cap, size_t first, size_t last) {
  return gpptest::batch_of(cap.linktype, cap.packets, first, last);
}

// The CPU's records of a whole capture (they do not depend on the batching),
// computed on every core: the realistic pattern sets make them the slow half.
// With cfg.decap, each packet's GppTunnelInfo into `tunnels`.
std::vector<GppResult> cpu_records(const Capture &cap, const gpp::CoreConfig &cfg,
                                   std::vector<GppTunnelInfo> *tunnels) {
  std::vector<GppResult> out(cap.packets.size());
  tunnels->assign(cfg.decap ? cap.packets.size() : 0, GppTunnelInfo{});
  constexpr size_t kPiece = 1024;
  const size_t pieces = (cap.packets.size() + kPiece - 1) / kPiece;
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t k; (k = next++) < pieces;) {
      const size_t first = k * kPiece, last = std::min(cap.packets.size(), first + kPiece);
      const std::vector<uint8_t> batch = build_batch(cap, first, last);
      const auto n = static_cast<uint32_t>(last - first);
      // The batch's results as the engine lays them out: records, then tunnels.
      std::vector<uint8_t> results(gpp::results_bytes(n, cfg));
      auto *records = reinterpret_cast<GppResult *>(results.data());
      gpp::process_batch_range(batch.data(), cfg, records, 0, n);
      std::copy(records, records + n, out.data() + first);
      if (cfg.decap) {
        const GppTunnelInfo *plane = gpp::tunnel_plane(records, n);
        std::copy(plane, plane + n, tunnels->data() + first);
      }
    }
  };
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < std::max(1u, std::thread::hardware_concurrency()); ++t)
    threads.emplace_back(work);
  work();
  for (auto &t : threads) t.join();
  return out;
}

// Runs one capture through the GPU at `batch_size` and compares with the
// CPU's records; returns mismatches.  `gpu_cfg` is the CPU's config `cfg`
// with the ACL and DPI blob pointers swapped for their device copies.
size_t compare(const Capture &cap, uint32_t batch_size, const std::vector<GppResult> &cpu,
               const std::vector<GppTunnelInfo> &cpu_tunnels, const gpp::CoreConfig &cfg,
               const gpp::CoreConfig &gpu_cfg, const char *what) {
  size_t mismatches = 0;
  for (size_t first = 0; first < cap.packets.size(); first += batch_size) {
    const size_t last = std::min(cap.packets.size(), first + batch_size);
    const std::vector<uint8_t> batch = build_batch(cap, first, last);
    const auto n = static_cast<uint32_t>(last - first);
    const size_t bytes = gpp::results_bytes(n, cfg);
    std::vector<uint8_t> results(bytes);
    const auto *gpu = reinterpret_cast<const GppResult *>(results.data());
    DeviceBuffer<uint8_t> d_batch(batch.size());
    DeviceBuffer<uint8_t> d_results(bytes);
    CUDA_CHECK(cudaMemcpy(d_batch.ptr, batch.data(), batch.size(), cudaMemcpyHostToDevice));
    CUDA_CHECK(gpp::launch_process_batch(d_batch.ptr, n, gpu_cfg, gpp::acl_tuple_count(cfg.acl),
                                         reinterpret_cast<GppResult *>(d_results.ptr), nullptr));
    CUDA_CHECK(cudaMemcpy(results.data(), d_results.ptr, bytes, cudaMemcpyDeviceToHost));
    for (uint32_t i = 0; i < n; ++i) {
      const bool tunnel_differs =
          cfg.decap && std::memcmp(&cpu_tunnels[first + i], gpp::tunnel_plane(gpu, n) + i,
                                   sizeof(GppTunnelInfo)) != 0;
      if (std::memcmp(&cpu[first + i], &gpu[i], sizeof(GppResult)) != 0 || tunnel_differs) {
        if (++mismatches <= 5)
          std::fprintf(stderr, "MISMATCH %s packet %zu (batch size %u, %s)\n", cap.name.c_str(),
                       first + i + 1, batch_size, what);
      }
    }
  }
  return mismatches;
}

// The host table's records and counters (`cpu`, `h`) against the device
// table's (`gpu`, `d`): mismatches, the first few printed.
size_t flow_mismatches_of(const std::string &name, uint32_t batch_size, const gpp::FlowCounters &h,
                          const gpp::FlowCounters &d, const std::vector<GppFlowRecord> &cpu,
                          const std::vector<GppFlowRecord> &gpu, size_t *flows_out) {
  size_t mismatches = 0;
  if (gpu.size() != cpu.size() || h.flows_created != d.flows_created ||
      h.packets_untracked != d.packets_untracked || h.flows_evicted != d.flows_evicted ||
      h.packets_not_ip != d.packets_not_ip) {
    std::fprintf(stderr,
                 "FLOWS %s (batch size %u): GPU %zu records (%llu created, %llu evicted, %llu "
                 "untracked packets), CPU %zu (%llu, %llu, %llu)\n",
                 name.c_str(), batch_size, gpu.size(), (unsigned long long)d.flows_created,
                 (unsigned long long)d.flows_evicted, (unsigned long long)d.packets_untracked,
                 cpu.size(), (unsigned long long)h.flows_created,
                 (unsigned long long)h.flows_evicted, (unsigned long long)h.packets_untracked);
    ++mismatches;
  }
  for (size_t i = 0; i < std::min(gpu.size(), cpu.size()); ++i)
    if (std::memcmp(&gpu[i], &cpu[i], sizeof(GppFlowRecord)) != 0 && ++mismatches <= 5)
      std::fprintf(stderr, "FLOW MISMATCH %s: record %zu, flow of packet %llu (batch size %u)\n",
                   name.c_str(), i, (unsigned long long)cpu[i].first_packet, batch_size);
  *flows_out += cpu.size();
  return mismatches;
}

// Flow records of `records` counted `batch_size` at a time by a flow table
// in device memory (gpu/device_flow_store.h: the update kernels, sweeps as
// kernels) and by one in host memory, with the same FlowMeter policy, swept
// after every batch and flushed at the end: the two record streams must be
// byte-identical, in the same order.  Returns mismatches (records, or
// different counters).
size_t compare_flows(const std::string &name, const std::vector<GppResult> &records,
                     uint32_t batch_size, uint32_t max_flows, size_t *flows_out) {
  gpp::FlowSettings settings;
  settings.max_flows = max_flows;
  settings.threads = std::max(1u, std::thread::hardware_concurrency());
  gpp::FlowMeter host(settings);
  std::string error;
  auto store = gpp::make_device_flow_store(0, gpp::flow_table_slots(max_flows), &error);
  if (!store) {
    std::fprintf(stderr, "FLOWS %s: %s\n", name.c_str(), error.c_str());
    return 1;
  }
  auto *device_store = dynamic_cast<gpp::DeviceFlowStore *>(store.get());
  gpp::FlowMeter device(settings, std::move(store));
  // Batches take turns on three streams, as an engine's slots do: updates
  // of consecutive batches run at the same time, and a sweep waits for all.
  constexpr int kStreams = 3;
  cudaStream_t streams[kStreams];
  std::vector<std::unique_ptr<DeviceBuffer<GppResult>>> d_records;
  for (int k = 0; k < kStreams; ++k) {
    CUDA_CHECK(cudaStreamCreate(&streams[k]));
    d_records.push_back(std::make_unique<DeviceBuffer<GppResult>>(batch_size));
  }
  std::vector<GppFlowRecord> cpu, gpu;
  bool failed = false;
  size_t batch = 0;
  for (size_t first = 0; first < records.size() && !failed; first += batch_size, ++batch) {
    const auto n = static_cast<uint32_t>(std::min<size_t>(batch_size, records.size() - first));
    host.add(records.data() + first, n);
    host.sweep(cpu);
    cudaStream_t stream = streams[batch % kStreams];
    GppResult *d = d_records[batch % kStreams]->ptr;
    // This stream's previous update must be done reading its buffer.
    CUDA_CHECK(cudaStreamSynchronize(stream));
    CUDA_CHECK(cudaMemcpyAsync(d, records.data() + first, n * sizeof(GppResult),
                               cudaMemcpyHostToDevice, stream));
    CUDA_CHECK(device_store->update_on(stream, d, n));
    uint64_t latest = 0;
    for (uint32_t i = 0; i < n; ++i) latest = std::max(latest, records[first + i].timestamp_ns);
    device.added(n, latest);
    failed = !device.sweep(gpu, &error);
  }
  host.flush(cpu);
  const bool flushed = !failed && device.flush(gpu, &error);
  for (cudaStream_t st : streams) {
    CUDA_CHECK(cudaStreamSynchronize(st));
    CUDA_CHECK(cudaStreamDestroy(st));
  }
  if (!flushed) {
    std::fprintf(stderr, "FLOWS %s: %s\n", name.c_str(), error.c_str());
    return 1;
  }
  return flow_mismatches_of(name, batch_size, host.counters(), device.counters(), cpu, gpu,
                            flows_out);
}

// The same comparison with the batches going through an engine of `mode`
// that leaves its records on the device (EngineSettings::records_to_host
// false, the bench's "flows only"): the batch kernel's own counting is then
// the only output, and must give the host table's records.
size_t compare_engine_flows(const Capture &cap, const std::vector<GppResult> &records,
                            gpp::Mode mode, uint32_t batch_size, uint32_t max_flows,
                            size_t *flows_out) {
  const std::string name = cap.name + " (" + gpp::mode_name(mode) + ", flows only)";
  gpp::FlowSettings settings;
  settings.max_flows = max_flows;
  settings.threads = std::max(1u, std::thread::hardware_concurrency());
  gpp::FlowMeter host(settings);
  std::string error;
  gpp::EngineSettings es;
  es.records_to_host = false;
  // Destroyed in reverse: the engine (batches in flight, the table attached)
  // before the arena its batches are in and the table.
  std::unique_ptr<gpp::FlowMeter> device;
  std::unique_ptr<gpp::HostArena> arena;
  std::unique_ptr<gpp::Engine> engine;
  auto fail = [&](const char *what) {
    std::fprintf(stderr, "FLOWS %s: %s: %s\n", name.c_str(), what, error.c_str());
    return size_t{1};
  };
  auto store = gpp::make_device_flow_store(0, gpp::flow_table_slots(max_flows), &error);
  if (!store) return fail("device table");
  device = std::make_unique<gpp::FlowMeter>(settings, std::move(store));
  engine = gpp::make_engine(mode, es, &error);
  if (!engine) return fail("engine");
  if (!engine->attach_flows(&device->store())) return fail("attach_flows refused the table");
  const unsigned slots = engine->slots();
  size_t largest = 0;
  for (size_t first = 0; first < cap.packets.size(); first += batch_size) {
    size_t bytes = gpp_batch_data_start(batch_size);
    for (size_t i = first; i < std::min(cap.packets.size(), first + batch_size); ++i)
      bytes += cap.packets[i].bytes.size() + 16;
    largest = std::max(largest, bytes);
  }
  arena = gpp::make_host_arena(0, slots * (largest + 4096), gpp::HostMemoryKind::Default, &error);
  if (!arena) return fail("pinned batches");
  std::vector<uint8_t *> slot_batch;
  for (unsigned k = 0; k < slots; ++k) {
    slot_batch.push_back(static_cast<uint8_t *>(arena->allocate(largest)));
    if (!slot_batch.back()) return fail("pinned batches: arena too small");
  }
  std::vector<GppFlowRecord> cpu, gpu;
  size_t submitted = 0, completed = 0;
  for (size_t first = 0; first < cap.packets.size(); first += batch_size, ++submitted) {
    const size_t last = std::min(cap.packets.size(), first + batch_size);
    const auto n = static_cast<uint32_t>(last - first);
    host.add(records.data() + first, n);
    host.sweep(cpu);
    // Every slot busy: the oldest batch must be done before its buffer is reused.
    if (submitted - completed == slots) {
      if (!engine->wait_oldest(&error)) return fail("wait_oldest");
      ++completed;
    }
    const std::vector<uint8_t> batch = build_batch(cap, first, last);
    uint8_t *pinned = slot_batch[submitted % slots];
    std::memcpy(pinned, batch.data(), batch.size());
    gpp::CoreConfig cfg = make_config(false, false);
    if (!engine->submit(pinned, batch.size(), n, cfg, nullptr, &error)) return fail("submit");
    uint64_t latest = 0;
    for (size_t i = first; i < last; ++i) latest = std::max(latest, records[i].timestamp_ns);
    device->added(n, latest);
    if (!device->sweep(gpu, &error)) return fail("sweep");
  }
  for (; completed < submitted; ++completed)
    if (!engine->wait_oldest(&error)) return fail("wait_oldest");
  host.flush(cpu);
  if (!device->flush(gpu, &error)) return fail("flush");
  engine.reset(); // before its table
  const size_t mismatches = flow_mismatches_of(name, batch_size, host.counters(),
                                               device->counters(), cpu, gpu, flows_out);
  std::printf("%s: %zu flow records, %zu mismatching\n", name.c_str(), gpu.size(), mismatches);
  return mismatches;
}

// Rules drawn from the traffic itself, IPv4 and IPv6, so the IPv6 path of
// the ACL (no ClassBench file has IPv6 rules) gets real hits: every 37th
// parsed IPv4 packet and every 5th IPv6 one yield a rule around its
// addresses (random prefix lengths) and ports (exact, a range or any), in
// random order with random actions.
std::string rules_from_traffic(const std::vector<Capture> &captures) {
  std::mt19937 rng(2026);
  std::vector<std::string> lines;
  gpp::CoreConfig cfg = make_config(false, false);
  gpp::BatchBuilder builder;
  size_t seen = 0;
  for (const Capture &cap : captures) {
    builder.reset(cap.linktype);
    for (size_t i = 0; i < cap.packets.size(); ++i)
      builder.add(cap.packets[i].bytes.data(), static_cast<uint32_t>(cap.packets[i].bytes.size()),
                  cap.packets[i].wirelen, 0, i + 1);
    const std::vector<uint8_t> batch = builder.finish();
    std::vector<GppResult> records(builder.packet_count());
    gpp::process_batch_range(batch.data(), cfg, records.data(), 0, builder.packet_count());
    for (const GppResult &r : records) {
      if (!(r.ip_flags & GPP_IP_HEADER_PARSED)) continue;
      const bool v6 = r.ip_version == 6;
      if (seen++ % (v6 ? 5 : 37)) continue;
      char src[INET6_ADDRSTRLEN], dst[INET6_ADDRSTRLEN];
      inet_ntop(v6 ? AF_INET6 : AF_INET, r.src, src, sizeof src);
      inet_ntop(v6 ? AF_INET6 : AF_INET, r.dst, dst, sizeof dst);
      // Mostly long prefixes (a hit means something), some short ones.
      const unsigned bits = v6 ? 128 : 32;
      auto prefix = [&] { return rng() % 8 ? bits / 2 + rng() % (bits / 2 + 1) : rng() % (bits + 1); };
      auto ports = [&](uint16_t p) {
        const unsigned kind = rng() % 3;
        const unsigned lo = kind == 0 ? p : kind == 1 ? p / 2 : 0;
        const unsigned hi = kind == 0 ? p : kind == 1 ? std::min(65535u, p * 2u) : 65535u;
        return std::to_string(lo) + " : " + std::to_string(hi);
      };
      std::ostringstream line;
      line << "@" << src << "/" << prefix() << "\t" << dst << "/" << prefix() << "\t"
           << ports(r.sport) << "\t" << ports(r.dport) << "\t"
           << (rng() % 2 ? std::to_string(r.l4_proto) + "/0xff" : std::string("0/0"))
           << (rng() % 2 ? " allow" : " drop");
      lines.push_back(line.str());
    }
  }
  std::shuffle(lines.begin(), lines.end(), rng);
  std::string text;
  for (const std::string &l : lines) text += l + "\n";
  return text;
}

// Random pattern and rule sets, the way tests/unit checks the CPU against
// brute force (random_patterns.h: 1-700 bytes from a small alphabet,
// nested, prefixes and suffixes of each other, runs like "aaaa", a nocase
// mix; random rules between a few hosts), here through the GPU's
// block-wide stages: each round's packets (IPv4 UDP and TCP between a few
// hosts, payloads built from the patterns) must get from the GPU, at several
// batch sizes, the CPU's records, and those must hold the brute-force
// matchers' answers (DpiPatternSet::naive_scan, AclRuleSet::first_match).
// Returns mismatches.
size_t compare_random_sets(int rounds, const std::vector<uint32_t> &batch_sizes) {
  std::mt19937 rng(2027);
  size_t mismatches = 0, packets = 0, dpi_hits = 0, acl_hits = 0;
  auto host = [&](unsigned k) { return std::array<uint8_t, 4>{10, 0, uint8_t(k / 4), uint8_t(k % 4 + 1)}; };
  for (int round = 0; round < rounds; ++round) {
    const gpptest::RandomPatterns random = gpptest::random_patterns(rng);
    const std::vector<std::string> &patterns = random.patterns;
    const std::string &dpi_text = random.text;
    std::string acl_text;
    const int rules = 1 + rng() % 2000;
    for (int k = 0; k < rules; ++k) {
      const auto s = host(rng() % 16), d = host(rng() % 16);
      const unsigned slo = rng() % 3 ? 0 : rng() % 2000, dlo = rng() % 2 ? 0 : rng() % 2000;
      const unsigned shi = slo + (rng() % 2 ? rng() % 100 : 65535 - slo);
      const unsigned dhi = dlo + (rng() % 2 ? rng() % 100 : 65535 - dlo);
      char line[160];
      std::snprintf(line, sizeof line, "@%u.%u.%u.%u/%u\t%u.%u.%u.%u/%u\t%u : %u\t%u : %u\t%s %s\n",
                    s[0], s[1], s[2], s[3], static_cast<unsigned>(16 + rng() % 17), d[0], d[1],
                    d[2], d[3], static_cast<unsigned>(16 + rng() % 17), slo, shi, dlo, dhi,
                    rng() % 3 == 0 ? "0/0" : rng() % 2 ? "6/0xff" : "17/0xff",
                    rng() % 2 ? "allow" : "drop");
      acl_text += line;
    }
    std::string error;
    auto dpi = gpp::parse_dpi_patterns(dpi_text, "random patterns", &error);
    auto acl = dpi ? gpp::parse_acl_rules(acl_text, "random rules", &error) : nullptr;
    if (!dpi || !acl) {
      std::fprintf(stderr, "RANDOM SETS round %d: %s\n", round, error.c_str());
      return mismatches + 1;
    }
    Capture cap;
    cap.name = "random-sets-" + std::to_string(round);
    cap.linktype = GPP_LINKTYPE_ETHERNET;
    for (int n = 0; n < 300; ++n) {
      std::string payload = gpptest::random_payload(rng, patterns, 1400);
      payload.resize(std::min<size_t>(payload.size(), 1400));
      const bool tcp = rng() % 2;
      const size_t l4 = tcp ? 20 : 8, ip_len = 20 + l4 + payload.size();
      std::vector<uint8_t> f(14 + ip_len, 0);
      f[12] = 0x08;
      uint8_t *ip = f.data() + 14;
      ip[0] = 0x45;
      ip[2] = uint8_t(ip_len >> 8);
      ip[3] = uint8_t(ip_len);
      ip[8] = 64;
      ip[9] = tcp ? 6 : 17;
      const auto s = host(rng() % 16), d = host(rng() % 16);
      std::memcpy(ip + 12, s.data(), 4);
      std::memcpy(ip + 16, d.data(), 4);
      uint8_t *l = ip + 20;
      const unsigned sport = rng() % 2100, dport = rng() % 2100;
      l[0] = uint8_t(sport >> 8), l[1] = uint8_t(sport), l[2] = uint8_t(dport >> 8), l[3] = uint8_t(dport);
      if (tcp) {
        l[12] = 5 << 4;
        l[13] = 0x18;
      } else {
        l[4] = uint8_t((8 + payload.size()) >> 8);
        l[5] = uint8_t(8 + payload.size());
      }
      std::memcpy(l + l4, payload.data(), payload.size());
      cap.packets.push_back({f, static_cast<uint32_t>(f.size())});
    }
    gpp::CoreConfig cfg = make_config(false, false);
    cfg.acl = acl->blob.data();
    cfg.acl_default_action = GPP_ACL_DROP;
    cfg.dpi = dpi->blob.data();
    std::vector<GppTunnelInfo> no_tunnels;
    const std::vector<GppResult> cpu = cpu_records(cap, cfg, &no_tunnels);
    for (size_t i = 0; i < cpu.size(); ++i) {
      const GppResult &r = cpu[i];
      int32_t id = -1;
      uint32_t hits = 0;
      if (r.payload_length)
        dpi->naive_scan(cap.packets[i].bytes.data() + r.payload_offset, r.payload_length, &id, &hits);
      const uint32_t first = acl->first_match(r);
      dpi_hits += hits > 0;
      acl_hits += first != gpp::kAclNoRule;
      if ((r.dpi_pattern != id || r.dpi_hits != hits ||
           static_cast<uint32_t>(r.acl_rule) != first) && ++mismatches <= 5)
        std::fprintf(stderr, "RANDOM SETS round %d packet %zu: CPU dpi %d/%u acl %d, brute force "
                             "dpi %d/%u acl %d\n", round, i, r.dpi_pattern, r.dpi_hits,
                     r.acl_rule, id, hits, static_cast<int>(first));
    }
    DeviceBuffer<uint8_t> d_acl(acl->blob), d_dpi(dpi->blob);
    gpp::CoreConfig gpu_cfg = cfg;
    gpu_cfg.acl = d_acl.ptr;
    gpu_cfg.dpi = d_dpi.ptr;
    for (uint32_t batch_size : batch_sizes)
      mismatches += compare(cap, batch_size, cpu, no_tunnels, cfg, gpu_cfg, "random sets");
    packets += cap.packets.size();
  }
  std::printf("random sets: %d rounds, %zu packets (%zu with DPI hits, %zu matching a rule), %zu "
              "mismatching (GPU vs CPU vs brute force)\n",
              rounds, packets, dpi_hits, acl_hits, mismatches);
  return mismatches;
}

} // namespace

int main(int argc, char **argv) {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("SKIP: no usable CUDA device\n");
    return kSkip;
  }
  if (argc < 2 || argc > 3 || (argc == 3 && std::strcmp(argv[2], "--quick") != 0)) {
    std::fprintf(stderr, "usage: %s PCAP_DIR [--quick]\n", argv[0]);
    return 2;
  }
  // --quick: one batch size and two settings, for runs under compute-sanitizer.
  const bool quick = argc == 3;
  const std::vector<uint32_t> batch_sizes =
      quick ? std::vector<uint32_t>{64} : std::vector<uint32_t>{1, 7, 64, 1000, 4096};
  // Bits: 1 verify-l4-checksum, 2 symmetric RSS, 4 ACL (ClassBench fw1 rules),
  // 256 decap=inner (VXLAN on 4789 and 8472) with the tunnel plane compared too,
  // 8 DPI (ET Open scan rules), 16 ACL from the traffic (IPv4 and IPv6; over 4),
  // 32 the realistic sets: ClassBench fw1 10k and ET Open 2024's fast
  // patterns (over 4 and 8); 64 the other realistic ones: ClassBench acl1
  // 10k and every content of ET Open 2024; 128 ClassBench ipc1 10k (over
  // 4 and 16).
  const std::vector<int> variants =
      quick ? std::vector<int>{0, 15, 16, 32, 256 + 15}
            : std::vector<int>{0, 1, 2, 3, 4, 8, 15, 16, 27, 32, 35, 64, 128, 256, 256 + 15, 256 + 35};
  std::string acl_error;
  const std::string acl_path = std::string(argv[1]) + "/../acl/classbench_fw1_1k.rules";
  auto acl = gpp::load_acl_rules(acl_path, &acl_error);
  if (!acl) {
    std::fprintf(stderr, "%s\n", acl_error.c_str());
    return 1;
  }
  DeviceBuffer<uint8_t> d_acl(acl->blob);
  std::string dpi_error;
  auto dpi = gpp::load_dpi_patterns(std::string(argv[1]) + "/../dpi/et_open_emerging-scan.rules",
                                    &dpi_error);
  if (!dpi) {
    std::fprintf(stderr, "%s\n", dpi_error.c_str());
    return 1;
  }
  DeviceBuffer<uint8_t> d_dpi(dpi->blob);
  auto big_acl = gpp::load_acl_rules(std::string(argv[1]) + "/../acl/classbench_fw1_10k.rules",
                                     &acl_error);
  auto big_dpi = gpp::load_dpi_patterns(std::string(argv[1]) + "/../dpi/et_open_2024", &dpi_error,
                                        gpp::DpiSelect::FastPattern);
  if (!big_acl || !big_dpi) {
    std::fprintf(stderr, "%s\n", (big_acl ? dpi_error : acl_error).c_str());
    return 1;
  }
  auto acl1_10k = gpp::load_acl_rules(std::string(argv[1]) + "/../acl/classbench_acl1_10k.rules",
                                      &acl_error);
  auto ipc1_10k = acl1_10k ? gpp::load_acl_rules(std::string(argv[1]) +
                                                     "/../acl/classbench_ipc1_10k.rules",
                                                 &acl_error)
                           : nullptr;
  auto all_dpi = gpp::load_dpi_patterns(std::string(argv[1]) + "/../dpi/et_open_2024", &dpi_error);
  if (!acl1_10k || !ipc1_10k || !all_dpi) {
    std::fprintf(stderr, "%s\n", (all_dpi ? acl_error : dpi_error).c_str());
    return 1;
  }
  DeviceBuffer<uint8_t> d_acl1_10k(acl1_10k->blob), d_ipc1_10k(ipc1_10k->blob),
      d_all_dpi(all_dpi->blob), d_big_acl(big_acl->blob), d_big_dpi(big_dpi->blob);
  std::vector<Capture> captures;
  // The real captures, and the tunnelled ones beside them (decap's cases).
  for (const std::string &folder : {std::string(argv[1]), std::string(argv[1]) + "/../pcap-tunnels"}) {
    DIR *dir = opendir(folder.c_str());
    if (!dir) {
      std::fprintf(stderr, "cannot read %s\n", folder.c_str());
      return 1;
    }
    while (dirent *e = readdir(dir)) {
      std::string name = e->d_name;
      if (name.size() > 5 && (name.rfind(".pcap") == name.size() - 5 ||
                              name.rfind(".pcapng") == name.size() - 7)) {
        Capture cap;
        cap.name = name;
        if (!read_capture(folder + "/" + name, cap)) return 1;
        captures.push_back(std::move(cap));
      }
    }
    closedir(dir);
  }
  if (captures.empty()) {
    std::fprintf(stderr, "no captures in %s\n", argv[1]);
    return 1;
  }
  const uint32_t generated_linktypes[] = {GPP_LINKTYPE_ETHERNET, GPP_LINKTYPE_RAW,
                                          GPP_LINKTYPE_LINUX_SLL};
  for (uint32_t lt : generated_linktypes) {
    Capture gen;
    gen.name = "generated-linktype-" + std::to_string(lt);
    gen.linktype = lt;
    gen.packets = generate_traffic(quick ? 2000 : 20000, 7 + lt);
    captures.push_back(std::move(gen));
  }

  auto traffic_acl = gpp::parse_acl_rules(rules_from_traffic(captures), "rules from traffic",
                                         &acl_error);
  if (!traffic_acl) {
    std::fprintf(stderr, "%s\n", acl_error.c_str());
    return 1;
  }
  size_t v6_rules = 0;
  for (const auto &rule : traffic_acl->rules) v6_rules += rule.ip_version == 6;
  std::printf("rules from traffic: %zu (%zu IPv6)\n", traffic_acl->rules.size(), v6_rules);
  if (v6_rules == 0) {
    std::fprintf(stderr, "no IPv6 rules came from the traffic\n");
    return 1;
  }
  DeviceBuffer<uint8_t> d_traffic_acl(traffic_acl->blob);

  size_t packets = 0, mismatches = 0, runs = 0;
  size_t flow_mismatches = 0, flows = 0, flow_runs = 0;
  for (const Capture &cap : captures) {
    packets += cap.packets.size();
    for (int variant : variants) {
      {
        gpp::CoreConfig cfg = make_config(variant & 1, variant & 2);
        if (variant & 256) {
          cfg.decap = 1;
          cfg.vxlan_ports[0] = gpp::kVxlanPort;
          cfg.vxlan_ports[1] = 8472;
        }
        gpp::CoreConfig gpu_cfg = cfg;
        // A set on the CPU, its device copy on the GPU.
        auto use_acl = [&](const gpp::AclRuleSet &set, const uint8_t *device, uint8_t action) {
          cfg.acl = set.blob.data();
          gpu_cfg.acl = device;
          cfg.acl_default_action = gpu_cfg.acl_default_action = action;
        };
        auto use_dpi = [&](const gpp::DpiPatternSet &set, const uint8_t *device) {
          cfg.dpi = set.blob.data();
          gpu_cfg.dpi = device;
        };
        if (variant & 4) use_acl(*acl, d_acl.ptr, GPP_ACL_DROP);
        if (variant & 8) use_dpi(*dpi, d_dpi.ptr);
        if (variant & 16) use_acl(*traffic_acl, d_traffic_acl.ptr, GPP_ACL_ALLOW);
        if (variant & 32) {
          use_acl(*big_acl, d_big_acl.ptr, GPP_ACL_DROP);
          use_dpi(*big_dpi, d_big_dpi.ptr);
        }
        if (variant & 64) {
          use_acl(*acl1_10k, d_acl1_10k.ptr, GPP_ACL_DROP);
          use_dpi(*all_dpi, d_all_dpi.ptr);
        }
        if (variant & 128) use_acl(*ipc1_10k, d_ipc1_10k.ptr, GPP_ACL_ALLOW);
        char what[64];
        std::snprintf(what, sizeof what, "settings %d", variant);
        std::vector<GppTunnelInfo> cpu_tunnels;
        const std::vector<GppResult> cpu = cpu_records(cap, cfg, &cpu_tunnels);
        for (uint32_t batch_size : batch_sizes) {
          mismatches += compare(cap, batch_size, cpu, cpu_tunnels, cfg, gpu_cfg, what);
          ++runs;
        }
        // Flows over the records with ACL and DPI results (the GPU's are
        // the CPU's, as just compared), one packet per batch and 4096.
        if (variant == 15)
          for (uint32_t batch_size : {1u, 4096u}) {
            if (quick && batch_size == 1) continue;
            flow_mismatches += compare_flows(cap.name, cpu, batch_size, 1u << 16, &flows);
            ++flow_runs;
          }
      }
    }
  }
  std::printf("%zu captures (%zu packets), %zu runs (%zu batch sizes x %zu settings): %zu "
              "mismatching records\n", captures.size(), packets, runs, batch_sizes.size(),
              variants.size(), mismatches);
  mismatches += compare_random_sets(quick ? 3 : 40, quick ? std::vector<uint32_t>{64}
                                                          : std::vector<uint32_t>{1, 7, 64, 300});
  // Flows at scale: generated traffic over 1.2 million flows (64-byte
  // frames), 4096-packet batches.
  if (!quick) {
    gpp::TrafficSpec spec;
    spec.profile = gpp::TrafficProfile::Small;
    spec.flows = 1200000;
    spec.seed = 5;
    gpp::TrafficGenerator gen(spec);
    Capture big;
    big.name = "generated-1.2M-flows";
    big.linktype = GPP_LINKTYPE_ETHERNET;
    for (int i = 0; i < 4000000; ++i) {
      const std::vector<uint8_t> &frame = gen.next();
      big.packets.push_back({frame, static_cast<uint32_t>(frame.size())});
    }
    std::vector<GppTunnelInfo> no_tunnels;
    const std::vector<GppResult> records = cpu_records(big, make_config(false, false), &no_tunnels);
    const size_t before = flows;
    flow_mismatches += compare_flows(big.name, records, 4096, 2000000, &flows);
    ++flow_runs;
    std::printf("%s: %zu packets, %zu flows\n", big.name.c_str(), records.size(), flows - before);
    // The same in a table for 300,000 flows: it fills, evicts the oldest
    // (found on the device, cut on the host) and rebuilds, every few batches.
    const size_t before_small = flows;
    flow_mismatches += compare_flows(big.name + " (flow-max 300000)", records, 4096, 300000, &flows);
    ++flow_runs;
    std::printf("%s in a table for 300,000: %zu flow records\n", big.name.c_str(),
                flows - before_small);
    // Engines that leave their records on the device: the table is all.
    for (gpp::Mode mode : {gpp::Mode::Streams, gpp::Mode::ZeroCopy, gpp::Mode::Graph}) {
      flow_mismatches += compare_engine_flows(big, records, mode, 4096, 2000000, &flows);
      ++flow_runs;
    }
  }
  std::printf("flows: %zu runs, %zu flow records compared, %zu mismatching\n", flow_runs, flows,
              flow_mismatches);
  return mismatches == 0 && flow_mismatches == 0 ? 0 : 1;
}
